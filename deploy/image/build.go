package main

import (
	"context"
	"crypto/sha256"
	"debug/buildinfo"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

const (
	// DefaultPackage is the main package the image runs.
	DefaultPackage = "github.com/bomstream/bomstream/cmd/bomstream"
	// DefaultSource is org.opencontainers.image.source.
	DefaultSource = "https://github.com/bomstream/bomstream"
	// DefaultTitle is org.opencontainers.image.title.
	DefaultTitle = "bomstream"

	// The non-root user and group the image runs as.
	uid, gid = 65532, 65532
	// binaryPath is where the binary lives in the image; the entrypoint.
	binaryPath = "/bomstream"
	// workDir is the working directory, owned by the user: the default
	// --data-dir ./bomstream-data lands under it, and the chart mounts its
	// volume there.
	workDir = "/data"

	// ArtifactTypeCycloneDX is the artifactType of the SBOM referrers and the
	// media type of their one layer.
	ArtifactTypeCycloneDX = "application/vnd.cyclonedx+json"

	annCreated  = "org.opencontainers.image.created"
	annVersion  = "org.opencontainers.image.version"
	annRevision = "org.opencontainers.image.revision"
	annSource   = "org.opencontainers.image.source"
	annTitle    = "org.opencontainers.image.title"
	annRefName  = "org.opencontainers.image.ref.name"
)

// titleRE is a path component of an OCI repository name: the title is the
// image's name in its purl and in file names.
var titleRE = regexp.MustCompile(`^[a-z0-9]+(?:[._-][a-z0-9]+)*$`)

// Platform is an os/arch pair the image is built for.
type Platform struct {
	OS, Arch string
}

func (p Platform) String() string { return p.OS + "/" + p.Arch }

// Config says what to build and where to write it. Empty fields take the
// defaults documented on each.
type Config struct {
	// Out is the OCI image layout directory; it is replaced.
	Out string
	// Package is the main package to build; DefaultPackage when empty.
	Package string
	// Tags are the Go build tags of the binary, comma-separated as go build
	// -tags takes them: nocloudsinks for the bomstream-collector image.
	Tags string
	// Title names the image: its org.opencontainers.image.title, and the
	// name and purl of the image in its SBOM; DefaultTitle when empty.
	Title string
	// Platforms to build; linux/amd64 and linux/arm64 when empty.
	Platforms []Platform
	// Created is the one timestamp of the image (config, history, layer
	// files, labels, SBOM). Zero: the binary's vcs.time, else the Unix epoch.
	Created time.Time
	// Version, Revision and Source are the org.opencontainers.image labels.
	// Version defaults to the binary's module version ("dev" for a build
	// without one, as `bomstream version` prints), Revision to its
	// vcs.revision, Source to DefaultSource.
	Version, Revision, Source string
	// Tag is the index's org.opencontainers.image.ref.name in the layout;
	// the version (with '+' as '-') when empty.
	Tag string
	// Go is the go command; "go" when empty.
	Go string
}

// Result is what Build wrote.
type Result struct {
	Out     string
	Index   v1.Hash // the multi-arch index
	Tag     string
	Version string
	Created time.Time
	Images  []PlatformImage // in Config.Platforms order
}

// PlatformImage is one platform's image in the index.
type PlatformImage struct {
	Platform     Platform
	Manifest     v1.Hash // the image manifest, the SBOM's subject
	SBOM         v1.Hash // the referrer manifest holding the SBOM
	Binary       int64   // bytes of /bomstream
	Compressed   int64   // bytes of the gzip layer blob, what a pull moves
	Uncompressed int64   // bytes of the layer tar, what the image takes unpacked
}

// Print writes the index digest and each platform's digests and sizes.
func (r *Result) Print(w io.Writer) {
	fmt.Fprintf(w, "index %s (tag %s, version %s, created %s) in %s\n", r.Index, r.Tag, r.Version, r.Created.Format(time.RFC3339), r.Out)
	for _, im := range r.Images {
		fmt.Fprintf(w, "  %-12s %s  layer %s compressed, %s uncompressed (binary %s); sbom %s\n",
			im.Platform, im.Manifest, size(im.Compressed), size(im.Uncompressed), size(im.Binary), im.SBOM)
	}
}

func size(n int64) string {
	return fmt.Sprintf("%.1f MB (%d bytes)", float64(n)/1e6, n)
}

// withDefaults fills in what cfg leaves unset and checks what it sets.
func (cfg *Config) withDefaults() error {
	if cfg.Out == "" {
		return errors.New("build image: no output directory")
	}
	if cfg.Package == "" {
		cfg.Package = DefaultPackage
	}
	if len(cfg.Platforms) == 0 {
		cfg.Platforms = []Platform{{"linux", "amd64"}, {"linux", "arm64"}}
	}
	if cfg.Source == "" {
		cfg.Source = DefaultSource
	}
	if cfg.Title == "" {
		cfg.Title = DefaultTitle
	}
	if !titleRE.MatchString(cfg.Title) {
		return fmt.Errorf("build image: title %q: want a repository name component (lower-case letters and digits, separated by '.', '_' or '-')", cfg.Title)
	}
	if cfg.Go == "" {
		cfg.Go = "go"
	}
	return nil
}

// Build compiles the binary for each platform, assembles the images, their
// index and their SBOMs, and writes them as an OCI image layout to cfg.Out.
// It needs the Go toolchain and the module's sources, nothing else: no
// daemon, no base image, no network beyond the Go module proxy for a cold
// module cache.
func Build(ctx context.Context, cfg Config) (*Result, error) {
	if err := cfg.withDefaults(); err != nil {
		return nil, err
	}
	tmp, err := os.MkdirTemp("", "bomstream-image-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)

	// The compiles run side by side: most of their time is the linker.
	bins := make([]string, len(cfg.Platforms))
	errs := make([]error, len(cfg.Platforms))
	var wg sync.WaitGroup
	for i, p := range cfg.Platforms {
		bins[i] = filepath.Join(tmp, p.OS+"-"+p.Arch, "bomstream")
		wg.Go(func() {
			errs[i] = compile(ctx, cfg, p, bins[i])
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	bi, err := buildinfo.ReadFile(bins[0])
	if err != nil {
		return nil, fmt.Errorf("read build info of %s: %w", bins[0], err)
	}
	resolve(&cfg, bi)

	res := &Result{Out: cfg.Out, Tag: cfg.Tag, Version: cfg.Version, Created: cfg.Created}
	imgs := make([]v1.Image, len(cfg.Platforms))
	refs := make([]v1.Image, len(cfg.Platforms))
	res.Images = make([]PlatformImage, len(cfg.Platforms))
	for i, p := range cfg.Platforms {
		wg.Go(func() {
			imgs[i], refs[i], errs[i] = platformImage(cfg, p, bins[i], &res.Images[i])
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}

	var idx v1.ImageIndex = mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	for i, p := range cfg.Platforms {
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{
			Add:        plainImage{imgs[i]},
			Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: p.OS, Architecture: p.Arch}},
		})
	}
	idx = mutate.Annotations(idx, labels(cfg)).(v1.ImageIndex)
	if res.Index, err = idx.Digest(); err != nil {
		return nil, fmt.Errorf("index digest: %w", err)
	}
	if err := writeLayout(cfg, idx, refs); err != nil {
		return nil, fmt.Errorf("write layout %s: %w", cfg.Out, err)
	}
	return res, nil
}

// plainImage is an image whose descriptor in an index carries no
// artifactType: go-containerregistry would otherwise set it to the config
// media type, which image-spec reserves for artifacts and which tools with
// an older image-spec (skopeo 1.9) drop, changing the index digest.
type plainImage struct{ v1.Image }

func (plainImage) ArtifactType() (string, error) { return "", nil }

// buildFlags are the go build flags of the binary (the provenance records
// them: the build info does not keep -ldflags of a -trimpath build).
var buildFlags = []string{"-trimpath", "-ldflags=-s -w -buildid="}

// compile builds a static, stripped, path-free binary: the same sources and
// toolchain give the same bytes.
func compile(ctx context.Context, cfg Config, p Platform, out string) error {
	args := append(append([]string{"build"}, buildFlags...), "-tags="+cfg.Tags, "-o", out, cfg.Package)
	cmd := exec.CommandContext(ctx, cfg.Go, args...)
	cmd.Env = append(os.Environ(),
		"CGO_ENABLED=0", "GOOS="+p.OS, "GOARCH="+p.Arch,
		// The baseline instruction sets, whatever the environment says.
		"GOAMD64=v1", "GOARM64=v8.0")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build %s for %s: %w\n%s", cfg.Package, p, err, out)
	}
	return nil
}

// resolve fills the labels and the timestamp the caller left empty from the
// binary's build info.
func resolve(cfg *Config, bi *debug.BuildInfo) {
	settings := map[string]string{}
	for _, s := range bi.Settings {
		settings[s.Key] = s.Value
	}
	if cfg.Version == "" {
		cfg.Version = bi.Main.Version
		if cfg.Version == "" || cfg.Version == "(devel)" {
			cfg.Version = "dev"
		}
	}
	if cfg.Revision == "" {
		cfg.Revision = settings["vcs.revision"]
	}
	if cfg.Created.IsZero() {
		cfg.Created = time.Unix(0, 0)
		if t, err := time.Parse(time.RFC3339, settings["vcs.time"]); err == nil {
			cfg.Created = t
		}
	}
	cfg.Created = cfg.Created.UTC().Truncate(time.Second)
	if cfg.Tag == "" {
		cfg.Tag = strings.ReplaceAll(cfg.Version, "+", "-")
	}
}

// labels are the image's org.opencontainers.image labels, also used as
// annotations of its manifests and index.
func labels(cfg Config) map[string]string {
	l := map[string]string{
		annCreated: cfg.Created.Format(time.RFC3339),
		annVersion: cfg.Version,
		annSource:  cfg.Source,
		annTitle:   cfg.Title,
	}
	if cfg.Revision != "" {
		l[annRevision] = cfg.Revision
	}
	return l
}

// platformImage makes one platform's image from its binary, and the SBOM
// referrer pointing at it.
func platformImage(cfg Config, p Platform, bin string, info *PlatformImage) (img, ref v1.Image, err error) {
	info.Platform = p
	gz := bin + ".layer.tar.gz"
	files, err := writeLayer(gz, bin, cfg.Created)
	if err != nil {
		return nil, nil, fmt.Errorf("layer for %s: %w", p, err)
	}
	info.Binary, info.Uncompressed, info.Compressed = files.binary, files.tarSize, files.gzSize
	layer, err := tarball.LayerFromFile(gz, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, nil, fmt.Errorf("layer for %s: %w", p, err)
	}

	created := v1.Time{Time: cfg.Created}
	tagsNote := ""
	if cfg.Tags != "" {
		tagsNote = ", -tags " + cfg.Tags
	}
	base := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
	img, err = mutate.Append(base, mutate.Addendum{
		Layer:     layer,
		MediaType: types.OCILayer,
		History: v1.History{
			Created:   created,
			CreatedBy: "go run ./deploy/image",
			Comment:   cfg.Title + " " + cfg.Version + " (static" + tagsNote + "), /etc/passwd and /etc/group with user nonroot (65532), /data, /tmp",
		},
	})
	if err != nil {
		return nil, nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, nil, err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture, cf.Created = p.OS, p.Arch, created
	cf.Config = v1.Config{
		User:       fmt.Sprintf("%d:%d", uid, gid),
		Entrypoint: []string{binaryPath},
		Cmd:        []string{"run"},
		WorkingDir: workDir,
		Labels:     labels(cfg),
	}
	if img, err = mutate.ConfigFile(img, cf); err != nil {
		return nil, nil, err
	}
	img = mutate.Annotations(img, labels(cfg)).(v1.Image)

	desc, err := descriptorOf(img)
	if err != nil {
		return nil, nil, err
	}
	info.Manifest = desc.Digest
	bi, err := buildinfo.ReadFile(bin)
	if err != nil {
		return nil, nil, fmt.Errorf("read build info of %s: %w", bin, err)
	}
	sbom, err := imageSBOM(sbomInput{
		Config: cfg, Platform: p, Image: desc.Digest, Build: bi,
		Binary: files.binarySHA256, Files: files.text,
	})
	if err != nil {
		return nil, nil, fmt.Errorf("sbom for %s: %w", p, err)
	}
	ref, err = newReferrer(*desc, ArtifactTypeCycloneDX, sbom,
		fmt.Sprintf("%s-%s-%s.cdx.json", cfg.Title, p.OS, p.Arch), cfg.Created)
	if err != nil {
		return nil, nil, fmt.Errorf("sbom referrer for %s: %w", p, err)
	}
	if info.SBOM, err = ref.Digest(); err != nil {
		return nil, nil, err
	}
	return img, ref, nil
}

// descriptorOf is the descriptor that points at img's manifest.
func descriptorOf(img v1.Image) (*v1.Descriptor, error) {
	d, err := img.Digest()
	if err != nil {
		return nil, err
	}
	n, err := img.Size()
	if err != nil {
		return nil, err
	}
	mt, err := img.MediaType()
	if err != nil {
		return nil, err
	}
	return &v1.Descriptor{MediaType: mt, Digest: d, Size: n}, nil
}

// writeLayout replaces cfg.Out with a layout whose index.json lists the
// multi-arch index (tagged cfg.Tag) and then each SBOM referrer, where
// referrer-aware tools (oras) find them by their subject.
func writeLayout(cfg Config, idx v1.ImageIndex, refs []v1.Image) error {
	if err := os.RemoveAll(cfg.Out); err != nil {
		return err
	}
	p, err := layout.Write(cfg.Out, empty.Index)
	if err != nil {
		return err
	}
	if err := p.AppendIndex(idx, layout.WithAnnotations(map[string]string{annRefName: cfg.Tag})); err != nil {
		return err
	}
	for _, ref := range refs {
		if err := p.WriteImage(ref); err != nil {
			return err
		}
		desc, err := descriptorOf(ref)
		if err != nil {
			return err
		}
		desc.ArtifactType = ArtifactTypeCycloneDX
		if err := p.AppendDescriptor(*desc); err != nil {
			return err
		}
	}
	return fixModes(cfg.Out)
}

// fixModes makes a layout's files 0644 and its directories 0755:
// go-containerregistry writes some blobs 0600 and index.json 0755, and the
// layout is data to copy and serve.
func fixModes(dir string) error {
	return filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		mode := fs.FileMode(0o644)
		if d.IsDir() {
			mode = 0o755
		}
		return os.Chmod(path, mode)
	})
}

func sha256Hex(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}
