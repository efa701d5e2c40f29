package stream

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/zap"

	"github.com/bomstream/bomstream/schemas"
)

// EnforceRetention trims CHANGES to Config.MaxAge without ever removing a
// workload's last event: deletions are computed from the last events, so a
// workload not seen for longer than MaxAge must still be known to exist. For
// every subject with events older than MaxAge, those are purged except the
// subject's last one. It returns how many messages went. With no MaxAge it
// does nothing.
func (b *Bus) EnforceRetention(ctx context.Context) (uint64, error) {
	if b.cfg.MaxAge <= 0 {
		return 0, nil
	}
	s, err := b.Stream(ctx, schemas.StreamChanges)
	if err != nil {
		return 0, err
	}
	cutoff := time.Now().Add(-b.cfg.MaxAge)
	// The subjects with old messages, and the first sequence at or after
	// the cutoff (the stream is in time order).
	old := map[string]bool{}
	var firstNew uint64
	err = b.Messages(ctx, schemas.StreamChanges, "", 0, func(m *jetstream.RawStreamMsg) error {
		if !m.Time.Before(cutoff) {
			firstNew = m.Sequence
			return ErrStop
		}
		old[m.Subject] = true
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("retention of %s: %w", schemas.StreamChanges, err)
	}
	var purged uint64
	for subj := range old {
		last, err := s.GetLastMsgForSubject(ctx, subj)
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			continue
		}
		if err != nil {
			return purged, fmt.Errorf("retention of %s: %w", subj, err)
		}
		keepFrom := last.Sequence
		if firstNew != 0 && firstNew < keepFrom {
			keepFrom = firstNew
		}
		before, err := s.Info(ctx)
		if err != nil {
			return purged, err
		}
		if err := s.Purge(ctx, jetstream.WithPurgeSubject(subj), jetstream.WithPurgeSequence(keepFrom)); err != nil {
			return purged, fmt.Errorf("retention of %s: %w", subj, err)
		}
		after, err := s.Info(ctx)
		if err == nil && before.State.Msgs > after.State.Msgs {
			purged += before.State.Msgs - after.State.Msgs
		}
	}
	if purged > 0 {
		b.log.Info("CHANGES trimmed to its retention; every workload's last event kept",
			zap.Duration("maxAge", b.cfg.MaxAge), zap.Uint64("removed", purged))
	}
	return purged, nil
}

// KeepRetention runs EnforceRetention every tenth of MaxAge (at most
// hourly) until ctx is done.
func (b *Bus) KeepRetention(ctx context.Context) {
	if b.cfg.MaxAge <= 0 {
		return
	}
	every := min(b.cfg.MaxAge/10, time.Hour)
	every = max(every, time.Second)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		if _, err := b.EnforceRetention(ctx); err != nil && ctx.Err() == nil {
			b.log.Warn("CHANGES retention", zap.Error(err))
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
