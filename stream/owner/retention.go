package owner

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/zap"

	"github.com/bomstream/bomstream/schemas"
)

// Store is what retention needs of the bus: the CHANGES stream and the
// bounded retry its requests ride through a leader election with
// (stream.Bus has both).
type Store interface {
	Stream(ctx context.Context, name string) (jetstream.Stream, error)
	Retry(ctx context.Context, repeatable bool, fn func(ctx context.Context) error) error
}

// Walker walks a stream's stored messages in order (stream.Reader does).
type Walker interface {
	Messages(ctx context.Context, streamName, subject string, fromSeq uint64, fn func(*jetstream.RawStreamMsg) error) error
}

// errPastCutoff ends the walk over CHANGES at its first recent message.
var errPastCutoff = errors.New("past the retention cutoff")

// EnforceRetention trims CHANGES to maxAge (TrimBefore now minus maxAge)
// and logs what went. With no maxAge it does nothing.
func EnforceRetention(ctx context.Context, st Store, w Walker, maxAge time.Duration, log *zap.Logger) (uint64, error) {
	if maxAge <= 0 {
		return 0, nil
	}
	purged, err := TrimBefore(ctx, st, w, time.Now().Add(-maxAge))
	if purged > 0 && log != nil {
		log.Info("CHANGES trimmed to its retention; every workload's last event kept",
			zap.Duration("maxAge", maxAge), zap.Uint64("removed", purged))
	}
	return purged, err
}

// TrimBefore purges the events of CHANGES stored before cutoff without ever
// removing a workload's last event: for every subject with such events,
// those go except the subject's last one. It returns how many messages went.
func TrimBefore(ctx context.Context, st Store, w Walker, cutoff time.Time) (uint64, error) {
	s, err := st.Stream(ctx, schemas.StreamChanges)
	if err != nil {
		return 0, err
	}
	old, firstNew, err := oldSubjects(ctx, w, cutoff)
	if err != nil {
		return 0, err
	}
	var purged uint64
	for subj := range old {
		n, err := trimSubject(ctx, st, s, subj, firstNew)
		purged += n
		if err != nil {
			return purged, err
		}
	}
	return purged, nil
}

// oldSubjects walks CHANGES (in time order) up to cutoff: the subjects with
// messages older than it, and the first sequence at or after it (0: none).
func oldSubjects(ctx context.Context, w Walker, cutoff time.Time) (map[string]bool, uint64, error) {
	old := map[string]bool{}
	var firstNew uint64
	err := w.Messages(ctx, schemas.StreamChanges, "", 0, func(m *jetstream.RawStreamMsg) error {
		if !m.Time.Before(cutoff) {
			firstNew = m.Sequence
			return errPastCutoff
		}
		old[m.Subject] = true
		return nil
	})
	if err != nil && !errors.Is(err, errPastCutoff) {
		return nil, 0, fmt.Errorf("retention of %s: %w", schemas.StreamChanges, err)
	}
	return old, firstNew, nil
}

// trimSubject purges subj's messages before its last one (and before
// firstNew, the first recent message of the stream) and says how many went.
// Each request is repeatable: a purge up to a sequence, done twice, purges
// nothing more.
func trimSubject(ctx context.Context, st Store, s jetstream.Stream, subj string, firstNew uint64) (uint64, error) {
	var last *jetstream.RawStreamMsg
	err := st.Retry(ctx, true, func(ctx context.Context) (err error) {
		last, err = s.GetLastMsgForSubject(ctx, subj)
		return err
	})
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("retention of %s: %w", subj, err)
	}
	keepFrom := last.Sequence
	if firstNew != 0 && firstNew < keepFrom {
		keepFrom = firstNew
	}
	var before, after *jetstream.StreamInfo
	err = st.Retry(ctx, true, func(ctx context.Context) (err error) {
		before, err = s.Info(ctx)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("retention of %s: %w", subj, err)
	}
	err = st.Retry(ctx, true, func(ctx context.Context) error {
		return s.Purge(ctx, jetstream.WithPurgeSubject(subj), jetstream.WithPurgeSequence(keepFrom))
	})
	if err != nil {
		return 0, fmt.Errorf("retention of %s: %w", subj, err)
	}
	err = st.Retry(ctx, true, func(ctx context.Context) (err error) {
		after, err = s.Info(ctx)
		return err
	})
	if err == nil && before.State.Msgs > after.State.Msgs {
		return before.State.Msgs - after.State.Msgs, nil
	}
	return 0, nil
}

// KeepRetention runs EnforceRetention every tenth of maxAge (at most
// hourly, at least every second) until ctx is done.
func KeepRetention(ctx context.Context, st Store, w Walker, maxAge time.Duration, log *zap.Logger) {
	if maxAge <= 0 {
		return
	}
	every := max(min(maxAge/10, time.Hour), time.Second)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		if _, err := EnforceRetention(ctx, st, w, maxAge, log); err != nil && ctx.Err() == nil && log != nil {
			log.Warn("CHANGES retention", zap.Error(err))
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
