package main

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/bomstream/bomstream/collector"
	"github.com/bomstream/bomstream/schemas"
)

// secretMark is part of every stand-in credential in testdata/secrets.yaml.
const secretMark = "bomstreamTestSecret"

// TestSecretsNeverLeave runs the pipeline over manifests full of credentials
// (env literals, secretKeyRef, envFrom, --api-key, tokens in shell strings and
// URLs) with debug logging and the stdout sink, then searches every output:
// sink files, the CHANGES, BOMS and DLQ streams, stdout and stderr, and what
// history and get print.
func TestSecretsNeverLeave(t *testing.T) {
	tree := t.TempDir()
	b, err := os.ReadFile(filepath.Join("testdata", "secrets.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Count(string(b), secretMark) < 10 {
		t.Fatal("testdata/secrets.yaml lost its stand-in credentials")
	}
	writeFile(t, filepath.Join(tree, "secrets.yaml"), string(b))
	want := serving(expect(t, tree, "default"))
	for _, k := range []string{"ml/Deployment/leaky", "ml/LeaderWorkerSet/leaky-lws"} {
		if _, ok := want[k]; !ok {
			t.Fatalf("%s renders no BOM: the test would search nothing", k)
		}
	}
	sinkDir, dataDir := filepath.Join(t.TempDir(), "boms"), filepath.Join(t.TempDir(), "data")
	c := newCLI(t)
	var outputs []result
	base := []string{"--data-dir", dataDir, "--log-level", "debug"}
	outputs = append(outputs, c.mustRun(append([]string{"run", "--manifests", tree, "--once", "--sink-dir", sinkDir, "--stdout"}, base...)...))
	checkSink(t, sinkDir, want, nil)
	for _, k := range sortedKeys(want) {
		outputs = append(outputs, c.mustRun(append([]string{"history", k}, base...)...))
		outputs = append(outputs, c.mustRun(append([]string{"get", k}, base...)...))
	}
	outputs = append(outputs, c.mustRun("render", "-f", tree))

	if n := strings.Count(outputs[0].stdout, `"type":"bom"`); n != len(want) {
		t.Errorf("stdout sink printed %d BOMs, want %d", n, len(want))
	}
	for i, r := range outputs {
		for name, s := range map[string]string{"stdout": r.stdout, "stderr": r.stderr} {
			if strings.Contains(s, secretMark) {
				t.Errorf("command %d: a secret reached %s:\n%s", i, name, excerpt(s))
			}
		}
	}

	files := 0
	err = filepath.WalkDir(sinkDir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		files++
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if strings.Contains(string(b), secretMark) {
			t.Errorf("a secret reached sink file %s:\n%s", p, excerpt(string(b)))
		}
		return nil
	})
	if err != nil || files == 0 {
		t.Fatalf("walk sink: %d files, %v", files, err)
	}

	bus := openBus(t, dataDir, "")
	// Positive control: the events do carry the arguments around the
	// secrets, with the values replaced, so their absence is the scrubber's work.
	var changes strings.Builder
	if err := bus.Reader().Messages(context.Background(), schemas.StreamChanges, "", 0, func(m *jetstream.RawStreamMsg) error {
		changes.Write(m.Data)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	mustContain(t, "CHANGES", changes.String(), "--api-key", "HF_TOKEN", "all-the-keys", collector.Redacted)
	for _, s := range []string{schemas.StreamChanges, schemas.StreamBOMs, schemas.StreamDLQ} {
		n := 0
		err := bus.Reader().Messages(context.Background(), s, "", 0, func(m *jetstream.RawStreamMsg) error {
			n++
			if strings.Contains(string(m.Data), secretMark) {
				t.Errorf("a secret reached %s seq %d:\n%s", s, m.Sequence, excerpt(string(m.Data)))
			}
			for k, vs := range m.Header {
				for _, v := range vs {
					if strings.Contains(v, secretMark) {
						t.Errorf("a secret reached header %s of %s seq %d", k, s, m.Sequence)
					}
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if s != schemas.StreamDLQ && n == 0 {
			t.Errorf("%s is empty: nothing was searched", s)
		}
	}
}

// excerpt shows where the mark is, without printing whole documents.
func excerpt(s string) string {
	i := strings.Index(s, secretMark)
	lo, hi := max(0, i-200), min(len(s), i+100)
	return "..." + s[lo:hi] + "..."
}
