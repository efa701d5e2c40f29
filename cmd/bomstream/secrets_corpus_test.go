package main

import (
	"bytes"
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/bomstream/bomstream/schemas"
)

// plantMark is part of every stand-in credential of testdata/secrets-corpus.
const plantMark = "plantedSecret"

var plantRE = regexp.MustCompile(plantMark + `[0-9]{2}`)

// secretsCorpus copies testdata/secrets-corpus into a new tree, with mark
// replacing plantMark when it is not plantMark, and returns the tree and the
// number of distinct credentials planted.
func secretsCorpus(t *testing.T, mark string) (string, int) {
	t.Helper()
	tree := t.TempDir()
	src := filepath.Join("testdata", "secrets-corpus")
	if copyManifests(t, src, tree) == 0 {
		t.Fatal("no secrets corpus")
	}
	planted := map[string]bool{}
	err := filepath.WalkDir(tree, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		for _, m := range plantRE.FindAll(b, -1) {
			planted[string(m)] = true
		}
		return os.WriteFile(p, bytes.ReplaceAll(b, []byte(plantMark), []byte(mark)), 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return tree, len(planted)
}

// TestSecretsCorpus plants 48 credentials in every place a manifest can hold
// one (--flag value, --flag=value, -f value, -fvalue, shell scripts with
// quoting, assignments and here-documents, header values, URL userinfo and
// queries, env literals, valueFrom and envFrom Secrets, annotations including
// last-applied-configuration, allow-listed and other labels, init, native
// sidecar, sidecar and ephemeral containers, CR spec fields and args, a
// linked ConfigMap), runs `run --manifests DIR --once` with the file sink and
// debug logs, and reads every byte written: the JetStream store directory,
// the sink's files, stdout and stderr, and each message and header of the
// CHANGES, BOMS and DLQ streams. None may hold any part of a credential.
func TestSecretsCorpus(t *testing.T) {
	tree, planted := secretsCorpus(t, plantMark)
	if planted < 60 {
		t.Fatalf("the corpus plants %d credentials, want at least 60", planted)
	}
	want := serving(expect(t, tree, "default"))
	for _, k := range []string{"secrets/Deployment/vllm-args", "secrets/LeaderWorkerSet/lws-shell", "secrets/NIMService/nim",
		"secrets/InferenceService/isvc", "secrets/VLLMRuntime/vllmrt", "secrets/DynamoGraphDeployment/dgd", "secrets/Pod/debug-pod",
		"secrets/Model/kubeai", "secrets/RayService/ray", "secrets/Server/seldon", "secrets/InferenceService/isvc-linked",
		"secrets/Workspace/kaito", "secrets/Deployment/downloads", "secrets/Rollout/rollout", "secrets/ModelServer/generic"} {
		if _, ok := want[k]; !ok {
			t.Errorf("%s renders no BOM: the test would search less than it says", k)
		}
	}
	sinkDir, dataDir := filepath.Join(t.TempDir(), "boms"), filepath.Join(t.TempDir(), "data")
	c := newCLI(t)
	out := c.mustRun("run", "--manifests", tree, "--once", "--sink-dir", sinkDir, "--data-dir", dataDir, "--log-level", "debug")
	checkSink(t, sinkDir, want, nil)
	for name, s := range map[string]string{"stdout": out.stdout, "stderr": out.stderr} {
		if strings.Contains(s, plantMark) {
			t.Errorf("a credential reached %s:\n%s", name, excerptOf(s, plantMark))
		}
	}

	// Every file the run wrote, read as bytes: nothing is compressed, so a
	// credential would be there verbatim. The positive control shows that
	// the events around the credentials are there in plain text.
	var store bytes.Buffer
	for _, dir := range []string{dataDir, sinkDir} {
		files := 0
		err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			files++
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			if dir == dataDir {
				store.Write(b)
			}
			if bytes.Contains(b, []byte(plantMark)) {
				t.Errorf("a credential reached %s:\n%s", p, excerptOf(string(b), plantMark))
			}
			return nil
		})
		if err != nil || files == 0 {
			t.Fatalf("walk %s: %d files, %v", dir, files, err)
		}
	}
	mustContain(t, "the JetStream store", store.String(), "--api-key", `"-kREDACTED"`, "X-Api-Key: REDACTED",
		"--upstream=REDACTED", "https://REDACTED@hf-mirror.example.com/org/model-c", "https://REDACTED@adapters.example.com/sql", "--ngc-api-key", "all-the-keys", "hf-secret", "org/model-a", schemas.RedactedValue)

	bus := openBus(t, dataDir, "")
	for _, s := range []string{schemas.StreamChanges, schemas.StreamBOMs, schemas.StreamDLQ} {
		n := 0
		err := bus.Reader().Messages(context.Background(), s, "", 0, func(m *jetstream.RawStreamMsg) error {
			n++
			if bytes.Contains(m.Data, []byte(plantMark)) {
				t.Errorf("a credential reached %s seq %d:\n%s", s, m.Sequence, excerptOf(string(m.Data), plantMark))
			}
			for k, vs := range m.Header {
				for _, v := range vs {
					if strings.Contains(v, plantMark) {
						t.Errorf("a credential reached header %s of %s seq %d", k, s, m.Sequence)
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

// TestSecretsRotationKeepsInputHashes rotates every planted credential of the
// corpus: no workload's input hash changes, and a second `run --once` over
// the rotated manifests publishes nothing.
func TestSecretsRotationKeepsInputHashes(t *testing.T) {
	before, n := secretsCorpus(t, plantMark)
	after, _ := secretsCorpus(t, "rotatedCredential")
	a, b := expect(t, before, "default"), expect(t, after, "default")
	if len(a) == 0 || len(a) != len(b) {
		t.Fatalf("%d workloads before, %d after", len(a), len(b))
	}
	for k, e := range a {
		if b[k].InputHash != e.InputHash {
			t.Errorf("%s: input hash changed when its %d credentials were rotated", k, n)
		}
	}

	// The same through the pipeline, on one store.
	dataDir := filepath.Join(t.TempDir(), "data")
	sinkDir := filepath.Join(t.TempDir(), "boms")
	c := newCLI(t)
	count := func() int {
		bus := openBus(t, dataDir, "")
		defer bus.Close()
		m := 0
		if err := bus.Reader().Messages(context.Background(), schemas.StreamChanges, "", 0, func(*jetstream.RawStreamMsg) error {
			m++
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		return m
	}
	c.mustRun("run", "--manifests", before, "--once", "--sink-dir", sinkDir, "--data-dir", dataDir)
	first := count()
	// The rotated tree replaces the files in place, as an edit would.
	if err := os.RemoveAll(before); err != nil {
		t.Fatal(err)
	}
	copyManifests(t, after, before)
	c.mustRun("run", "--manifests", before, "--once", "--sink-dir", sinkDir, "--data-dir", dataDir)
	if second := count(); second != first || first == 0 {
		t.Errorf("CHANGES holds %d events after the first run and %d after rotating every credential", first, second)
	}
}

// excerptOf shows where mark is, without printing whole documents.
func excerptOf(s, mark string) string {
	i := strings.Index(s, mark)
	lo, hi := max(0, i-200), min(len(s), i+100)
	return "..." + s[lo:hi] + "..."
}
