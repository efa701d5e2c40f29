package stream

import (
	"context"
	"encoding/hex"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"
)

// NameIndexBucket is the KV bucket of the change log's name index
// (package changelog writes and reads it). The bus names it because a hub
// provisions it to source every edge's, as it does CHANGES.
const NameIndexBucket = "bomstream-names"

// KeyValue opens the KV bucket called bucket, creating it when missing,
// on file storage with the configured replicas and no limits. On a hub,
// the name index (NameIndexBucket) sources every edge's.
func (b *Bus) KeyValue(ctx context.Context, bucket string) (jetstream.KeyValue, error) {
	var kv jetstream.KeyValue
	err := b.retry(ctx, "", true, func(ctx context.Context) (err error) {
		kv, err = b.js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{
			Bucket:   bucket,
			Storage:  jetstream.FileStorage,
			Replicas: b.cfg.replicas(),
			Sources:  b.cfg.bucketSources(bucket),
		})
		return err
	})
	return kv, err
}

// Buckets lists the names of the KV buckets.
func (b *Bus) Buckets(ctx context.Context) ([]string, error) {
	var out []string
	err := b.retry(ctx, "", true, func(ctx context.Context) error {
		out = out[:0]
		l := b.js.KeyValueStoreNames(ctx)
		for name := range l.Name() {
			out = append(out, name)
		}
		return l.Error()
	})
	if err != nil {
		return nil, fmt.Errorf("buckets: %w", err)
	}
	return out, nil
}

// KeyToken makes s one KV key token: as is when it is made of [-_=A-Za-z0-9],
// else hex behind a "=" that no Kubernetes name contains.
func KeyToken(s string) string {
	for _, r := range s {
		if !(r == '-' || r == '_' || r == '=' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
			return "=" + hex.EncodeToString([]byte(s))
		}
	}
	return s
}
