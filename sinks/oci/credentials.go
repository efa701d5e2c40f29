package oci

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"oras.land/oras-go/v2/registry/remote/auth"
	"oras.land/oras-go/v2/registry/remote/credentials"
)

// dockerConfig gives registry credentials from a docker config.json, read
// again whenever the file changes (a rotated token, a remounted Secret).
type dockerConfig struct {
	path string

	mu    sync.Mutex
	mod   time.Time
	size  int64
	store credentials.Store
}

func newDockerConfig(path string) (*dockerConfig, error) {
	d := &dockerConfig{path: path}
	if _, err := d.current(); err != nil {
		return nil, err
	}
	return d, nil
}

// current returns the store of the file as it is now.
func (d *dockerConfig) current() (credentials.Store, error) {
	fi, err := os.Stat(d.path)
	if err != nil {
		if pe, ok := errors.AsType[*os.PathError](err); ok {
			err = pe.Err // the path is named once, below
		}
		return nil, fmt.Errorf("dockerConfig %s: %w", d.path, err)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.store != nil && fi.ModTime().Equal(d.mod) && fi.Size() == d.size {
		return d.store, nil
	}
	st, err := credentials.NewStore(d.path, credentials.StoreOptions{})
	if err != nil {
		// The decoder's message may quote the file: name the file only.
		return nil, fmt.Errorf("dockerConfig %s: not a readable docker config.json", d.path)
	}
	d.store, d.mod, d.size = st, fi.ModTime(), fi.Size()
	return st, nil
}

// credential implements auth.CredentialFunc.
func (d *dockerConfig) credential(ctx context.Context, hostport string) (auth.Credential, error) {
	st, err := d.current()
	if err != nil {
		return auth.EmptyCredential, err
	}
	return credentials.Credential(st)(ctx, hostport)
}
