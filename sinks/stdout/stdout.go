package stdout

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/bomstream/bomstream/schemas"
	"github.com/bomstream/bomstream/sinks"
)

// Type is the registry name of this sink.
const Type = "stdout"

// Config configures one stdout sink.
type Config struct {
	// Name of this sink instance; default "stdout". Set by the registry.
	Name string `yaml:"-"`
	// Writer receives the lines; default os.Stdout. Not configurable from a file.
	Writer io.Writer `yaml:"-"`
}

// Validate checks the configuration.
func (c Config) Validate() error {
	if c.Name != "" {
		if err := sinks.ValidateName(c.Name); err != nil {
			return fmt.Errorf("name: %w", err)
		}
	}
	return nil
}

// Line is one printed line; BOM lines carry the document in BOM.
type Line struct {
	Type      string           `json:"type"` // "bom" or "tombstone"
	Workload  schemas.Workload `json:"workload"`
	BomHash   string           `json:"bomHash,omitempty"`
	InputHash string           `json:"inputHash,omitempty"`
	ChangeSeq uint64           `json:"changeSeq"`
	StreamSeq uint64           `json:"streamSeq"`
	Time      time.Time        `json:"time"`
	// Superseded marks a BOM older than one printed before for the same
	// name (sinks.BOM.Superseded): history, not the workload's latest.
	Superseded bool            `json:"superseded,omitempty"`
	BOM        json.RawMessage `json:"bom,omitempty"`
}

// Sink prints BOMs as JSON lines. It implements sinks.Sink.
type Sink struct {
	name string
	log  *zap.Logger

	mu   sync.Mutex
	w    io.Writer
	last map[string]printed // by cluster/uid: the last line printed
}

// printed is the last line printed for a workload: a BOM (bomHash) or a
// tombstone (its change sequence). A stream cannot be read back, so this is
// how a redelivered version prints nothing.
type printed struct {
	bomHash   string
	tombstone uint64
}

// New validates cfg and returns a sink.
func New(cfg Config, log *zap.Logger) (*Sink, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Name == "" {
		cfg.Name = Type
	}
	if cfg.Writer == nil {
		cfg.Writer = os.Stdout
	}
	if log == nil {
		log = zap.NewNop()
	}
	return &Sink{name: cfg.Name, w: cfg.Writer, log: log.With(zap.String("sink", cfg.Name)), last: map[string]printed{}}, nil
}

// SinkType is the registry entry of the stdout sink, writing to os.Stdout.
var SinkType = TypeFor(nil)

// TypeFor is SinkType for sinks that write to w instead of os.Stdout (a
// command's own output stream).
func TypeFor(w io.Writer) sinks.Type {
	return sinks.Type{
		NewConfig: func() sinks.Config { return &Config{} },
		New: func(_ context.Context, cfg sinks.Config, deps sinks.Deps) (sinks.Sink, error) {
			c := *cfg.(*Config)
			c.Name, c.Writer = deps.Name, w
			return New(c, deps.Log)
		},
	}
}

// Name implements sinks.Sink.
func (s *Sink) Name() string { return s.name }

// Close implements sinks.Sink; it does not close the writer.
func (s *Sink) Close() error { return nil }

// Export implements sinks.Sink: one line, unless the last line printed for
// the workload is this BOM already.
func (s *Sink) Export(ctx context.Context, b sinks.BOM) error {
	var body bytes.Buffer
	if err := json.Compact(&body, b.Body); err != nil {
		return sinks.Permanent(fmt.Errorf("export %s: body is not JSON: %w", b.Workload, err))
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("export %s: %w", b.Workload, err)
	}
	key := b.Workload.Cluster + "/" + b.Workload.UID
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.last[key] == (printed{bomHash: b.BomHash}) {
		return nil
	}
	line := Line{Type: "bom", Workload: b.Workload, BomHash: b.BomHash, InputHash: b.InputHash,
		ChangeSeq: b.ChangeSeq, StreamSeq: b.StreamSeq, Time: b.Time.UTC(), Superseded: b.Superseded, BOM: body.Bytes()}
	if err := s.write(line); err != nil {
		return fmt.Errorf("export %s: %w", b.Workload, err)
	}
	s.last[key] = printed{bomHash: b.BomHash}
	return nil
}

// Tombstone implements sinks.Sink: one line, unless the tombstone is stale
// or the last line printed for the workload is this tombstone already.
func (s *Sink) Tombstone(ctx context.Context, t sinks.Tombstone) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("tombstone %s: %w", t.Workload, err)
	}
	if t.Stale {
		s.log.Debug("stale tombstone ignored: a newer version exists for this name",
			zap.Stringer("workload", t.Workload), zap.Uint64("changeSeq", t.ChangeSeq))
		return nil
	}
	key := t.Workload.Cluster + "/" + t.Workload.UID
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.last[key] == (printed{tombstone: t.ChangeSeq}) {
		return nil
	}
	line := Line{Type: "tombstone", Workload: t.Workload, ChangeSeq: t.ChangeSeq, StreamSeq: t.StreamSeq, Time: t.Time.UTC()}
	if err := s.write(line); err != nil {
		return fmt.Errorf("tombstone %s: %w", t.Workload, err)
	}
	s.last[key] = printed{tombstone: t.ChangeSeq}
	return nil
}

// write prints one line with a single Write call; s.mu is held.
func (s *Sink) write(l Line) error {
	b, err := schemas.CanonicalJSON(l)
	if err != nil {
		return sinks.Permanent(err)
	}
	_, err = s.w.Write(append(b, '\n'))
	return err
}
