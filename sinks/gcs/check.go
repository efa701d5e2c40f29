package gcs

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"

	"cloud.google.com/go/storage"

	"github.com/bomstream/bomstream/sinks"
)

// CheckObjectPrefix is where Check writes its probe objects, under the
// sink's prefix; each is deleted again at once.
const CheckObjectPrefix = ".bomstream-check/"

// Check implements sinks.Checker. It does what an export does, on a small
// probe object of its own (never a BOM): create it with the create-only
// precondition, read its metadata, and delete it by generation. Each step
// proves one permission the sink needs; a failed step says what to grant.
func (s *Sink) Check(ctx context.Context) []sinks.Check {
	var rnd [8]byte
	_, _ = rand.Read(rnd[:])
	name := CheckObjectPrefix + s.name + "-" + hex.EncodeToString(rnd[:])
	if s.prefix != "" {
		name = s.prefix + "/" + name
	}
	obj := s.client.Bucket(s.bucket).Object(name)
	create := sinks.Check{Name: fmt.Sprintf("bucket %s exists and accepts new objects (storage.objects.create)", s.bucket)}
	read := sinks.Check{Name: fmt.Sprintf("objects in bucket %s can be read (storage.objects.get)", s.bucket)}
	del := sinks.Check{Name: fmt.Sprintf("objects in bucket %s can be replaced (storage.objects.delete)", s.bucket)}

	err := s.write(ctx, obj.If(storage.Conditions{DoesNotExist: true}), []byte("{}"), "application/json",
		map[string]string{"purpose": "bomstream sink preflight check; safe to delete"})
	if err != nil {
		create.Err = s.classify(err, opCreate, name)
		skipped := errors.New("not checked: the probe object could not be created")
		read.Err, del.Err = skipped, skipped
		return s.withSigner([]sinks.Check{create, read, del})
	}
	attrs, err := obj.Attrs(ctx)
	if err != nil {
		read.Err = s.classify(err, opRead, name)
		// Delete without knowing the generation: the probe is ours.
		if err := obj.Delete(ctx); err != nil {
			del.Err = s.classify(err, opDelete, name)
		}
		return s.withSigner([]sinks.Check{create, read, del})
	}
	if err := obj.Generation(attrs.Generation).If(storage.Conditions{GenerationMatch: attrs.Generation}).Delete(ctx); err != nil {
		del.Err = fmt.Errorf("%w (probe object gs://%s/%s left behind)", s.classify(err, opDelete, name), s.bucket, name)
	}
	return s.withSigner([]sinks.Check{create, read, del})
}

// withSigner adds the signing key's (or token's) check.
func (s *Sink) withSigner(cs []sinks.Check) []sinks.Check {
	if s.signer != nil {
		cs = append(cs, sinks.NewCheck(s.signer.Check()))
	}
	return cs
}
