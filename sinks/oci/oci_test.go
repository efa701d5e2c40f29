package oci

import (
	"context"
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/bomstream/bomstream/schemas"
	"github.com/bomstream/bomstream/sinks"
	"github.com/bomstream/bomstream/sinks/oci/ocitest"
	"github.com/bomstream/bomstream/sinks/sinktest"
)

// newSink builds a sink through the registry, as the process does, from
// reg's config block plus extra keys.
func newSink(t testing.TB, reg *ocitest.Registry, extra map[string]any, deps sinks.Deps) *Sink {
	t.Helper()
	raw := reg.Config(t)
	maps.Copy(raw, extra)
	s, err := fromConfig(raw, deps)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func fromConfig(raw map[string]any, deps sinks.Deps) (*Sink, error) {
	r := sinks.Registry{Type: SinkType}
	cfg, err := r.Decode(Type, raw)
	if err != nil {
		return nil, err
	}
	s, err := r.New(context.Background(), Type, "oci-test", cfg, deps)
	if err != nil {
		return nil, err
	}
	return s.(*Sink), nil
}

// withImages returns b with the given images.
func withImages(b sinks.BOM, imgs ...schemas.ImageDigest) sinks.BOM {
	b.Images = imgs
	return b
}

// referrers lists the BOM referrers of img in repo, as another client sees them.
func referrers(t *testing.T, reg *ocitest.Registry, repo string, img schemas.ImageDigest) []ocispec.Descriptor {
	t.Helper()
	var out []ocispec.Descriptor
	for _, d := range reg.Referrers(t, repo, img.Digest, ArtifactType) {
		out = append(out, ocispec.Descriptor{MediaType: string(d.MediaType), ArtifactType: d.ArtifactType, Digest: digestOf(d.Digest.String()), Size: d.Size, Annotations: d.Annotations})
	}
	return out
}

// inspect reports the referrers of the test image that belong to w: one
// BOM each, the latest being the one created last.
func inspect(reg *ocitest.Registry, img schemas.ImageDigest) func(*testing.T, sinks.Sink, schemas.Workload) sinktest.Stored {
	return func(t *testing.T, _ sinks.Sink, w schemas.Workload) sinktest.Stored {
		t.Helper()
		var st sinktest.Stored
		var latest time.Time
		for _, d := range referrers(t, reg, "app", img) {
			if d.Annotations[AnnotationWorkload] != w.String() {
				continue
			}
			st.BOMs++
			created, err := time.Parse(time.RFC3339Nano, d.Annotations[AnnotationCreated])
			if err != nil {
				t.Fatalf("referrer %s: created: %v", d.Digest, err)
			}
			if st.Latest == "" || created.After(latest) {
				st.Latest, latest = d.Annotations[AnnotationBomHash], created
			}
		}
		return st
	}
}

func TestConformance(t *testing.T) {
	for _, k := range ocitest.Kinds {
		t.Run(string(k), func(t *testing.T) {
			reg := ocitest.Start(t, k, ocitest.Options{})
			img := reg.PushImage(t, "app", "v1")
			missing := withImages(sinktest.NewBOM(sinktest.Workload("missing"), 1), schemas.ImageDigest{Image: img.Image, Digest: "sha256:" + hex64('0')})
			sinktest.Run(t, func(t *testing.T) sinks.Sink {
				// checkRegistries: Check has a registry to look at before BOMs arrive.
				return newSink(t, reg, map[string]any{"checkRegistries": []any{reg.Host}}, sinks.Deps{})
			}, sinktest.Options{
				Inspect:    inspect(reg, img),
				Outage:     func(_ *testing.T, _ sinks.Sink, down bool) { reg.SetDown(down) },
				Type:       SinkType,
				Config:     reg.Config(t),
				PrepareBOM: func(_ *testing.T, b sinks.BOM) sinks.BOM { return withImages(b, img) },
				// A referrer records which BOM an image had in a workload at
				// a time, which stays true when the workload is gone; a
				// tombstone names no image, and writes nothing.
				TombstonesNotStored: true,
				Invalid:             []sinks.BOM{missing},
				InvalidTombstones:   []sinks.Tombstone{{Workload: sinktest.Workload("x"), Reason: "bored", ChangeSeq: 1}},
			})
		})
	}
}

// Every BOM is exactly one referrer of the image with the CycloneDX
// artifactType, found by another client; re-pushing writes nothing.
func TestOneReferrerPerBOM(t *testing.T) {
	for _, k := range ocitest.Kinds {
		t.Run(string(k), func(t *testing.T) {
			reg := ocitest.Start(t, k, ocitest.Options{})
			img := reg.PushImage(t, "app", "v1")
			s := newSink(t, reg, nil, sinks.Deps{})
			ctx := context.Background()
			boms := []sinks.BOM{
				withImages(sinktest.NewBOM(sinktest.Workload("chat"), 1), img),
				withImages(sinktest.NewBOM(sinktest.Workload("chat"), 2), img),
				withImages(sinktest.NewBOM(sinktest.Workload("embed"), 3), img),
			}
			for _, b := range boms {
				if err := s.Export(ctx, b); err != nil {
					t.Fatal(err)
				}
			}
			got := referrers(t, reg, "app", img)
			if len(got) != len(boms) {
				t.Fatalf("%d referrers, want %d: %+v", len(got), len(boms), got)
			}
			subject := ocispec.Descriptor{Digest: digestOf(img.Digest)}
			for _, b := range boms {
				_, want := Manifest(b, s.cachedSubject(t, img))
				var d *ocispec.Descriptor
				for i := range got {
					if got[i].Digest == want.Digest {
						d = &got[i]
					}
				}
				if d == nil {
					t.Fatalf("BOM %d: artifact %s not among the referrers", b.ChangeSeq, want.Digest)
				}
				if d.ArtifactType != ArtifactType || d.Annotations[AnnotationBomHash] != b.BomHash ||
					d.Annotations[AnnotationWorkload] != b.Workload.String() || d.Annotations[AnnotationCreated] != b.Time.UTC().Format(time.RFC3339) {
					t.Errorf("referrer %+v", *d)
				}
				var m ocispec.Manifest
				if err := json.Unmarshal(reg.Fetch(t, "app", want.Digest.String(), true), &m); err != nil {
					t.Fatal(err)
				}
				if m.Subject == nil || m.Subject.Digest != subject.Digest || len(m.Layers) != 1 || m.Layers[0].Digest.String() != b.BomHash {
					t.Errorf("manifest %+v", m)
				}
				if body := reg.Fetch(t, "app", b.BomHash, false); string(body) != string(b.Body) {
					t.Errorf("the BOM layer holds %q", body)
				}
			}
			// The tag schema where there is no referrers API, and only there.
			tag := "sha256-" + strings.TrimPrefix(img.Digest, "sha256:")
			if has := reg.HasTag(t, "app", tag); has == reg.ReferrersAPI {
				t.Errorf("referrers tag %s present: %v, referrers API: %v", tag, has, reg.ReferrersAPI)
			}

			writes := reg.Writes()
			for _, b := range boms {
				if err := s.Export(ctx, b); err != nil {
					t.Fatal(err)
				}
			}
			// A new sink, as after a restart, knows nothing the registry does not.
			s2 := newSink(t, reg, nil, sinks.Deps{})
			for _, b := range boms {
				if err := s2.Export(ctx, b); err != nil {
					t.Fatal(err)
				}
			}
			if got := reg.Writes() - writes; got != 0 {
				t.Fatalf("re-pushing wrote %d times", got)
			}
			if got := referrers(t, reg, "app", img); len(got) != len(boms) {
				t.Fatalf("%d referrers after re-pushing, want %d", len(got), len(boms))
			}
		})
	}
}

// cachedSubject is the subject descriptor the sink resolved for img.
func (s *Sink) cachedSubject(t *testing.T, img schemas.ImageDigest) ocispec.Descriptor {
	t.Helper()
	src, err := imageRepository(img.Image)
	if err != nil {
		t.Fatal(err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	d, ok := s.subjects[src.Registry+"/"+src.Repository+"@"+img.Digest]
	if !ok {
		t.Fatalf("subject %s not resolved", img.Digest)
	}
	return d
}

// With repository set, artifacts go there, still as referrers of the
// image's digest.
func TestRepositoryOption(t *testing.T) {
	for _, k := range ocitest.Kinds {
		t.Run(string(k), func(t *testing.T) {
			reg := ocitest.Start(t, k, ocitest.Options{})
			img := reg.PushImage(t, "app", "v1")
			s := newSink(t, reg, map[string]any{"repository": reg.Host + "/sboms/all"}, sinks.Deps{})
			b := withImages(sinktest.NewBOM(sinktest.Workload("chat"), 1), img)
			if err := s.Export(context.Background(), b); err != nil {
				t.Fatal(err)
			}
			if got := referrers(t, reg, "sboms/all", img); len(got) != 1 || got[0].Annotations[AnnotationBomHash] != b.BomHash {
				t.Fatalf("referrers in sboms/all: %+v", got)
			}
			if got := referrers(t, reg, "app", img); len(got) != 0 {
				t.Fatalf("referrers in the image's repository: %+v", got)
			}
		})
	}
}

func TestImagesSkippedAndDeduplicated(t *testing.T) {
	reg := ocitest.Start(t, ocitest.Olareg, ocitest.Options{})
	a := reg.PushImage(t, "app", "v1")
	other := reg.PushImage(t, "team/other", "v2")
	metrics := prometheus.NewRegistry()
	core, logs := observer.New(zap.InfoLevel)
	s := newSink(t, reg, nil, sinks.Deps{Metrics: metrics, Log: zap.New(core)})
	b := withImages(sinktest.NewBOM(sinktest.Workload("chat"), 1),
		a,
		schemas.ImageDigest{Image: a.Image, Digest: "docker-pullable://" + strings.TrimSuffix(a.Image, ":v1") + "@" + a.Digest}, // the same, as an imageID
		other,
		schemas.ImageDigest{Image: reg.Host + "/sidecar:1"},
		schemas.ImageDigest{Image: reg.Host + "/bad:1", Digest: "sha256:xyz"},
		schemas.ImageDigest{Image: "Not A Reference", Digest: a.Digest},
	)
	if err := s.Export(context.Background(), b); err != nil {
		t.Fatal(err)
	}
	if got := referrers(t, reg, "app", a); len(got) != 1 {
		t.Errorf("app: %d referrers", len(got))
	}
	if got := referrers(t, reg, "team/other", other); len(got) != 1 {
		t.Errorf("team/other: %d referrers", len(got))
	}
	for reason, want := range map[string]float64{SkipNoDigest: 1, SkipBadDigest: 1, SkipBadReference: 1} {
		c, err := s.m.skipped.GetMetricWithLabelValues(reason)
		if err != nil {
			t.Fatal(err)
		}
		if got := testutil.ToFloat64(c); got != want {
			t.Errorf("skipped %s: %v, want %v", reason, got, want)
		}
	}
	if got := testutil.ToFloat64(s.m.pushed); got != 2 {
		t.Errorf("pushed %v, want 2", got)
	}
	if n, err := testutil.GatherAndCount(metrics, "bomstream_sink_oci_images_skipped_total"); err != nil || n != 3 {
		t.Errorf("registered skip series: %d, %v", n, err)
	}
	skipped := logs.FilterMessage("image skipped: no artifact for it").All()
	if len(skipped) != 3 {
		t.Fatalf("%d skip log lines, want 3", len(skipped))
	}
	for _, e := range skipped {
		if e.ContextMap()["reason"] == "" || e.ContextMap()["workload"] != "dev/ml/Deployment/chat" {
			t.Errorf("log line %v", e.ContextMap())
		}
	}
	// A second sink on the same registerer shares the families.
	if _, err := New(Config{PlainHTTP: true}, sinks.Deps{Name: "second", Metrics: metrics}); err != nil {
		t.Fatal(err)
	}
}

// A registry without the referrers API that refuses deletes: the new
// referrers index is pushed, the old one stays (untagged), and the export
// succeeds with a warning.
func TestTagSchemaWithoutDeletes(t *testing.T) {
	reg := ocitest.Start(t, ocitest.Distribution, ocitest.Options{NoDeletes: true})
	img := reg.PushImage(t, "app", "v1")
	core, logs := observer.New(zap.WarnLevel)
	s := newSink(t, reg, nil, sinks.Deps{Log: zap.New(core)})
	for seq := range uint64(3) {
		if err := s.Export(context.Background(), withImages(sinktest.NewBOM(sinktest.Workload("chat"), seq+1), img)); err != nil {
			t.Fatal(err)
		}
	}
	if got := referrers(t, reg, "app", img); len(got) != 3 {
		t.Fatalf("%d referrers, want 3", len(got))
	}
	if n := logs.FilterMessage("old referrers index left behind").Len(); n != 2 {
		t.Fatalf("%d warnings, want 2 (one per index replaced)", n)
	}
}

func TestTombstoneWritesNothing(t *testing.T) {
	reg := ocitest.Start(t, ocitest.Distribution, ocitest.Options{})
	img := reg.PushImage(t, "app", "v1")
	s := newSink(t, reg, nil, sinks.Deps{})
	w := sinktest.Workload("chat")
	if err := s.Export(context.Background(), withImages(sinktest.NewBOM(w, 1), img)); err != nil {
		t.Fatal(err)
	}
	writes := reg.Writes()
	for _, reason := range []string{sinks.ReasonDeleted, sinks.ReasonNotServing} {
		ts := sinktest.NewTombstone(w, 2)
		ts.Reason = reason
		if err := s.Tombstone(context.Background(), ts); err != nil {
			t.Fatal(err)
		}
	}
	if reg.Writes() != writes || len(referrers(t, reg, "app", img)) != 1 {
		t.Fatal("a tombstone changed the registry")
	}
}

func TestCredentials(t *testing.T) {
	writer := ocitest.User{Name: "ci", Password: "s3cr3t-w"}
	reader := ocitest.User{Name: "viewer", Password: "s3cr3t-r", ReadOnly: true}
	reg := ocitest.Start(t, ocitest.Olareg, ocitest.Options{Users: []ocitest.User{writer, reader}})
	img := reg.PushImage(t, "app", "v1")
	ctx := context.Background()
	bom := func(seq uint64) sinks.BOM { return withImages(sinktest.NewBOM(sinktest.Workload("chat"), seq), img) }

	// reg.Config holds the writer's docker config.
	s := newSink(t, reg, nil, sinks.Deps{})
	if err := s.Export(ctx, bom(1)); err != nil {
		t.Fatal(err)
	}

	dir := t.TempDir()
	for name, c := range map[string]struct {
		raw  map[string]any
		want string
	}{
		"anonymous": {map[string]any{"plainHTTP": true}, "asks for credentials (401): set dockerConfig"},
		"wrong password": {map[string]any{"plainHTTP": true, "dockerConfig": ocitest.WriteDockerConfig(t, filepath.Join(mkdir(t, dir, "wrong")),
			map[string]ocitest.User{reg.Host: {Name: "ci", Password: "s3cr3t-nope"}})}, "rejected the credentials (401): check the auths entry for " + reg.Host},
		"read only": {map[string]any{"plainHTTP": true, "dockerConfig": ocitest.WriteDockerConfig(t, filepath.Join(mkdir(t, dir, "reader")),
			map[string]ocitest.User{reg.Host: reader})}, "denied (403): the credentials for " + reg.Host + " need pull and push access to repository " + reg.Host + "/app"},
	} {
		t.Run(name, func(t *testing.T) {
			s, err := fromConfig(c.raw, sinks.Deps{})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			err = s.Export(ctx, bom(2))
			if !sinks.IsPermanent(err) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v, want a permanent error with %q", err, c.want)
			}
			if strings.Contains(err.Error(), "s3cr3t") {
				t.Fatalf("the error carries a password: %v", err)
			}
		})
	}

	// A rotated docker config is picked up without a restart.
	path := ocitest.WriteDockerConfig(t, mkdir(t, dir, "rotating"), map[string]ocitest.User{reg.Host: {Name: "ci", Password: "old"}})
	s, err := fromConfig(map[string]any{"plainHTTP": true, "dockerConfig": path}, sinks.Deps{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Export(ctx, bom(3)); err == nil {
		t.Fatal("stale credentials accepted")
	}
	ocitest.WriteDockerConfig(t, filepath.Dir(path), map[string]ocitest.User{reg.Host: writer})
	if err := s.Export(ctx, bom(3)); err != nil {
		t.Fatalf("after rotation: %v", err)
	}

	if _, err := fromConfig(map[string]any{"dockerConfig": filepath.Join(dir, "missing.json")}, sinks.Deps{}); err == nil ||
		!strings.Contains(err.Error(), "dockerConfig "+filepath.Join(dir, "missing.json")+": no such file") {
		t.Fatalf("missing docker config: %v", err)
	}
	bad := filepath.Join(dir, "bad.json")
	if err := os.WriteFile(bad, []byte(`{"auths": "s3cr3t`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := fromConfig(map[string]any{"dockerConfig": bad}, sinks.Deps{}); err == nil || strings.Contains(err.Error(), "s3cr3t") {
		t.Fatalf("bad docker config: %v", err)
	}
}

func mkdir(t *testing.T, dir, name string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.MkdirAll(p, 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestTransientErrors(t *testing.T) {
	reg := ocitest.Start(t, ocitest.GGCR, ocitest.Options{})
	img := reg.PushImage(t, "app", "v1")
	s := newSink(t, reg, nil, sinks.Deps{})
	b := withImages(sinktest.NewBOM(sinktest.Workload("chat"), 1), img)
	// A registry that does not answer at all.
	gone := withImages(b, schemas.ImageDigest{Image: "127.0.0.1:1/app:v1", Digest: img.Digest})
	if err := s.Export(context.Background(), gone); err == nil || sinks.IsPermanent(err) {
		t.Fatalf("no registry: %v, want a transient error", err)
	}
	// An image manifest the registry does not have.
	missing := withImages(b, schemas.ImageDigest{Image: img.Image, Digest: "sha256:" + strings.Repeat("0", 64)})
	if err := s.Export(context.Background(), missing); !sinks.IsPermanent(err) || !strings.Contains(err.Error(), "not found") {
		t.Fatalf("missing image: %v, want a permanent error", err)
	}
	// One image fails for good, another for now: a retry may help, so transient.
	mixed := withImages(b, missing.Images[0], gone.Images[0])
	if err := s.Export(context.Background(), mixed); err == nil || sinks.IsPermanent(err) || !strings.Contains(err.Error(), "not found") {
		t.Fatalf("mixed: %v, want a transient error naming both", err)
	}
}

func TestCheck(t *testing.T) {
	writer := ocitest.User{Name: "ci", Password: "pw"}
	reader := ocitest.User{Name: "viewer", Password: "pw", ReadOnly: true}
	reg := ocitest.Start(t, ocitest.Distribution, ocitest.Options{Users: []ocitest.User{writer, reader}})
	ctx := context.Background()
	s := newSink(t, reg, map[string]any{"repository": reg.Host + "/boms"}, sinks.Deps{})
	cs := s.Check(ctx)
	if len(cs) != 3 {
		t.Fatalf("checks %v", cs)
	}
	for _, c := range cs {
		if c.Err != nil {
			t.Errorf("%s: %v", c.Name, c.Err)
		}
	}

	ro := ocitest.WriteDockerConfig(t, t.TempDir(), map[string]ocitest.User{reg.Host: reader})
	s = newSink(t, reg, map[string]any{"repository": reg.Host + "/boms", "dockerConfig": ro}, sinks.Deps{})
	cs = s.Check(ctx)
	if cs[1].Err != nil || cs[2].Err == nil || !strings.Contains(cs[2].Err.Error(), "need pull and push access to repository "+reg.Host+"/boms") {
		t.Fatalf("read-only: %v", cs)
	}

	s, err := fromConfig(map[string]any{"plainHTTP": true, "checkRegistries": []any{reg.Host, "127.0.0.1:1"}}, sinks.Deps{})
	if err != nil {
		t.Fatal(err)
	}
	cs = s.Check(ctx)
	if len(cs) != 2 || cs[0].Err == nil || !strings.Contains(cs[0].Err.Error(), "asks for credentials") || cs[1].Err == nil {
		t.Fatalf("anonymous: %v", cs)
	}

	s, _ = fromConfig(map[string]any{}, sinks.Deps{})
	if cs := s.Check(ctx); len(cs) != 1 || cs[0].Err != nil {
		t.Fatalf("nothing to check: %v", cs)
	}
}

func TestImageParsing(t *testing.T) {
	for image, want := range map[string]string{
		"vllm/vllm-openai:v0.8.5": "registry-1.docker.io/vllm/vllm-openai",
		"busybox":                 "registry-1.docker.io/library/busybox",
		"docker.io/library/nginx:1@sha256:" + hex64('a'): "registry-1.docker.io/library/nginx",
		"nvcr.io/nvidia/ai-dynamo/vllm-runtime:0.8.0":    "nvcr.io/nvidia/ai-dynamo/vllm-runtime",
		"localhost:5000/app":                             "localhost:5000/app",
		"127.0.0.1:5000/team/app:v1":                     "127.0.0.1:5000/team/app",
		"ghcr.io/org/app@sha256:" + hex64('b'):           "ghcr.io/org/app",
	} {
		ref, err := imageRepository(image)
		if err != nil || ref.Registry+"/"+ref.Repository != want {
			t.Errorf("%s: got %v %v, want %s", image, ref, err, want)
		}
	}
	for _, bad := range []string{"", "Upper/Case:1", "host.io/", "a b"} {
		if ref, err := imageRepository(bad); err == nil {
			t.Errorf("%q parsed as %v", bad, ref)
		}
	}
	for in, want := range map[string]string{
		"sha256:" + hex64('c'): "sha256:" + hex64('c'),
		"docker-pullable://vllm/vllm-openai@sha256:" + hex64('d'): "sha256:" + hex64('d'),
		"ghcr.io/org/app@sha256:" + hex64('e'):                    "sha256:" + hex64('e'),
	} {
		got, err := imageDigest(schemas.ImageDigest{Image: "x", Digest: in})
		if err != nil || got.String() != want {
			t.Errorf("%s: got %s %v", in, got, err)
		}
	}
	if _, err := imageDigest(schemas.ImageDigest{Digest: "sha256:abc"}); err == nil {
		t.Error("a short digest parsed")
	}
}

func hex64(c byte) string { return strings.Repeat(string(c), 64) }

func TestManifestIsDeterministic(t *testing.T) {
	b := sinktest.NewBOM(sinktest.Workload("chat"), 1)
	subject := ocispec.Descriptor{MediaType: ocispec.MediaTypeImageManifest, Digest: digestOf("sha256:" + hex64('f')), Size: 500}
	m1, d1 := Manifest(b, subject)
	m2, d2 := Manifest(b, subject)
	if string(m1) != string(m2) || d1.Digest != d2.Digest {
		t.Fatal("two manifests of one BOM differ")
	}
	b.Time = b.Time.Add(time.Second)
	if _, d3 := Manifest(b, subject); d3.Digest == d1.Digest {
		t.Fatal("the event time does not reach the manifest")
	}
	var m map[string]any
	if err := json.Unmarshal(m1, &m); err != nil {
		t.Fatal(err)
	}
	if m["artifactType"] != ArtifactType || m["mediaType"] != ocispec.MediaTypeImageManifest {
		t.Fatalf("manifest %s", m1)
	}
}

func TestConfig(t *testing.T) {
	for _, c := range []struct {
		raw  map[string]any
		want string
	}{
		{map[string]any{"repository": "boms"}, "repository: "},
		{map[string]any{"repository": "reg.io/boms:latest"}, "without tag or digest"},
		{map[string]any{"plainHTTP": "yes please"}, "yes please"},
		{map[string]any{"checkRegistries": []any{"reg.io/x"}}, "checkRegistries[0]"},
	} {
		if _, err := fromConfig(c.raw, sinks.Deps{}); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: got %v, want %q", c.raw, err, c.want)
		}
	}
	if _, err := fromConfig(map[string]any{"repository": "docker.io/org/boms", "checkRegistries": []any{"ghcr.io", "localhost:5000"}}, sinks.Deps{}); err != nil {
		t.Errorf("valid config: %v", err)
	}
}

func TestHTTPSUnlessAsked(t *testing.T) {
	reg := ocitest.Start(t, ocitest.GGCR, ocitest.Options{})
	img := reg.PushImage(t, "app", "v1")
	s, err := fromConfig(map[string]any{}, sinks.Deps{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	err = s.Export(context.Background(), withImages(sinktest.NewBOM(sinktest.Workload("chat"), 1), img))
	if err == nil || !strings.Contains(err.Error(), "https://"+reg.Host) {
		t.Fatalf("got %v, want an HTTPS attempt", err)
	}
}

func digestOf(s string) digest.Digest { return digest.Digest(s) }
