package gcs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fsouza/fake-gcs-server/fakestorage"

	"github.com/bomstream/bomstream/schemas"
	"github.com/bomstream/bomstream/sinks"
	"github.com/bomstream/bomstream/sinks/gcs/gcstest"
	"github.com/bomstream/bomstream/sinks/sinktest"
)

// newSink builds a sink through the registry, as the process does, writing
// to srv under prefix; extra keys are added to the config block.
func newSink(t testing.TB, srv *gcstest.Server, prefix string, extra map[string]any) *Sink {
	t.Helper()
	raw := srv.Config(prefix)
	maps.Copy(raw, extra)
	reg := sinks.Registry{Type: SinkType}
	cfg, err := reg.Decode(Type, raw)
	if err != nil {
		t.Fatal(err)
	}
	s, err := reg.New(context.Background(), Type, "gcs-test", cfg, sinks.Deps{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s.(*Sink)
}

// inspect reads the bucket the way a person would: BOM objects (each checked
// against its name), the latest object (checked against its metadata) and
// the tombstone marker.
func inspect(t *testing.T, srv *gcstest.Server) func(*testing.T, sinks.Sink, schemas.Workload) sinktest.Stored {
	return func(t *testing.T, ss sinks.Sink, w schemas.Workload) sinktest.Stored {
		t.Helper()
		s := ss.(*Sink)
		p, err := s.WorkloadPaths(w)
		if err != nil {
			t.Fatal(err)
		}
		var st sinktest.Stored
		for _, o := range srv.Objects(t, p.Dir+"/") {
			switch {
			case o.Name == p.Latest:
				if got := schemas.BomHash(o.Content); got != o.Metadata[MetaBomHash] {
					t.Errorf("%s holds bytes hashing to %s but its metadata says %s", o.Name, got, o.Metadata[MetaBomHash])
				}
				st.Latest = o.Metadata[MetaBomHash]
			case o.Name == p.Tombstone:
				st.Tombstoned = true
			case strings.HasSuffix(o.Name, ".cdx.json"):
				if want := s.BOMObject(p, schemas.BomHash(o.Content)); want != o.Name {
					t.Errorf("%s holds the BOM that belongs at %s", o.Name, want)
				}
				st.BOMs++
			default:
				t.Errorf("unexpected object %s", o.Name)
			}
		}
		return st
	}
}

func TestConformance(t *testing.T) {
	srv := gcstest.Start(t, "boms")
	escape := sinktest.NewBOM(sinktest.Workload(".."), 1)
	n := 0
	sinktest.Run(t, func(t *testing.T) sinks.Sink {
		n++ // each subtest in its own prefix
		return newSink(t, srv, fmt.Sprintf("run-%d", n), nil)
	}, sinktest.Options{
		Inspect: inspect(t, srv),
		Outage: func(_ *testing.T, _ sinks.Sink, down bool) {
			if !down {
				srv.SetFault(nil)
				return
			}
			srv.SetFault(func(*http.Request) int { return http.StatusServiceUnavailable })
		},
		Type:              SinkType,
		Config:            srv.Config("config"),
		Invalid:           []sinks.BOM{escape},
		InvalidTombstones: []sinks.Tombstone{sinktest.NewTombstone(sinktest.Workload("a/b"), 2), {Workload: sinktest.Workload("x"), Reason: "bored", ChangeSeq: 3}},
	})
}

func TestObjectsAndMetadata(t *testing.T) {
	srv := gcstest.Start(t, "boms")
	s := newSink(t, srv, "prod/", nil)
	w := sinktest.Workload("chat")
	b := sinktest.NewBOM(w, 7)
	if err := s.Export(context.Background(), b); err != nil {
		t.Fatal(err)
	}
	hex := strings.TrimPrefix(b.BomHash, "sha256:")
	dir := "prod/dev/ml/Deployment/chat"
	objs := srv.Objects(t, "")
	if len(objs) != 2 || objs[0].Name != dir+"/"+hex+".cdx.json" || objs[1].Name != dir+"/latest.cdx.json" {
		t.Fatalf("objects %v, want %s/%s.cdx.json and %s/latest.cdx.json", names(objs), dir, hex, dir)
	}
	want := map[string]string{
		"bomHash": b.BomHash, "inputHash": b.InputHash, "workload": "dev/ml/Deployment/chat", "uid": w.UID,
		"changeSeq": "7", "streamSeq": "7", "time": "2026-01-02T03:04:12Z",
	}
	for _, o := range objs {
		if string(o.Content) != string(b.Body) {
			t.Errorf("%s: content differs from the BOM", o.Name)
		}
		if o.ContentType != ContentType {
			t.Errorf("%s: content type %q", o.Name, o.ContentType)
		}
		if fmt.Sprint(o.Metadata) != fmt.Sprint(want) {
			t.Errorf("%s: metadata %v, want %v", o.Name, o.Metadata, want)
		}
	}
}

func TestPathTemplate(t *testing.T) {
	srv := gcstest.Start(t, "boms")
	s := newSink(t, srv, "", map[string]any{"pathTemplate": "by-uid/{cluster}/{uid}/bom-{bomHash}.json"})
	w := sinktest.Workload("chat")
	w.Namespace = "" // cluster-scoped
	b := sinktest.NewBOM(w, 1)
	if err := s.Export(context.Background(), b); err != nil {
		t.Fatal(err)
	}
	if err := s.Tombstone(context.Background(), sinktest.NewTombstone(w, 2)); err != nil {
		t.Fatal(err)
	}
	dir := "by-uid/dev/" + w.UID
	got := names(srv.Objects(t, ""))
	want := []string{dir + "/bom-" + strings.TrimPrefix(b.BomHash, "sha256:") + ".json", dir + "/latest.cdx.json", dir + "/tombstone.json"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("objects %v, want %v", got, want)
	}
	// The default template with no prefix and a cluster-scoped workload.
	s = newSink(t, srv, "", nil)
	if err := s.Export(context.Background(), b); err != nil {
		t.Fatal(err)
	}
	if _, err := srv.Fake.GetObject("boms", "dev/_/Deployment/chat/latest.cdx.json"); err != nil {
		t.Fatalf("default template: %v (objects %v)", err, names(srv.Objects(t, "dev/")))
	}
}

// With a folder per uid, the runner's order flags, which are about names,
// are not about the folder: the late tombstone of a workload deleted and
// re-created under its name retires the old workload's folder.
func TestFolderPerUIDIgnoresNameOrder(t *testing.T) {
	srv := gcstest.Start(t, "boms")
	s := newSink(t, srv, "", map[string]any{"pathTemplate": "{cluster}/{uid}/{bomHash}.cdx.json"})
	ctx := context.Background()
	old, recreated := sinktest.Workload("chat"), sinktest.Workload("chat")
	recreated.UID = "uid-new"
	if err := s.Export(ctx, sinktest.NewBOM(old, 10)); err != nil {
		t.Fatal(err)
	}
	if err := s.Export(ctx, sinktest.NewBOM(recreated, 30)); err != nil {
		t.Fatal(err)
	}
	ts := sinktest.NewTombstone(old, 20)
	ts.Stale = true // the runner applied change 30 of the name first
	if err := s.Tombstone(ctx, ts); err != nil {
		t.Fatal(err)
	}
	if st := inspect(t, srv)(t, s, old); !st.Tombstoned {
		t.Fatalf("the old workload's folder: %+v, want it tombstoned", st)
	}
	if st := inspect(t, srv)(t, s, recreated); st.Tombstoned {
		t.Fatalf("the re-created workload's folder: %+v, want it current", st)
	}
}

// The first attempt's writes reach the bucket but their answers are lost:
// the retry meets 412 on the immutable object, finds the same BOM there and
// succeeds without writing it again.
func TestRetryAfterLostResponse(t *testing.T) {
	srv := gcstest.Start(t, "boms")
	s := newSink(t, srv, "", nil)
	ctx := context.Background()
	b := sinktest.NewBOM(sinktest.Workload("chat"), 1)
	srv.LoseResponses(1)
	err := s.Export(ctx, b)
	if err == nil || sinks.IsPermanent(err) {
		t.Fatalf("first attempt: %v, want a transient error", err)
	}
	if err := s.Export(ctx, b); err != nil {
		t.Fatalf("retry: %v", err)
	}
	if got := srv.Writes(); got != 2 {
		t.Fatalf("%d writes, want 2 (the BOM once, latest once)", got)
	}
	if st := inspect(t, srv)(t, s, b.Workload); st.BOMs != 1 || st.Latest != b.BomHash {
		t.Fatalf("got %+v", st)
	}
}

func TestOtherContentAtBOMNameIsPermanent(t *testing.T) {
	srv := gcstest.Start(t, "boms")
	s := newSink(t, srv, "", nil)
	b := sinktest.NewBOM(sinktest.Workload("chat"), 1)
	p, _ := s.WorkloadPaths(b.Workload)
	srv.Fake.CreateObject(fakeObject(srv.Bucket, s.BOMObject(p, b.BomHash), []byte(`{"other":true}`)))
	err := s.Export(context.Background(), b)
	if !sinks.IsPermanent(err) || !strings.Contains(err.Error(), "other content") {
		t.Fatalf("got %v, want a permanent error about other content", err)
	}
}

func TestTombstones(t *testing.T) {
	srv := gcstest.Start(t, "boms")
	s := newSink(t, srv, "", nil)
	ctx := context.Background()
	w := sinktest.Workload("chat")
	p, _ := s.WorkloadPaths(w)

	// Nothing exported: nothing to mark.
	if err := s.Tombstone(ctx, sinktest.NewTombstone(w, 5)); err != nil {
		t.Fatal(err)
	}
	if objs := srv.Objects(t, ""); len(objs) != 0 {
		t.Fatalf("a tombstone of a never-exported workload wrote %v", names(objs))
	}

	if err := s.Export(ctx, sinktest.NewBOM(w, 10)); err != nil {
		t.Fatal(err)
	}
	ts := sinktest.NewTombstone(w, 20)
	ts.Reason = sinks.ReasonNotServing
	if err := s.Tombstone(ctx, ts); err != nil {
		t.Fatal(err)
	}
	writes := srv.Writes()
	if err := s.Tombstone(ctx, ts); err != nil {
		t.Fatal(err)
	}
	if srv.Writes() != writes {
		t.Fatal("a repeated tombstone wrote again")
	}
	o, err := srv.Fake.GetObject(srv.Bucket, p.Tombstone)
	if err != nil {
		t.Fatal(err)
	}
	var m marker
	if err := json.Unmarshal(o.Content, &m); err != nil {
		t.Fatal(err)
	}
	if m.Reason != "not-serving" || m.ChangeSeq != 20 || m.Workload != w.String() || m.UID != w.UID || !m.Time.Equal(ts.Time) {
		t.Fatalf("marker %+v", m)
	}
	if o.Metadata[MetaReason] != "not-serving" || o.Metadata[MetaChangeSeq] != "20" || o.Metadata[MetaWorkload] != w.String() {
		t.Fatalf("marker metadata %v", o.Metadata)
	}

	// A newer deletion replaces the marker.
	if err := s.Tombstone(ctx, sinktest.NewTombstone(w, 25)); err != nil {
		t.Fatal(err)
	}
	o, _ = srv.Fake.GetObject(srv.Bucket, p.Tombstone)
	if o.Metadata[MetaReason] != "deleted" || o.Metadata[MetaChangeSeq] != "25" {
		t.Fatalf("marker metadata after a newer tombstone %v", o.Metadata)
	}
}

// A full replay, every BOM and tombstone exported again in order, as the
// runner passes them when it ignores its ledger (all but a workload's last
// version marked superseded or stale), writes no object: counted on the
// server, and every object keeps its generation.
func TestReplayWritesNothing(t *testing.T) {
	srv := gcstest.Start(t, "boms")
	s := newSink(t, srv, "replay", nil)
	ctx := context.Background()
	var history []step
	seq := uint64(0)
	for i := range 20 {
		w := sinktest.Workload(fmt.Sprintf("w-%d", i))
		for range 3 {
			seq++
			b := sinktest.NewBOM(w, seq)
			history = append(history, step{b: &b})
		}
		if i%4 == 0 {
			seq++
			ts := sinktest.NewTombstone(w, seq)
			history = append(history, step{ts: &ts})
		}
	}
	play := func(again bool) {
		for i, st := range history {
			older := again && i+1 < len(history) && (history[i+1].b != nil && history[i+1].b.Workload == st.workload() ||
				history[i+1].ts != nil && history[i+1].ts.Workload == st.workload())
			var err error
			if st.b != nil {
				b := *st.b
				b.Superseded = older
				err = s.Export(ctx, b)
			} else {
				ts := *st.ts
				ts.Stale = older
				err = s.Tombstone(ctx, ts)
			}
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	play(false)
	before, writes := srv.Objects(t, ""), srv.Writes()
	// 60 BOMs, 20 latest objects moved 3 times each, 5 tombstones.
	if len(before) != 60+20+5 || writes != 60+60+5 {
		t.Fatalf("first run: %d objects, %d writes, want 85 and 125", len(before), writes)
	}
	play(true)
	if got := srv.Writes() - writes; got != 0 {
		t.Fatalf("the replay wrote %d objects", got)
	}
	after := srv.Objects(t, "")
	if len(after) != len(before) {
		t.Fatalf("%d objects after the replay, %d before", len(after), len(before))
	}
	for i := range after {
		if after[i].Name != before[i].Name || after[i].Generation != before[i].Generation {
			t.Fatalf("%s generation %d became %s generation %d", before[i].Name, before[i].Generation, after[i].Name, after[i].Generation)
		}
	}
}

func TestErrorsAreClassified(t *testing.T) {
	srv := gcstest.Start(t, "boms")
	ctx := context.Background()
	w := sinktest.Workload("chat")
	for _, c := range []struct {
		name      string
		status    int
		permanent bool
		want      string
	}{
		{"unauthorized", http.StatusUnauthorized, true, "credentials rejected"},
		{"forbidden", http.StatusForbidden, true, "needs storage.objects.create on bucket boms (grant roles/storage.objectUser)"},
		{"bad request", http.StatusBadRequest, true, "rejected (400"},
		{"rate limited", http.StatusTooManyRequests, false, "429"},
		{"unavailable", http.StatusServiceUnavailable, false, "503"},
		{"internal", http.StatusInternalServerError, false, "500"},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := newSink(t, srv, c.name, nil)
			srv.FailNext(c.status)
			err := s.Export(ctx, sinktest.NewBOM(w, 1))
			if err == nil || sinks.IsPermanent(err) != c.permanent || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v (permanent %v), want permanent=%v and %q", err, sinks.IsPermanent(err), c.permanent, c.want)
			}
		})
	}
	t.Run("forbidden read", func(t *testing.T) {
		s := newSink(t, srv, "forbidden-read", nil)
		srv.SetFault(func(r *http.Request) int {
			if r.Method == http.MethodGet {
				return http.StatusForbidden
			}
			return 0
		})
		defer srv.SetFault(nil)
		err := s.Export(ctx, sinktest.NewBOM(w, 1))
		if !sinks.IsPermanent(err) || !strings.Contains(err.Error(), "needs storage.objects.get") {
			t.Fatalf("got %v", err)
		}
	})
	t.Run("missing bucket", func(t *testing.T) {
		raw := srv.Config("")
		raw["bucket"] = "nope"
		s := newSinkRaw(t, raw)
		err := s.Export(ctx, sinktest.NewBOM(w, 1))
		if !sinks.IsPermanent(err) || !strings.Contains(err.Error(), "bucket nope not found") {
			t.Fatalf("got %v", err)
		}
	})
	t.Run("timeout", func(t *testing.T) {
		s := newSink(t, srv, "timeout", nil)
		srv.SetFault(func(r *http.Request) int {
			// Read the body, so that the server notices the client leave.
			_, _ = io.Copy(io.Discard, r.Body)
			select {
			case <-r.Context().Done():
			case <-time.After(5 * time.Second):
			}
			return http.StatusServiceUnavailable
		})
		defer srv.SetFault(nil)
		tctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
		defer cancel()
		err := s.Export(tctx, sinktest.NewBOM(w, 1))
		if err == nil || sinks.IsPermanent(err) || !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("got %v, want a transient error wrapping the deadline", err)
		}
	})
	t.Run("server gone", func(t *testing.T) {
		raw := srv.Config("")
		raw["endpoint"] = "http://127.0.0.1:1/storage/v1/"
		s := newSinkRaw(t, raw)
		err := s.Export(ctx, sinktest.NewBOM(w, 1))
		if err == nil || sinks.IsPermanent(err) {
			t.Fatalf("got %v, want a transient error", err)
		}
	})
}

func newSinkRaw(t *testing.T, raw map[string]any) *Sink {
	t.Helper()
	reg := sinks.Registry{Type: SinkType}
	cfg, err := reg.Decode(Type, raw)
	if err != nil {
		t.Fatal(err)
	}
	s, err := reg.New(context.Background(), Type, "", cfg, sinks.Deps{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s.(*Sink)
}

func TestCheck(t *testing.T) {
	srv := gcstest.Start(t, "boms")
	ctx := context.Background()
	s := newSink(t, srv, "pre", nil)
	for _, c := range s.Check(ctx) {
		if c.Err != nil {
			t.Errorf("%s: %v", c.Name, c.Err)
		}
	}
	if objs := srv.Objects(t, ""); len(objs) != 0 {
		t.Fatalf("the check left %v", names(objs))
	}

	srv.FailNext(http.StatusForbidden)
	cs := s.Check(ctx)
	if len(cs) != 3 || cs[0].Err == nil || !strings.Contains(cs[0].Err.Error(), "needs storage.objects.create on bucket boms (grant roles/storage.objectUser)") || cs[1].Err == nil {
		t.Fatalf("forbidden: %v", cs)
	}

	srv.SetFault(func(r *http.Request) int {
		if r.Method == http.MethodDelete {
			return http.StatusForbidden
		}
		return 0
	})
	cs = s.Check(ctx)
	srv.SetFault(nil)
	if cs[0].Err != nil || cs[1].Err != nil || cs[2].Err == nil || !strings.Contains(cs[2].Err.Error(), "storage.objects.delete") {
		t.Fatalf("delete forbidden: %v", cs)
	}

	raw := srv.Config("")
	raw["bucket"] = "missing"
	cs = newSinkRaw(t, raw).Check(ctx)
	if cs[0].Err == nil || !strings.Contains(cs[0].Err.Error(), "bucket missing not found") {
		t.Fatalf("missing bucket: %v", cs)
	}
}

func TestConfig(t *testing.T) {
	reg := sinks.Registry{Type: SinkType}
	for _, c := range []struct {
		raw  map[string]any
		want string
	}{
		{map[string]any{}, "bucket: required"},
		{map[string]any{"bucket": "gs://b"}, "bucket: \"gs://b\" is not a bucket name"},
		{map[string]any{"bucket": "bkt", "bukcet": "x"}, `unknown key "bukcet" (known: anonymous, attest, bucket, credentialsFile, endpoint, pathTemplate, prefix)`},
		{map[string]any{"bucket": "bkt", "prefix": "a//b"}, "prefix:"},
		{map[string]any{"bucket": "bkt", "endpoint": "localhost:4443"}, "endpoint:"},
		{map[string]any{"bucket": "bkt", "endpoint": "http://u:p@h/"}, "endpoint: must not carry credentials"},
		{map[string]any{"bucket": "bkt", "anonymous": true, "credentialsFile": "/k.json"}, "anonymous and credentialsFile"},
		{map[string]any{"bucket": "bkt", "pathTemplate": "{prefix}/{name}/{bomHash}.json"}, "pathTemplate: "},
		{map[string]any{"bucket": "bkt", "pathTemplate": "{cluster}/{namespace}/{kind}/{name}/latest.json"}, "must hold {bomHash}"},
		{map[string]any{"bucket": "bkt", "pathTemplate": "{cluster}/{bomHash}/{namespace}/{kind}/{name}/{bomHash}"}, "only appear in the last segment"},
		{map[string]any{"bucket": "bkt", "pathTemplate": "{uid}/{hash}.json"}, "unknown placeholder {hash}"},
		{map[string]any{"bucket": "bkt", "pathTemplate": "{uid}.{bomHash}"}, "has no folder"},
	} {
		_, err := reg.Decode(Type, c.raw)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: got %v, want %q", c.raw, err, c.want)
		}
	}
	if _, err := reg.Decode(Type, map[string]any{"bucket": "bkt", "pathTemplate": "{uid}/{bomHash}"}); err != nil {
		t.Errorf("a {uid} folder: %v", err)
	}

	dir := t.TempDir()
	key := filepath.Join(dir, "key.json")
	if err := os.WriteFile(key, []byte(`{"type":"mystery","private_key":"s3cr3t"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	notJSON := filepath.Join(dir, "bad.json")
	if err := os.WriteFile(notJSON, []byte(`private_key=s3cr3t`), 0o600); err != nil {
		t.Fatal(err)
	}
	for file, want := range map[string]string{
		filepath.Join(dir, "none.json"): "credentialsFile " + filepath.Join(dir, "none.json") + ": no such file",
		key:                             `unknown credentials type "mystery"`,
		notJSON:                         "not a JSON credentials file",
	} {
		cfg, err := reg.Decode(Type, map[string]any{"bucket": "bkt", "credentialsFile": file})
		if err != nil {
			t.Fatal(err)
		}
		_, err = reg.New(context.Background(), Type, "g", cfg, sinks.Deps{})
		if err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "s3cr3t") {
			t.Errorf("%s: got %v, want %q and no secret", file, err, want)
		}
	}
}

func fakeObject(bucket, name string, content []byte) fakestorage.Object {
	return fakestorage.Object{ObjectAttrs: fakestorage.ObjectAttrs{BucketName: bucket, Name: name}, Content: content}
}

func TestNoCredentials(t *testing.T) {
	t.Setenv("GOOGLE_APPLICATION_CREDENTIALS", filepath.Join(t.TempDir(), "absent.json"))
	_, err := New(context.Background(), Config{Bucket: "bkt"}, sinks.Deps{})
	if err == nil || !strings.Contains(err.Error(), "no usable Google credentials (set credentialsFile") {
		t.Fatalf("got %v", err)
	}
}

// step is one version of a history: a BOM or a tombstone.
type step struct {
	b  *sinks.BOM
	ts *sinks.Tombstone
}

func (s step) workload() schemas.Workload {
	if s.b != nil {
		return s.b.Workload
	}
	return s.ts.Workload
}

func names(objs []gcstest.Object) []string {
	out := make([]string, len(objs))
	for i, o := range objs {
		out[i] = o.Name
	}
	return out
}
