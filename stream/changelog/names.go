package changelog

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/bomstream/bomstream/schemas"
	"github.com/bomstream/bomstream/stream"
)

// The name index (KV bucket stream.NameIndexBucket) maps a workload's name
// to the uids it had, so that `history` and `get` read one workload instead
// of every workload of the cluster. The writer of a workload's first event
// adds its key, "<cluster>.<hex of namespace/kind/name>.<uid>" (the kind in
// lower case, cluster and uid made key tokens by stream.KeyToken), with the
// event's time as the value: a name deleted and re-created has a key per
// uid.

// nameIndex is the name index's bucket, opened once.
func (l *Log) nameIndex(ctx context.Context) (jetstream.KeyValue, error) {
	l.mu.Lock()
	kv := l.names
	l.mu.Unlock()
	if kv != nil {
		return kv, nil
	}
	kv, err := l.bus.KeyValue(ctx, stream.NameIndexBucket)
	if err != nil {
		return nil, fmt.Errorf("name index: %w", err)
	}
	l.mu.Lock()
	l.names = kv
	l.mu.Unlock()
	return kv, nil
}

func nameToken(namespace, kind, name string) string {
	return hex.EncodeToString([]byte(namespace + "/" + strings.ToLower(kind) + "/" + name))
}

func nameKey(w schemas.Workload) string {
	return stream.KeyToken(w.Cluster) + "." + nameToken(w.Namespace, w.Kind, w.Name) + "." + stream.KeyToken(w.UID)
}

// indexName records ev's workload in the name index.
func (l *Log) indexName(ctx context.Context, ev schemas.WorkloadChange) error {
	kv, err := l.nameIndex(ctx)
	if err != nil {
		return err
	}
	err = l.bus.Retry(ctx, true, func(ctx context.Context) error {
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
func (l *Log) WorkloadUIDs(ctx context.Context, cluster, namespace, kind, name string) ([]string, error) {
	kv, err := l.nameIndex(ctx)
	if err != nil {
		return nil, err
	}
	prefix := stream.KeyToken(cluster) + "." + nameToken(namespace, kind, name) + "."
	type seen struct {
		uid   string
		since string
	}
	var out []seen
	err = l.bus.Retry(ctx, true, func(ctx context.Context) error {
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
func (l *Log) FindWorkload(ctx context.Context, cluster, namespace, kind, name string) (schemas.Workload, error) {
	uids, err := l.WorkloadUIDs(ctx, cluster, namespace, kind, name)
	if err != nil {
		return schemas.Workload{}, err
	}
	for _, uid := range slices.Backward(uids) {
		probe := schemas.Workload{Cluster: cluster, UID: uid}
		ev, _, ok, err := l.LastChange(ctx, probe)
		if err != nil {
			return schemas.Workload{}, err
		}
		if ok {
			return ev.Data.Workload, nil
		}
	}
	var found []schemas.Workload
	err = l.LatestChanges(ctx, cluster, func(ev schemas.WorkloadChange, _ uint64) error {
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
