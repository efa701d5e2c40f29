package inventory

import (
	"context"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/bomstream/bomstream/inventory/follow"
	"github.com/bomstream/bomstream/schemas"
)

// History reads the history of workload w from BOMS, its subject only:
// the versions an index would hold of w (see Index.Apply), in change
// order, each change once, under the identity w. It costs one read of
// w's messages, not a load of the stream: `bomstream history` and `get`
// answer from it, and take the version in effect at a time from
// Workload.VersionAt as every other reader does.
func History(ctx context.Context, r follow.Reader, w schemas.Workload) (Workload, error) {
	var msgs []*jetstream.RawStreamMsg
	err := r.Messages(ctx, schemas.StreamBOMs, schemas.BOMsSubject(w), 0, func(m *jetstream.RawStreamMsg) error {
		msgs = append(msgs, m)
		return nil
	})
	if err != nil {
		return Workload{ID: w}, fmt.Errorf("history of %s: %w", w, err)
	}
	ix := New()
	ix.Apply(msgs)
	out := Workload{ID: w}
	if got := ix.byUID[w.Cluster+"/"+w.UID]; got != nil {
		out.Versions = got.Versions
	}
	return out, nil
}
