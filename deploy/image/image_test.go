package main

import (
	"archive/tar"
	"bytes"
	"context"
	"debug/elf"
	"encoding/json"
	"errors"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	cdx "github.com/CycloneDX/cyclonedx-go"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/bomstream/bomstream/collector/kube/kubetest"
	"github.com/bomstream/bomstream/schemas"
	"github.com/bomstream/bomstream/schemas/validate"
	"github.com/bomstream/bomstream/sinks/oci/ocitest"
	"github.com/bomstream/bomstream/stream/streamtest"
)

// created is the fixed timestamp of the test builds (SOURCE_DATE_EPOCH).
var created = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

var platforms = []Platform{{"linux", "amd64"}, {"linux", "arm64"}}

// envAllPlatforms makes the second builds (TestReproducible's, the
// bomstream-collector image) cover both platforms as the first does; by
// default they build this machine's only: each platform of each build is a
// link of the whole binary, most of this package's time.
const envAllPlatforms = "BOMSTREAM_IMAGE_ALL_PLATFORMS"

// secondPlatforms are the platforms of the second builds.
func secondPlatforms() []Platform {
	if os.Getenv(envAllPlatforms) != "" {
		return platforms
	}
	return []Platform{{"linux", runtime.GOARCH}}
}

// The builds are shared by the tests, each made once; TestReproducible
// makes a second bomstream image.
var (
	buildRoot            string
	fullBuild, collBuild sharedBuild
)

// sharedBuild is one image build that the tests share.
type sharedBuild struct {
	once sync.Once
	res  *Result
	err  error
}

// get builds the image that configure describes (for both platforms) the
// first time, logs its sizes, and returns it.
func (s *sharedBuild) get(t *testing.T, configure func(*Config)) *Result {
	t.Helper()
	if testing.Short() && os.Getenv("CI") != "true" {
		t.Skip("builds bomstream for two platforms")
	}
	s.once.Do(func() {
		if buildRoot == "" {
			if buildRoot, s.err = os.MkdirTemp("", "bomstream-image-test-"); s.err != nil {
				return
			}
		}
		cfg := testConfig("")
		configure(&cfg)
		start := time.Now()
		s.res, s.err = Build(context.Background(), cfg)
		if s.err == nil {
			var b strings.Builder
			s.res.Print(&b)
			t.Logf("built in %s:\n%s", time.Since(start).Round(time.Second), b.String())
		}
	})
	if s.err != nil {
		t.Fatal(s.err)
	}
	return s.res
}

func TestMain(m *testing.M) {
	code := m.Run()
	if buildRoot != "" {
		os.RemoveAll(buildRoot)
	}
	os.Exit(code)
}

func testConfig(out string) Config {
	return Config{Out: out, Platforms: platforms, Created: created, Revision: "0123456789abcdef0123456789abcdef01234567"}
}

// built is the bomstream image.
func built(t *testing.T) *Result {
	t.Helper()
	return fullBuild.get(t, func(c *Config) { c.Out = filepath.Join(buildRoot, "a", "oci-layout") })
}

// collectorBuilt is the bomstream image and the bomstream-collector image
// (make image's second), built after it, reusing its compiled packages.
func collectorBuilt(t *testing.T) (full, collector *Result) {
	t.Helper()
	full = built(t)
	return full, collBuild.get(t, func(c *Config) {
		c.Out = filepath.Join(buildRoot, "collector", "oci-layout")
		c.Title, c.Tags = "bomstream-collector", "nocloudsinks"
		c.Platforms = secondPlatforms()
	})
}

// topIndex reads the layout's index.json.
func topIndex(t *testing.T, dir string) (v1.ImageIndex, *v1.IndexManifest) {
	t.Helper()
	top, err := layout.ImageIndexFromPath(dir)
	if err != nil {
		t.Fatal(err)
	}
	im, err := top.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	return top, im
}

// images returns the multi-arch index of the layout and its images by platform.
func images(t *testing.T, dir string) (v1.Hash, map[string]v1.Image) {
	t.Helper()
	top, im := topIndex(t, dir)
	var idx v1.ImageIndex
	var idxDigest v1.Hash
	for _, d := range im.Manifests {
		if d.MediaType.IsIndex() {
			if idx != nil {
				t.Fatal("two indexes in index.json")
			}
			var err error
			if idx, err = top.ImageIndex(d.Digest); err != nil {
				t.Fatal(err)
			}
			idxDigest = d.Digest
		}
	}
	if idx == nil {
		t.Fatal("no image index in index.json")
	}
	m, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]v1.Image{}
	for _, d := range m.Manifests {
		if d.Platform == nil {
			t.Fatalf("manifest %s without platform", d.Digest)
		}
		img, err := idx.Image(d.Digest)
		if err != nil {
			t.Fatal(err)
		}
		out[d.Platform.OS+"/"+d.Platform.Architecture] = img
	}
	return idxDigest, out
}

func TestIndexPlatforms(t *testing.T) {
	res := built(t)
	digest, imgs := images(t, res.Out)
	if digest != res.Index {
		t.Errorf("index digest %s, Build said %s", digest, res.Index)
	}
	if len(imgs) != 2 || imgs["linux/amd64"] == nil || imgs["linux/arm64"] == nil {
		t.Fatalf("platforms %v, want linux/amd64 and linux/arm64", slices.Sorted(maps.Keys(imgs)))
	}
	top, im := topIndex(t, res.Out)
	if got := im.Manifests[0].Annotations["org.opencontainers.image.ref.name"]; got != res.Tag || got == "" {
		t.Errorf("ref.name %q, want the tag %q", got, res.Tag)
	}
	// Images are no artifacts: an artifactType on their descriptors is
	// dropped by some copy tools (skopeo 1.9), which changes the digest.
	idx, err := top.ImageIndex(digest)
	if err != nil {
		t.Fatal(err)
	}
	m, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range m.Manifests {
		if d.ArtifactType != "" || d.MediaType != types.OCIManifestSchema1 {
			t.Errorf("index entry %s: media type %s, artifactType %q", d.Digest, d.MediaType, d.ArtifactType)
		}
	}
	for _, pi := range res.Images {
		if pi.Compressed >= 40e6 {
			t.Errorf("%s: compressed layer %d bytes, goal under 40 MB", pi.Platform, pi.Compressed)
		}
	}
}

func TestImageConfig(t *testing.T) {
	res := built(t)
	_, imgs := images(t, res.Out)
	for plat, img := range imgs {
		cf, err := img.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		c := cf.Config
		if c.User != "65532:65532" {
			t.Errorf("%s: user %q, want 65532:65532", plat, c.User)
		}
		if strings.Join(c.Entrypoint, " ") != "/bomstream" || strings.Join(c.Cmd, " ") != "run" {
			t.Errorf("%s: entrypoint %q cmd %q", plat, c.Entrypoint, c.Cmd)
		}
		if c.WorkingDir != "/data" {
			t.Errorf("%s: working dir %q", plat, c.WorkingDir)
		}
		if cf.OS+"/"+cf.Architecture != plat {
			t.Errorf("%s: config says %s/%s", plat, cf.OS, cf.Architecture)
		}
		if !cf.Created.Time.Equal(created) {
			t.Errorf("%s: created %s, want %s", plat, cf.Created.Time, created)
		}
		for k, want := range map[string]string{
			"org.opencontainers.image.created":  "2026-01-02T03:04:05Z",
			"org.opencontainers.image.source":   DefaultSource,
			"org.opencontainers.image.revision": "0123456789abcdef0123456789abcdef01234567",
			"org.opencontainers.image.version":  res.Version,
		} {
			if c.Labels[k] != want {
				t.Errorf("%s: label %s = %q, want %q", plat, k, c.Labels[k], want)
			}
		}
		if ls, _ := img.Layers(); len(ls) != 1 {
			t.Errorf("%s: %d layers, want 1", plat, len(ls))
		}
	}
}

// layerFilesOf reads the headers and the small files of an image's one layer,
// and extracts /bomstream to bin when bin is not empty.
func layerFilesOf(t *testing.T, img v1.Image, bin string) (map[string]*tar.Header, map[string]string) {
	t.Helper()
	ls, err := img.Layers()
	if err != nil || len(ls) != 1 {
		t.Fatalf("layers: %d, %v", len(ls), err)
	}
	rc, err := ls[0].Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	hdrs, text := map[string]*tar.Header{}, map[string]string{}
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		hdrs[h.Name] = h
		switch {
		case h.Name == "bomstream" && bin != "":
			f, err := os.OpenFile(bin, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := io.Copy(f, tr); err != nil {
				t.Fatal(err)
			}
			if err := f.Close(); err != nil {
				t.Fatal(err)
			}
		case strings.HasPrefix(h.Name, "etc/") && h.Typeflag == tar.TypeReg:
			b, err := io.ReadAll(tr)
			if err != nil {
				t.Fatal(err)
			}
			text[h.Name] = string(b)
		}
	}
	return hdrs, text
}

func TestLayerContents(t *testing.T) {
	res := built(t)
	_, imgs := images(t, res.Out)
	for plat, img := range imgs {
		hdrs, text := layerFilesOf(t, img, "")
		var names []string
		for n := range hdrs {
			names = append(names, n)
		}
		if got, want := strings.Join(slices.Sorted(slices.Values(names)), " "), "bomstream data/ etc/ etc/group etc/passwd tmp/"; got != want {
			t.Errorf("%s: layer holds %s, want %s", plat, got, want)
		}
		b := hdrs["bomstream"]
		if b == nil || b.Typeflag != tar.TypeReg || b.Mode != 0o755 || b.Uid != 0 || b.Gid != 0 || b.Size == 0 {
			t.Fatalf("%s: /bomstream header %+v, want a root-owned 0755 file", plat, b)
		}
		if b.Mode&0o002 != 0 {
			t.Errorf("%s: /bomstream writable by others", plat)
		}
		if d := hdrs["data/"]; d == nil || d.Uid != 65532 || d.Gid != 65532 || d.Mode != 0o755 {
			t.Errorf("%s: /data header %+v, want 0755 owned by 65532", plat, d)
		}
		if d := hdrs["tmp/"]; d == nil || d.Mode != 0o1777 {
			t.Errorf("%s: /tmp header %+v, want 1777", plat, d)
		}
		for n, h := range hdrs {
			if !h.ModTime.Equal(created) {
				t.Errorf("%s: %s has time %s, want %s", plat, n, h.ModTime, created)
			}
		}
		if !strings.Contains(text["etc/passwd"], "nonroot:x:65532:65532:") {
			t.Errorf("%s: /etc/passwd has no nonroot 65532:\n%s", plat, text["etc/passwd"])
		}
		if !strings.Contains(text["etc/group"], "nonroot:x:65532:") {
			t.Errorf("%s: /etc/group has no nonroot 65532:\n%s", plat, text["etc/group"])
		}
	}
}

func TestBinaryRuns(t *testing.T) {
	res := built(t)
	_, imgs := images(t, res.Out)
	plat := "linux/" + runtime.GOARCH
	img := imgs[plat]
	if runtime.GOOS != "linux" || (runtime.GOARCH != "amd64" && runtime.GOARCH != "arm64") {
		// CI runs on linux/amd64: there, this test must run.
		if os.Getenv("CI") == "true" {
			t.Fatalf("no image for this machine (%s/%s): CI must run on linux/amd64 or linux/arm64", runtime.GOOS, runtime.GOARCH)
		}
		t.Skipf("no image for this machine (%s/%s)", runtime.GOOS, runtime.GOARCH)
	}
	if img == nil {
		t.Fatalf("the index has no %s image", plat)
	}
	bin := filepath.Join(t.TempDir(), "bomstream")
	layerFilesOf(t, img, bin)
	out, err := exec.Command(bin, "version").CombinedOutput()
	if err != nil {
		t.Fatalf("bomstream version: %v\n%s", err, out)
	}
	if got, want := strings.TrimSpace(string(out)), "bomstream "+res.Version; got != want {
		t.Errorf("bomstream version printed %q, want %q", got, want)
	}
	// Static: no program interpreter (dynamic loader) in the ELF headers.
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Errorf("binary asks for a dynamic loader: not static")
		}
	}
}

// TestReproducible builds the bomstream image again: every platform image
// (binary, layer, config, manifest, SBOM) comes out the same, byte for
// byte; with both platforms rebuilt (BOMSTREAM_IMAGE_ALL_PLATFORMS) the
// index and the whole layout too.
func TestReproducible(t *testing.T) {
	res := built(t)
	start := time.Now()
	cfg := testConfig(filepath.Join(buildRoot, "b", "oci-layout"))
	cfg.Platforms = secondPlatforms()
	again, err := Build(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("second build (%v) in %s: index %s", cfg.Platforms, time.Since(start).Round(time.Second), again.Index)
	first := map[Platform]PlatformImage{}
	for _, pi := range res.Images {
		first[pi.Platform] = pi
	}
	for _, b := range again.Images {
		if a := first[b.Platform]; a != b {
			t.Errorf("%s: first build %+v, second %+v", b.Platform, a, b)
		}
	}
	if len(again.Images) < len(res.Images) {
		t.Logf("index and layout not compared: %s rebuilt only, %s=1 rebuilds every platform", again.Images[0].Platform, envAllPlatforms)
		return
	}
	if again.Index != res.Index {
		t.Errorf("index digest %s, then %s", res.Index, again.Index)
	}
	ia, err := os.ReadFile(filepath.Join(res.Out, "index.json"))
	if err != nil {
		t.Fatal(err)
	}
	ib, err := os.ReadFile(filepath.Join(again.Out, "index.json"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(ia, ib) {
		t.Errorf("index.json differs:\n%s\n%s", ia, ib)
	}
	blobs := func(dir string) []string {
		es, err := os.ReadDir(filepath.Join(dir, "blobs", "sha256"))
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, e := range es {
			out = append(out, e.Name())
		}
		return out
	}
	if a, b := strings.Join(blobs(res.Out), " "), strings.Join(blobs(again.Out), " "); a != b {
		t.Errorf("blobs differ:\n%s\n%s", a, b)
	}
}

// sbomReferrer is one SBOM referrer listed in a layout's index.json.
type sbomReferrer struct {
	desc     v1.Descriptor // its entry in index.json
	manifest *v1.Manifest
	sbom     []byte // the one layer: the CycloneDX document
}

// referrersOf reads the SBOM referrers of the layout in dir, checking the
// shape every one must have.
func referrersOf(t *testing.T, dir string) []sbomReferrer {
	t.Helper()
	top, im := topIndex(t, dir)
	var out []sbomReferrer
	for _, d := range im.Manifests {
		if d.MediaType.IsIndex() {
			continue
		}
		if d.ArtifactType != ArtifactTypeCycloneDX {
			t.Errorf("index.json entry %s has artifactType %q", d.Digest, d.ArtifactType)
			continue
		}
		art, err := top.Image(d.Digest)
		if err != nil {
			t.Fatal(err)
		}
		m, err := art.Manifest()
		if err != nil {
			t.Fatal(err)
		}
		if m.ArtifactType != ArtifactTypeCycloneDX || m.Subject == nil || m.Config.MediaType != ArtifactTypeCycloneDX || m.Config.Size != 2 {
			t.Fatalf("referrer %s: artifactType %q subject %v config %+v", d.Digest, m.ArtifactType, m.Subject, m.Config)
		}
		ls, err := art.Layers()
		if err != nil || len(ls) != 1 {
			t.Fatalf("referrer %s: %d layers, %v", d.Digest, len(ls), err)
		}
		if mt, _ := ls[0].MediaType(); mt != ArtifactTypeCycloneDX {
			t.Errorf("referrer %s: layer media type %s", d.Digest, mt)
		}
		rc, err := ls[0].Compressed()
		if err != nil {
			t.Fatal(err)
		}
		raw, err := io.ReadAll(rc)
		rc.Close()
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, sbomReferrer{desc: d, manifest: m, sbom: raw})
	}
	return out
}

func TestSBOMReferrers(t *testing.T) {
	res := built(t)
	_, imgs := images(t, res.Out)
	v, err := validate.CycloneDX()
	if err != nil {
		t.Fatal(err)
	}
	natsVersion := moduleVersion(t, "github.com/nats-io/nats-server/v2")

	subjects := map[v1.Hash]string{}
	for plat, img := range imgs {
		d, err := img.Digest()
		if err != nil {
			t.Fatal(err)
		}
		subjects[d] = plat
	}
	found := map[string]bool{}
	for _, r := range referrersOf(t, res.Out) {
		d, m, raw := r.desc, r.manifest, r.sbom
		plat, ok := subjects[m.Subject.Digest]
		if !ok {
			t.Fatalf("referrer %s: subject %s is no platform image", d.Digest, m.Subject.Digest)
		}
		found[plat] = true
		if err := v.ValidateBOM(raw); err != nil {
			t.Errorf("%s: %v", plat, err)
		}
		var bom cdx.BOM
		if err := json.Unmarshal(raw, &bom); err != nil {
			t.Fatal(err)
		}
		if bom.SpecVersion != cdx.SpecVersion1_6 {
			t.Errorf("%s: spec version %s", plat, bom.SpecVersion)
		}
		mc := bom.Metadata.Component
		if mc == nil || mc.Type != cdx.ComponentTypeContainer || !strings.Contains(mc.PackageURL, m.Subject.Digest.Hex) {
			t.Errorf("%s: metadata component %+v, want the container %s", plat, mc, m.Subject.Digest)
		}
		want := "pkg:golang/github.com/nats-io/nats-server/v2@" + natsVersion + "?type=module"
		var nats, bin *cdx.Component
		for i, c := range *bom.Components {
			switch {
			case c.PackageURL == want:
				nats = &(*bom.Components)[i]
			case c.Name == "github.com/bomstream/bomstream":
				bin = &(*bom.Components)[i]
			}
		}
		if nats == nil || nats.Version != natsVersion || nats.Hashes == nil || len((*nats.Hashes)[0].Value) != 64 {
			t.Errorf("%s: no component %s with a SHA-256: %+v", plat, want, nats)
		}
		if bin == nil || !strings.Contains(bin.PackageURL, "goarch="+strings.TrimPrefix(plat, "linux/")) {
			t.Errorf("%s: binary component %+v", plat, bin)
		}
		t.Logf("%s: sbom %s (%d bytes, %d components) on %s", plat, d.Digest, len(raw), len(*bom.Components), m.Subject.Digest)
	}
	if !found["linux/amd64"] || !found["linux/arm64"] {
		t.Errorf("SBOM referrers for %v, want linux/amd64 and linux/arm64", slices.Sorted(maps.Keys(found)))
	}
}

// moduleVersion is the version of a module in this build's module graph.
func moduleVersion(t *testing.T, path string) string {
	t.Helper()
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Version}}", path).Output()
	if err != nil {
		t.Fatalf("go list -m %s: %v", path, err)
	}
	return strings.TrimSpace(string(out))
}

// TestPush pushes the layout with --push to the three in-process registries
// of the oci sink's tests: go-containerregistry's and olareg (referrers API)
// and distribution (the referrers tag schema), and finds the index and each
// platform's SBOM there.
func TestPush(t *testing.T) {
	res := built(t)
	for _, reg := range ocitest.StartAll(t, ocitest.Options{}) {
		t.Run(string(reg.Kind), func(t *testing.T) {
			ref := reg.Host + "/bomstream:" + res.Tag
			var pushed strings.Builder
			if err := run(context.Background(), []string{"--push", ref, "--skip-build", "--insecure", "--out", res.Out}, &pushed, func(string) string { return "" }); err != nil {
				t.Fatal(err)
			}
			t.Logf("%s", pushed.String())
			dst, err := name.ParseReference(ref, name.Insecure)
			if err != nil {
				t.Fatal(err)
			}
			idx, err := remote.Index(dst)
			if err != nil {
				t.Fatal(err)
			}
			if d, _ := idx.Digest(); d != res.Index {
				t.Errorf("pushed index %s, built %s", d, res.Index)
			}
			for _, pi := range res.Images {
				refs := reg.Referrers(t, "bomstream", pi.Manifest.String(), ArtifactTypeCycloneDX)
				if len(refs) != 1 || refs[0].Digest != pi.SBOM {
					t.Errorf("%s: referrers %+v, want the SBOM %s", pi.Platform, refs, pi.SBOM)
				}
			}
		})
	}
}

// TestResolve checks the defaults taken from a binary's build info.
func TestResolve(t *testing.T) {
	cfg := Config{}
	resolve(&cfg, &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}})
	if cfg.Version != "dev" || cfg.Tag != "dev" || !cfg.Created.Equal(time.Unix(0, 0)) || cfg.Revision != "" {
		t.Errorf("devel build: %+v", cfg)
	}
	cfg = Config{}
	resolve(&cfg, &debug.BuildInfo{
		Main: debug.Module{Version: "v1.2.3+dirty"},
		Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "abc"}, {Key: "vcs.time", Value: "2026-03-04T05:06:07Z"},
		},
	})
	if cfg.Version != "v1.2.3+dirty" || cfg.Tag != "v1.2.3-dirty" || cfg.Revision != "abc" || cfg.Created.Format(time.RFC3339) != "2026-03-04T05:06:07Z" {
		t.Errorf("stamped build: %+v", cfg)
	}
}

func TestGoPURL(t *testing.T) {
	for in, want := range map[[2]string]string{
		{"github.com/nats-io/nats-server/v2", "v2.15.2"}:  "pkg:golang/github.com/nats-io/nats-server/v2@v2.15.2",
		{"github.com/docker/cli", "v29.7.2+incompatible"}: "pkg:golang/github.com/docker/cli@v29.7.2%2Bincompatible",
		{"std", "go1.26.8"}:     "pkg:golang/std@go1.26.8",
		{"example.com/a b", ""}: "pkg:golang/example.com/a%20b",
	} {
		if got := goPURL(in[0], in[1], ""); got != want {
			t.Errorf("goPURL(%q, %q) = %q, want %q", in[0], in[1], got, want)
		}
	}
	if h1SHA256("h1:K6j46C81hXtZQfuX60cVWQFBJahKSE2gfRbNuvr5bFs=") != "2ba8f8e82f35857b5941fb97eb471559014125a84a484da07d16cdbafaf96c5b" {
		t.Errorf("h1SHA256: %s", h1SHA256("h1:K6j46C81hXtZQfuX60cVWQFBJahKSE2gfRbNuvr5bFs="))
	}
}

func TestRunFlags(t *testing.T) {
	for _, args := range [][]string{
		{"--skip-build"},
		{"--platforms", "windows/amd64"},
		{"--source-date-epoch", "yesterday"},
		{"--title", "Bomstream Collector"},
		{"--title", "../x"},
		{"extra"},
	} {
		if err := run(context.Background(), args, io.Discard, func(string) string { return "" }); err == nil {
			t.Errorf("run %q: no error", args)
		}
	}
}

// The bomstream-collector image is bomstream built with -tags nocloudsinks:
// under the size goal and smaller than the bomstream image, titled as
// itself, its SBOM listing the build tag and none of the cloud clients
// (which the bomstream image's SBOM does list), and its binary refusing a
// cloud sink with a message that says where to find one.
func TestCollectorImage(t *testing.T) {
	full, res := collectorBuilt(t)
	fullOf := map[Platform]PlatformImage{}
	for _, f := range full.Images {
		fullOf[f.Platform] = f
	}
	for _, pi := range res.Images {
		if pi.Compressed >= 40e6 {
			t.Errorf("%s: compressed layer %d bytes, goal under 40 MB", pi.Platform, pi.Compressed)
		}
		if f := fullOf[pi.Platform]; pi.Compressed > f.Compressed*4/5 {
			t.Errorf("%s: collector layer %d bytes, bomstream %d: not a fifth smaller, the build tag did not take", pi.Platform, pi.Compressed, f.Compressed)
		}
	}
	_, im := topIndex(t, res.Out)
	if got := im.Manifests[0].Annotations[annRefName]; got != res.Tag || got != full.Tag {
		t.Errorf("collector tag %q, bomstream %q: want the same", got, full.Tag)
	}
	_, imgs := images(t, res.Out)
	for plat, img := range imgs {
		cf, err := img.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		if got := cf.Config.Labels[annTitle]; got != "bomstream-collector" {
			t.Errorf("%s: title %q", plat, got)
		}
		if strings.Join(cf.Config.Entrypoint, " ") != "/bomstream" || cf.Config.User != "65532:65532" {
			t.Errorf("%s: entrypoint %q user %q", plat, cf.Config.Entrypoint, cf.Config.User)
		}
	}

	v, err := validate.CycloneDX()
	if err != nil {
		t.Fatal(err)
	}
	cloud := []string{"cloud.google.com/go/storage", "github.com/DependencyTrack/client-go", "oras.land/oras-go/v2", "google.golang.org/grpc"}
	modules := func(raw []byte) (*cdx.BOM, map[string]cdx.Component) {
		var bom cdx.BOM
		if err := json.Unmarshal(raw, &bom); err != nil {
			t.Fatal(err)
		}
		byName := map[string]cdx.Component{}
		for _, c := range *bom.Components {
			byName[c.Name] = c
		}
		return &bom, byName
	}
	fullRefs := referrersOf(t, full.Out)
	if len(fullRefs) == 0 {
		t.Fatal("the bomstream image has no SBOM")
	}
	if _, fullMods := modules(fullRefs[0].sbom); len(fullMods) == 0 || fullMods[cloud[0]].Name == "" {
		t.Fatalf("the bomstream image's SBOM lists no %s: the check below would prove nothing", cloud[0])
	}
	refs := referrersOf(t, res.Out)
	if len(refs) != len(res.Images) {
		t.Fatalf("%d SBOM referrers, want one per platform: %d", len(refs), len(res.Images))
	}
	for _, r := range refs {
		if err := v.ValidateBOM(r.sbom); err != nil {
			t.Errorf("sbom %s: %v", r.desc.Digest, err)
		}
		bom, mods := modules(r.sbom)
		if mc := bom.Metadata.Component; mc == nil || mc.Name != "bomstream-collector" || !strings.HasPrefix(mc.PackageURL, "pkg:oci/bomstream-collector@sha256%3A"+r.manifest.Subject.Digest.Hex) {
			t.Errorf("sbom %s: metadata component %+v", r.desc.Digest, mc)
		}
		for _, m := range cloud {
			if _, ok := mods[m]; ok {
				t.Errorf("sbom %s lists %s", r.desc.Digest, m)
			}
		}
		bin, ok := mods["github.com/bomstream/bomstream"]
		if !ok || bin.Properties == nil || !slices.Contains(*bin.Properties, cdx.Property{Name: "bomstream:go:build:-tags", Value: "nocloudsinks"}) {
			t.Errorf("sbom %s: binary component %+v, want the property -tags=nocloudsinks", r.desc.Digest, bin)
		}
	}

	img := imgs["linux/"+runtime.GOARCH]
	if img == nil {
		t.Fatalf("no linux/%s image to run", runtime.GOARCH)
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "bomstream")
	layerFilesOf(t, img, bin)
	if out, err := exec.Command(bin, "version").CombinedOutput(); err != nil || strings.TrimSpace(string(out)) != "bomstream "+res.Version {
		t.Errorf("bomstream version: %v: %s", err, out)
	}
	cfgFile := filepath.Join(dir, "bomstream.yaml")
	if err := os.WriteFile(cfgFile, []byte("cluster: test\nsinks:\n- {name: archive, type: gcs, config: {bucket: b}}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "run", "--config", cfgFile, "--once", "--manifests", dir, "--data-dir", filepath.Join(dir, "data"))
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), `sinks[0].type: unknown sink type "gcs"`) || !strings.Contains(string(out), "bomstream-collector image") {
		t.Errorf("run with a gcs sink: %v, want the configuration refused and the build named:\n%s", err, out)
	}
}

// The bomstream-collector image's binary, run as the chart's collector
// Deployment runs it, watches a real API server and publishes the serving
// Deployment it finds to CHANGES on an external JetStream.
func TestCollectorImageRunsTheCollector(t *testing.T) {
	_, res := collectorBuilt(t)
	_, imgs := images(t, res.Out)
	img := imgs["linux/"+runtime.GOARCH]
	if img == nil {
		t.Fatalf("no linux/%s image to run", runtime.GOARCH)
	}
	bin := filepath.Join(t.TempDir(), "bomstream")
	layerFilesOf(t, img, bin)

	kenv := kubetest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if _, err := kenv.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
		Name: "ml", Labels: map[string]string{"bomstream.dev/enabled": "true"},
	}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	labels := map[string]string{"app": "chat"}
	if _, err := kenv.Client.AppsV1().Deployments("ml").Create(ctx, &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "chat"},
		Spec: appsv1.DeploymentSpec{Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "vllm/vllm-openai:v0.10.1", Args: []string{"--model", "Qwen/Qwen3-0.6B"}}}}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	url := streamtest.StartExternal(t)
	streamtest.WaitJetStream(t, url)

	cmd := exec.Command(bin, "collector", "--cluster", "test", "--nats-url", url, "--kubeconfig", kenv.Kubeconfig, "--http-listen", "127.0.0.1:0")
	cmd.Env = append(os.Environ(), "POD_NAMESPACE=default")
	var logs streamtest.SyncBuffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = cmd.Process.Signal(os.Interrupt)
		_ = cmd.Wait()
	}()

	js := streamtest.Connect(t, url)
	for {
		st, err := js.Stream(ctx, schemas.StreamChanges)
		if err == nil {
			if m, err := st.GetMsg(ctx, 1); err == nil {
				var ev schemas.WorkloadChange
				if err := json.Unmarshal(m.Data, &ev); err != nil {
					t.Fatalf("CHANGES message 1: %v", err)
				}
				if ev.Subject != "ml/Deployment/chat" || ev.Data.Inputs == nil || ev.Data.Workload.Cluster != "test" {
					t.Fatalf("CHANGES message 1: %+v", ev)
				}
				return
			}
		}
		if ctx.Err() != nil {
			t.Fatalf("no change on CHANGES after 2 minutes; collector log:\n%s", logs.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
}
