package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/bomstream/bomstream/schemas"
	"github.com/bomstream/bomstream/sinks"
	"github.com/bomstream/bomstream/sinks/file"
	"github.com/bomstream/bomstream/sinks/registry"
)

// TestReplay backfills a second sink from BOMS and checks that replaying a
// sink that is up to date writes nothing.
func TestReplay(t *testing.T) {
	tree := t.TempDir()
	copyManifests(t, examplesDir, tree)
	want := serving(expect(t, tree, "default"))
	dataDir := filepath.Join(t.TempDir(), "data")
	dirA, dirB := filepath.Join(t.TempDir(), "a"), filepath.Join(t.TempDir(), "b")
	onlyFile := filepath.Join(t.TempDir(), "only-file.yaml")
	writeFile(t, onlyFile, fmt.Sprintf("sinks:\n- {name: file, type: file, config: {dir: %q}}\n", dirA))
	both := filepath.Join(t.TempDir(), "both.yaml")
	writeFile(t, both, fmt.Sprintf("sinks:\n- {name: file, type: file, config: {dir: %q}}\n- {name: archive, type: file, config: {dir: %q}}\n", dirA, dirB))
	c := newCLI(t)

	c.mustRun("run", "--config", onlyFile, "--manifests", tree, "--once", "--data-dir", dataDir)
	checkSink(t, dirA, want, nil)
	before := listing(t, dirA)

	r := c.mustRun("replay", "--config", both, "--sink", "file", "--data-dir", dataDir)
	mustContain(t, "replay file", r.stdout, "replay file: 0 exported, 0 tombstones, "+fmt.Sprint(len(want))+" already exported")
	if added, changed, removed := diff(before, listing(t, dirA)); len(added)+len(changed)+len(removed) != 0 {
		t.Errorf("replay of an up-to-date sink touched it: added %s, changed %s, removed %s", fmtList(added), fmtList(changed), fmtList(removed))
	}

	if n := countBOMFiles(t, dirB); n != 0 {
		t.Fatalf("archive holds %d BOMs before its replay", n)
	}
	r = c.mustRun("replay", "--config", both, "--sink", "archive", "--data-dir", dataDir)
	mustContain(t, "replay archive", r.stdout, fmt.Sprintf("replay archive: %d exported, 0 tombstones, 0 already exported", len(want)))
	checkSink(t, dirB, want, nil)

	before = listing(t, dirB)
	r = c.mustRun("replay", "--config", both, "--sink", "archive", "--data-dir", dataDir)
	mustContain(t, "second replay archive", r.stdout, "replay archive: 0 exported")
	if added, changed, removed := diff(before, listing(t, dirB)); len(added)+len(changed)+len(removed) != 0 {
		t.Errorf("second replay touched the archive: added %s, changed %s, removed %s", fmtList(added), fmtList(changed), fmtList(removed))
	}

	r = c.run("replay", "--config", both, "--sink", "nosuch", "--data-dir", dataDir)
	if r.err == nil || !strings.Contains(r.err.Error(), `sink "nosuch" is not configured`) {
		t.Errorf("replay of an unknown sink: err = %v", r.err)
	}
}

// flaky fails its first `failures` Export calls with a plain (transient)
// error, then writes through.
type flaky struct {
	sinks.Sink
	mu              sync.Mutex
	failures, calls int
}

func (f *flaky) Export(ctx context.Context, b sinks.BOM) error {
	f.mu.Lock()
	f.calls++
	fail := f.calls <= f.failures
	f.mu.Unlock()
	if fail {
		return errors.New("flaky store: connection reset")
	}
	return f.Sink.Export(ctx, b)
}

// picky refuses one workload with a permanent error.
type picky struct {
	sinks.Sink
	refuse string
}

func (p *picky) Export(ctx context.Context, b sinks.BOM) error {
	if b.Workload.Name == p.refuse {
		return sinks.Permanent(fmt.Errorf("picky store refuses %s: schema rejected", b.Workload.Name))
	}
	return p.Sink.Export(ctx, b)
}

// withTestSinks adds the "flaky" and "picky" types, configured like the file
// sink plus their own key.
func withTestSinks(reg sinks.Registry, made *[]*flaky) sinks.Registry {
	reg["flaky"] = sinks.Type{
		NewConfig: func() sinks.Config { return &flakyConfig{} },
		New: func(ctx context.Context, c sinks.Config, deps sinks.Deps) (sinks.Sink, error) {
			fc := c.(*flakyConfig)
			s, err := file.SinkType.New(ctx, &fc.Config, deps)
			if err != nil {
				return nil, err
			}
			f := &flaky{Sink: s, failures: fc.Failures}
			*made = append(*made, f)
			return f, nil
		},
	}
	reg["picky"] = sinks.Type{
		NewConfig: func() sinks.Config { return &pickyConfig{} },
		New: func(ctx context.Context, c sinks.Config, deps sinks.Deps) (sinks.Sink, error) {
			pc := c.(*pickyConfig)
			s, err := file.SinkType.New(ctx, &pc.Config, deps)
			if err != nil {
				return nil, err
			}
			return &picky{Sink: s, refuse: pc.Refuse}, nil
		},
	}
	return reg
}

// flakyConfig and pickyConfig are a file sink's configuration plus the
// test sink's own key.
type flakyConfig struct {
	file.Config `yaml:",inline"`
	Failures    int `yaml:"failures"`
}

type pickyConfig struct {
	file.Config `yaml:",inline"`
	Refuse      string `yaml:"refuse"`
}

// TestSinkErrors runs a sink that fails transiently at first, and one that
// refuses one workload permanently, side by side.
func TestSinkErrors(t *testing.T) {
	tree := t.TempDir()
	copyManifests(t, examplesDir, tree)
	want := serving(expect(t, tree, "default"))
	chat, ok := want["ml/Deployment/chat"]
	if !ok {
		t.Fatal("examples lack ml/Deployment/chat")
	}
	dataDir := filepath.Join(t.TempDir(), "data")
	flakyDir, pickyDir := filepath.Join(t.TempDir(), "flaky"), filepath.Join(t.TempDir(), "picky")
	conf := filepath.Join(t.TempDir(), "bomstream.yaml")
	writeFile(t, conf, fmt.Sprintf(`sinks:
- name: flaky
  type: flaky
  runner: {baseBackoff: 10ms, maxBackoff: 100ms}
  config: {dir: %q, failures: 6}
- name: picky
  type: picky
  config: {dir: %q, refuse: chat}
`, flakyDir, pickyDir))
	var made []*flaky
	c := newCLI(t)
	c.reg = withTestSinks(registry.Builtin(), &made)

	r := c.run("run", "--config", conf, "--manifests", tree, "--once", "--data-dir", dataDir)
	// The run is honest: one BOM is left on the dead-letter stream.
	if r.err == nil || !strings.Contains(r.err.Error(), "1 messages dead-lettered in this run") {
		t.Fatalf("run --once with a refused BOM: %v", r.err)
	}
	if len(made) != 1 || made[0].calls < len(want)+6 {
		t.Fatalf("flaky sink: %d instances, want 1 that saw at least %d calls", len(made), len(want)+6)
	}
	checkSink(t, flakyDir, want, nil)
	mustContain(t, "summary", r.stdout,
		fmt.Sprintf("sink flaky: %d exported, 0 tombstones, 0 already exported, 0 dead-lettered", len(want)),
		fmt.Sprintf("sink picky: %d exported, 0 tombstones, 0 already exported, 1 dead-lettered", len(want)-1))

	others := map[string]expectation{}
	for k, e := range want {
		if k != "ml/Deployment/chat" {
			others[k] = e
		}
	}
	checkSink(t, pickyDir, others, nil)

	bus := openBus(t, dataDir, "")
	var dead []*jetstream.RawStreamMsg
	err := bus.Reader().Messages(context.Background(), schemas.StreamDLQ, schemas.DLQSubject("sink.picky"), 0, func(m *jetstream.RawStreamMsg) error {
		dead = append(dead, m)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(dead) != 1 {
		t.Fatalf("DLQ bomstream.dlq.sink.picky holds %d messages, want 1", len(dead))
	}
	m := dead[0]
	mustContain(t, "DLQ reason", m.Header.Get(schemas.HeaderReason), "picky store refuses chat: schema rejected")
	if bm, err := schemas.DecodeBOMMessage("", m.Header, m.Data); err != nil || wkey(bm.Workload) != "ml/Deployment/chat" {
		t.Errorf("dead letter names workload %v (%v), want ml/Deployment/chat", bm.Workload, err)
	}
	if !bytes.Equal(m.Data, chat.BOM) {
		t.Errorf("dead letter does not carry chat's BOM")
	}
	// The flaky sink's errors were retried, never dead-lettered.
	n := 0
	err = bus.Reader().Messages(context.Background(), schemas.StreamDLQ, schemas.DLQSubject("sink.flaky"), 0, func(*jetstream.RawStreamMsg) error { n++; return nil })
	if err != nil || n != 0 {
		t.Errorf("DLQ of the flaky sink: %d messages (%v), want none", n, err)
	}
}
