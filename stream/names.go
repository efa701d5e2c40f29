package stream

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/bomstream/bomstream/schemas"
)

// The name index (KV bucket "bomstream-names") maps a workload's name to
// the uids it had, so that `history` and `get` read one workload instead of
// every workload of the cluster. The writer of a workload's first event
// adds its key, "<cluster>.<hex of namespace/kind/name>.<uid>" (the kind in
// lower case), with the event's time as the value: a name deleted and
// re-created has a key per uid.
const namesBucket = "bomstream-names"

func (b *Bus) names(ctx context.Context) (jetstream.KeyValue, error) {
	b.mu.Lock()
	kv := b.namesKV
	b.mu.Unlock()
	if kv != nil {
		return kv, nil
	}
	err := b.retry(ctx, "", true, func(ctx context.Context) (err error) {
		kv, err = b.js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{
			Bucket: namesBucket, Storage: jetstream.FileStorage, Replicas: b.cfg.replicas(),
			Sources: b.cfg.nameSources(),
		})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("name index: %w", err)
	}
	b.mu.Lock()
	b.namesKV = kv
	b.mu.Unlock()
	return kv, nil
}

func nameToken(namespace, kind, name string) string {
	return hex.EncodeToString([]byte(namespace + "/" + strings.ToLower(kind) + "/" + name))
}

func nameKey(w schemas.Workload) string {
	return keyToken(w.Cluster) + "." + nameToken(w.Namespace, w.Kind, w.Name) + "." + keyToken(w.UID)
}

// keyToken makes s one KV key token: as is when it is made of [-_=A-Za-z0-9],
// else hex behind a "=" that no Kubernetes name contains.
func keyToken(s string) string {
	for _, r := range s {
		if !(r == '-' || r == '_' || r == '=' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
			return "=" + hex.EncodeToString([]byte(s))
		}
	}
	return s
}

// indexName records ev's workload in the name index.
func (b *Bus) indexName(ctx context.Context, ev schemas.WorkloadChange) error {
	kv, err := b.names(ctx)
	if err != nil {
		return err
	}
	err = b.retry(ctx, "", true, func(ctx context.Context) error {
		_, err := kv.Put(ctx, nameKey(ev.Data.Workload), []byte(ev.Time.UTC().Format(time.RFC3339Nano)))
		return err
	})
	if err != nil {
		return fmt.Errorf("name index: %w", err)
	}
	return nil
}

// WorkloadUIDs returns the uids the workload namespace/kind/name has had in
// cluster, oldest first by the time of their first event; none when the
// index knows nothing of it (see FindWorkload).
func (b *Bus) WorkloadUIDs(ctx context.Context, cluster, namespace, kind, name string) ([]string, error) {
	kv, err := b.names(ctx)
	if err != nil {
		return nil, err
	}
	prefix := keyToken(cluster) + "." + nameToken(namespace, kind, name) + "."
	type seen struct {
		uid   string
		since string
	}
	var out []seen
	err = b.retry(ctx, "", true, func(ctx context.Context) error {
		out = out[:0]
		lister, err := kv.ListKeysFiltered(ctx, prefix+">")
		if err != nil {
			return err
		}
		for k := range lister.Keys() {
			e, err := kv.Get(ctx, k)
			if errors.Is(err, jetstream.ErrKeyNotFound) {
				continue // removed since it was listed
			}
			if err != nil {
				return err
			}
			uid := strings.TrimPrefix(k, prefix)
			if strings.HasPrefix(uid, "=") {
				raw, err := hex.DecodeString(uid[1:])
				if err != nil {
					continue
				}
				uid = string(raw)
			}
			out = append(out, seen{uid, string(e.Value())})
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("name index: %w", err)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].since < out[j].since })
	uids := make([]string, len(out))
	for i, s := range out {
		uids[i] = s.uid
	}
	return uids, nil
}

// ErrNoWorkload is returned by FindWorkload for a name never seen.
var ErrNoWorkload = errors.New("workload not found")

// FindWorkload resolves namespace/kind/name (kind in any case) to the
// identity of its newest incarnation in cluster, from the name index and
// the workload's last event; with no index entry (a store older than the
// index) it falls back to reading the last event of every workload.
func (b *Bus) FindWorkload(ctx context.Context, cluster, namespace, kind, name string) (schemas.Workload, error) {
	uids, err := b.WorkloadUIDs(ctx, cluster, namespace, kind, name)
	if err != nil {
		return schemas.Workload{}, err
	}
	for i := len(uids) - 1; i >= 0; i-- {
		probe := schemas.Workload{Cluster: cluster, UID: uids[i]}
		ev, _, ok, err := b.LastChange(ctx, probe)
		if err != nil {
			return schemas.Workload{}, err
		}
		if ok {
			return ev.Data.Workload, nil
		}
	}
	var found []schemas.Workload
	err = b.LatestChanges(ctx, cluster, func(ev schemas.WorkloadChange, _ uint64) error {
		w := ev.Data.Workload
		if w.Namespace == namespace && strings.EqualFold(w.Kind, kind) && w.Name == name {
			found = append(found, w)
		}
		return nil
	})
	if err != nil {
		return schemas.Workload{}, err
	}
	if len(found) == 0 {
		return schemas.Workload{}, fmt.Errorf("%s/%s/%s in cluster %s: %w", namespace, kind, name, cluster, ErrNoWorkload)
	}
	return found[len(found)-1], nil // deleted and re-created: the newest
}
