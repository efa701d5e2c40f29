package process

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/bomstream/bomstream/schemas"
	"github.com/bomstream/bomstream/stream/changelog"
	"github.com/bomstream/bomstream/stream/deadletter"
	"github.com/bomstream/bomstream/stream/engine"
)

// retryDeadLetters puts the dead letters req names back through their
// stage in this process, oldest first; each one that goes through is removed.
func retryDeadLetters(ctx context.Context, p *Pipeline, req RetryRequest, report func(string)) (RetryResult, error) {
	var todo []deadletter.Letter
	ids := map[uint64]bool{}
	for _, id := range req.IDs {
		ids[id] = true
	}
	stagesWanted := map[string]bool{}
	for _, s := range req.Stages {
		stagesWanted[s] = true
	}
	if err := deadletter.New(p.bus).List(ctx, "", func(d deadletter.Letter) error {
		if ids[d.ID] || stagesWanted[d.Stage] {
			todo = append(todo, d)
			delete(ids, d.ID)
		}
		return nil
	}); err != nil {
		return RetryResult{}, err
	}
	var res RetryResult
	for id := range ids {
		report(fmt.Sprintf("dead letter %d: %v", id, deadletter.ErrNotFound))
		res.Failed++
	}
	for _, d := range todo {
		rctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
		out, err := retryOne(rctx, p, d)
		cancel()
		w, _ := DeadLetterSubject(d)
		switch {
		case err != nil:
			res.Failed++
			report(fmt.Sprintf("dead letter %d (%s, %s): not retried: %s", d.ID, d.Stage, w, OneLine(err.Error(), 300)))
		case !out.Done:
			res.Failed++
			report(fmt.Sprintf("dead letter %d (%s, %s): still failing, now dead letter %d: %s", d.ID, d.Stage, w, out.ID, OneLine(out.Reason, 300)))
		default:
			res.Done++
			report(fmt.Sprintf("dead letter %d (%s, %s): done", d.ID, d.Stage, w))
		}
	}
	return res, nil
}

// retryOne redrives one dead letter through the stage of the table that
// its stage names.
func retryOne(ctx context.Context, p *Pipeline, d deadletter.Letter) (engine.Redriven, error) {
	if r, ok := p.stage(d.Stage).(Redriver); ok {
		return r.Retry(ctx, d)
	}
	if d.Stage == schemas.StageTransformer {
		return engine.Redriven{}, errors.New("the transformer does not run in this process")
	}
	if name, ok := schemas.SinkOfStage(d.Stage); ok {
		return engine.Redriven{}, fmt.Errorf("sink %s does not run in this process (it runs: %s)", name, p.sinkList())
	}
	return engine.Redriven{}, fmt.Errorf("no stage %q here", d.Stage)
}

// DeadLetterSubject names the workload and the change of a dead letter, as
// far as its message says.
func DeadLetterSubject(d deadletter.Letter) (workload, change string) {
	if d.Stream == schemas.StreamBOMs {
		if m, _ := schemas.DecodeBOMMessage("", d.Header, d.Data); m.Workload.Name != "" {
			return m.Workload.Key(), strconv.FormatUint(m.ChangeSeq, 10)
		}
	}
	if d.Stream == schemas.StreamChanges {
		if ev, err := changelog.Decode(d.Data); err == nil && ev.Data.Workload.Name != "" {
			return ev.Data.Workload.Key(), strconv.FormatUint(d.Seq, 10)
		}
		return d.Subject, strconv.FormatUint(d.Seq, 10)
	}
	return d.Subject, "-"
}

// OneLine is s on one line, cut to n bytes with "..." when longer.
func OneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > n {
		return s[:n-3] + "..."
	}
	return s
}

// WriteDeadLetter prints a dead letter as `bomstream dlq show` does: where
// it came from, why, its headers and its message.
func WriteDeadLetter(out io.Writer, d deadletter.Letter) {
	w, change := DeadLetterSubject(d)
	fmt.Fprintf(out, "dead letter %d\n", d.ID)
	for _, kv := range [][2]string{
		{"stage", d.Stage}, {"dead-lettered", d.Time.UTC().Format(time.RFC3339Nano)}, {"workload", w}, {"change", change},
		{"from", fmt.Sprintf("%s seq %d (%s)", d.Stream, d.Seq, d.Subject)}, {"delivered", strconv.FormatUint(d.Delivered, 10)},
		{"reason", d.Reason},
	} {
		fmt.Fprintf(out, "%-14s %s\n", kv[0]+":", kv[1])
	}
	keys := make([]string, 0, len(d.Header))
	for k := range d.Header {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	fmt.Fprintln(out, "headers:")
	for _, k := range keys {
		fmt.Fprintf(out, "  %s: %s\n", k, strings.Join(d.Header[k], ", "))
	}
	fmt.Fprintf(out, "message (%d bytes):\n%s\n", len(d.Data), d.Data)
}
