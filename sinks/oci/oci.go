package oci

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/opencontainers/go-digest"
	specs "github.com/opencontainers/image-spec/specs-go"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"go.uber.org/zap"
	"oras.land/oras-go/v2/registry"
	"oras.land/oras-go/v2/registry/remote"
	"oras.land/oras-go/v2/registry/remote/auth"

	"github.com/bomstream/bomstream/schemas"
	"github.com/bomstream/bomstream/signing"
	"github.com/bomstream/bomstream/sinks"
)

// Type is the registry name of this sink.
const Type = "oci"

// ArtifactType is the artifactType of BOM artifacts, and the media type of
// their one layer, the BOM.
const ArtifactType = "application/vnd.cyclonedx+json"

// Annotations of a BOM artifact's manifest. AnnotationCreated is the
// event's time, not the push's: the same BOM always makes the same
// manifest, so a re-push is a no-op.
const (
	AnnotationCreated  = ocispec.AnnotationCreated // org.opencontainers.image.created
	AnnotationBomHash  = "dev.bomstream.bomHash"
	AnnotationWorkload = "dev.bomstream.workload" // <cluster>/<namespace>/<kind>/<name>
	AnnotationUID      = "dev.bomstream.uid"
)

// LayerTitle is the file name of the BOM layer (oras pull writes it).
const LayerTitle = "bom.cdx.json"

// subjectCacheSize bounds the cache of resolved image manifests (digests
// are immutable: an entry never goes stale).
const subjectCacheSize = 4096

// Sink pushes BOMs as OCI referrers of their images. It implements
// sinks.Sink, sinks.Checker and sinks.Locator.
type Sink struct {
	name       string
	log        *zap.Logger
	m          *metrics
	plainHTTP  bool
	repository *registry.Reference // nil: each image's own repository
	checkHosts []string
	creds      *dockerConfig // nil: anonymous
	http       *http.Client
	client     *auth.Client
	signer     *signing.Signer // nil: no attestations
	plain      bool            // push the unsigned BOM artifact

	// subjectLocks serialise, within this process, the pushes that add a
	// referrer to one subject (striped by repository and digest): the
	// referrers tag schema is a read-modify-write of one index, and some
	// registries (olareg 0.1.2) update their referrers API index the same
	// way without a lock, losing a referrer when two arrive at once.
	subjectLocks [64]sync.Mutex

	mu       sync.Mutex
	repos    map[string]*remote.Repository // by host/repository: keeps what each learnt about referrers
	subjects map[string]ocispec.Descriptor // by host/repository@digest
}

// SinkType is the registry entry of the oci sink.
var SinkType = sinks.Type{
	NewConfig: func() sinks.Config { return &Config{} },
	New: func(_ context.Context, cfg sinks.Config, deps sinks.Deps) (sinks.Sink, error) {
		return New(*cfg.(*Config), deps)
	},
}

// Option adjusts a sink beyond its configuration.
type Option func(*options)

type options struct{ attest []signing.Option }

// WithAttestOptions passes options to the signer that cfg.Attest
// configures (tests: an in-memory Sigstore).
func WithAttestOptions(opts ...signing.Option) Option {
	return func(o *options) { o.attest = append(o.attest, opts...) }
}

// New validates cfg, reads the docker config (if any) and the signing key
// (if any: a missing or unreadable key refuses the start, named, not
// quoted) and registers the sink's metrics. It does not reach any
// registry: Check does.
func New(cfg Config, deps sinks.Deps, opts ...Option) (*Sink, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if deps.Name == "" {
		deps.Name = Type
	}
	if deps.Log == nil {
		deps.Log = zap.NewNop()
	}
	m, err := newMetrics(deps.Metrics, deps.Name)
	if err != nil {
		return nil, fmt.Errorf("metrics: %w", err)
	}
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	signer, err := signing.New(cfg.Attest, deps.Getenv, o.attest...)
	if err != nil {
		return nil, err
	}
	if signer != nil {
		deps.Log.Info("attestations signed", zap.Stringer("signer", signer))
	}
	s := &Sink{
		name: deps.Name, log: deps.Log, m: m, plainHTTP: cfg.PlainHTTP, checkHosts: cfg.CheckRegistries,
		signer: signer, plain: cfg.plainReferrer(),
		http:     &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()},
		repos:    map[string]*remote.Repository{},
		subjects: map[string]ocispec.Descriptor{},
	}
	if cfg.Repository != "" {
		ref, _ := parseRepository(cfg.Repository)
		s.repository = &ref
	}
	s.client = &auth.Client{Client: s.http, Cache: auth.NewCache(), Header: http.Header{"User-Agent": {"bomstream"}}}
	if cfg.DockerConfig != "" {
		if s.creds, err = newDockerConfig(cfg.DockerConfig); err != nil {
			return nil, err
		}
		s.client.Credential = s.creds.credential
	}
	return s, nil
}

// Name implements sinks.Sink.
func (s *Sink) Name() string { return s.name }

// Close implements sinks.Sink.
func (s *Sink) Close() error {
	s.http.CloseIdleConnections()
	return nil
}

// repo returns the client of one repository, one per repository for the
// sink's life, so that what it learnt (referrers API or tag schema) and
// its merging of concurrent referrers-index updates are shared.
func (s *Sink) repo(ref registry.Reference) *remote.Repository {
	key := ref.Registry + "/" + ref.Repository
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.repos[key]
	if !ok {
		r = &remote.Repository{
			Client:    s.client,
			Reference: registry.Reference{Registry: ref.Registry, Repository: ref.Repository},
			PlainHTTP: s.plainHTTP,
		}
		s.repos[key] = r
	}
	return r
}

// target is one artifact to push: the BOM as a referrer of one image.
type target struct {
	image  string             // as the BOM names it
	source registry.Reference // the image's repository
	dest   registry.Reference // where the artifact goes
	digest digest.Digest      // the image manifest
}

// targets lists the images that get an artifact, once per repository and
// digest; skip, unless nil, is told of the others, with the reason.
func (s *Sink) targets(images []schemas.ImageDigest, skip func(img schemas.ImageDigest, reason string, err error)) []target {
	if skip == nil {
		skip = func(schemas.ImageDigest, string, error) {}
	}
	var out []target
	seen := map[string]bool{}
	for _, img := range images {
		if img.Digest == "" {
			skip(img, SkipNoDigest, nil)
			continue
		}
		dg, err := imageDigest(img)
		if err != nil {
			skip(img, SkipBadDigest, err)
			continue
		}
		src, err := imageRepository(img.Image)
		if err != nil {
			skip(img, SkipBadReference, err)
			continue
		}
		dst := src
		if s.repository != nil {
			dst = *s.repository
		}
		key := dst.Registry + "/" + dst.Repository + "@" + dg.String()
		if seen[key] {
			continue
		}
		seen[key] = true
		out = append(out, target{image: img.Image, source: src, dest: dst, digest: dg})
	}
	return out
}

// skip counts and logs an image of b that gets no artifact.
func (s *Sink) skip(b sinks.BOM, img schemas.ImageDigest, reason string, err error) {
	s.m.skipped.WithLabelValues(reason).Inc()
	fields := []zap.Field{zap.Stringer("workload", b.Workload), zap.String("bomHash", b.BomHash),
		zap.String("image", img.Image), zap.String("reason", reason)}
	if err != nil {
		fields = append(fields, zap.Error(err))
	}
	s.log.Info("image skipped: no artifact for it", fields...)
}

// Export implements sinks.Sink: for every image of b with a resolved
// digest, the BOM becomes a referrer of that image manifest, unless it
// already is one. A superseded BOM is pushed too: referrers are history,
// and what reads as latest is the one created last (AnnotationCreated).
func (s *Sink) Export(ctx context.Context, b sinks.BOM) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("export %s: %w", b.Workload, err)
	}
	ts := s.targets(b.Images, func(img schemas.ImageDigest, reason string, err error) { s.skip(b, img, reason, err) })
	if len(ts) == 0 {
		s.log.Debug("no image with a resolved digest: nothing to push", zap.Stringer("workload", b.Workload))
		return nil
	}
	var errs []error
	for _, t := range ts {
		if err := s.push(ctx, b, t); err != nil {
			errs = append(errs, err)
		}
	}
	if err := joinErrors(errs); err != nil {
		return fmt.Errorf("export %s: %w", b.Workload, err)
	}
	return nil
}

// push makes b a referrer of t's image manifest, as the plain artifact,
// the signed attestation, or both.
func (s *Sink) push(ctx context.Context, b sinks.BOM, t target) error {
	subject, err := s.subject(ctx, t)
	if err != nil {
		return err
	}
	if s.plain {
		if err := s.pushPlain(ctx, b, t, subject); err != nil {
			return err
		}
	}
	if s.signer != nil {
		return s.pushAttestation(ctx, b, t, subject)
	}
	return nil
}

// pushPlain makes the unsigned BOM artifact a referrer of subject.
func (s *Sink) pushPlain(ctx context.Context, b sinks.BOM, t target, subject ocispec.Descriptor) error {
	manifest, desc := Manifest(b, subject)
	dst := s.repo(t.dest)
	where := t.dest.Registry + "/" + t.dest.Repository
	lock := s.subjectLock(where + "@" + subject.Digest.String())
	lock.Lock()
	defer lock.Unlock()
	listed, err := s.isReferrer(ctx, dst, subject, ArtifactType, func(r ocispec.Descriptor) bool { return r.Digest == desc.Digest })
	if err != nil {
		return s.classify(err, fmt.Sprintf("list referrers of %s@%s", where, subject.Digest), t.dest)
	}
	if listed {
		s.m.present.Inc()
		s.log.Debug("artifact present", zap.Stringer("workload", b.Workload), zap.String("image", t.image), zap.Stringer("artifact", desc.Digest))
		return nil
	}
	if err := s.upload(ctx, dst, t.dest, []ocispec.Descriptor{artifactConfig, layer(b)}, [][]byte{[]byte("{}"), b.Body}, desc, manifest); err != nil {
		return err
	}
	s.m.pushed.Inc()
	s.log.Debug("artifact pushed", zap.Stringer("workload", b.Workload), zap.String("image", t.image),
		zap.String("repository", where), zap.Stringer("subject", subject.Digest), zap.Stringer("artifact", desc.Digest))
	return nil
}

// upload pushes the blobs dst lacks, then the manifest.
func (s *Sink) upload(ctx context.Context, dst *remote.Repository, ref registry.Reference, blobs []ocispec.Descriptor, contents [][]byte, desc ocispec.Descriptor, manifest []byte) error {
	where := ref.Registry + "/" + ref.Repository
	for i, bd := range blobs {
		ok, err := dst.Exists(ctx, bd)
		if err != nil {
			return s.classify(err, fmt.Sprintf("look for blob %s in %s", bd.Digest, where), ref)
		}
		if ok {
			continue
		}
		if err := dst.Push(ctx, bd, bytes.NewReader(contents[i])); err != nil {
			return s.classify(err, fmt.Sprintf("push blob %s to %s", bd.Digest, where), ref)
		}
	}
	err := dst.Push(ctx, desc, bytes.NewReader(manifest))
	var re *remote.ReferrersError
	if errors.As(err, &re) && re.IsReferrersIndexDelete() {
		// The new referrers index is in place; the old one could not be
		// deleted (the registry refuses deletes) and stays, untagged.
		s.log.Warn("old referrers index left behind", zap.String("repository", where), zap.Error(err))
		err = nil
	}
	if err != nil {
		return s.classify(err, fmt.Sprintf("push artifact %s to %s", desc.Digest, where), ref)
	}
	return nil
}

func (s *Sink) subjectLock(key string) *sync.Mutex {
	h := fnv.New32a()
	_, _ = h.Write([]byte(key))
	return &s.subjectLocks[h.Sum32()%uint32(len(s.subjectLocks))]
}

// subject resolves the image manifest of t in the image's own repository.
func (s *Sink) subject(ctx context.Context, t target) (ocispec.Descriptor, error) {
	key := t.source.Registry + "/" + t.source.Repository + "@" + t.digest.String()
	s.mu.Lock()
	d, ok := s.subjects[key]
	s.mu.Unlock()
	if ok {
		return d, nil
	}
	got, err := s.repo(t.source).Resolve(ctx, t.digest.String())
	if err != nil {
		return ocispec.Descriptor{}, s.classify(err, "resolve image manifest "+key, t.source)
	}
	if got.Digest != t.digest {
		return ocispec.Descriptor{}, sinks.Permanent(fmt.Errorf("resolve image manifest %s: the registry answered %s", key, got.Digest))
	}
	d = ocispec.Descriptor{MediaType: got.MediaType, Digest: got.Digest, Size: got.Size}
	s.mu.Lock()
	if len(s.subjects) >= subjectCacheSize {
		clear(s.subjects)
	}
	s.subjects[key] = d
	s.mu.Unlock()
	return d, nil
}

// isReferrer reports whether a referrer of subject in repo with
// artifactType matches (through the referrers API or the tag schema).
func (s *Sink) isReferrer(ctx context.Context, repo *remote.Repository, subject ocispec.Descriptor, artifactType string, match func(ocispec.Descriptor) bool) (bool, error) {
	found := false
	errFound := errors.New("found")
	err := repo.Referrers(ctx, subject, artifactType, func(refs []ocispec.Descriptor) error {
		if slices.ContainsFunc(refs, match) {
			found = true
			return errFound
		}
		return nil
	})
	switch {
	case errors.Is(err, errFound):
		err = nil
	case isNotFound(err):
		err = nil // the repository does not exist yet: nothing refers to anything there
	}
	return found, err
}

// artifactConfig is the config of a BOM artifact: the empty JSON object,
// typed with the artifact type, as oras-go packs configless artifacts for
// OCI 1.0 (pushCustomEmptyConfig). With artifactType set as well, OCI 1.1
// clients and registries read the type from artifactType, and those that
// take it from config.mediaType (pre-1.1 ones, go-containerregistry's
// registry) agree with them; with the OCI 1.1 empty config, they would
// list the BOM as application/vnd.oci.empty.v1+json.
var artifactConfig = ocispec.Descriptor{
	MediaType: ArtifactType,
	Digest:    ocispec.DescriptorEmptyJSON.Digest,
	Size:      ocispec.DescriptorEmptyJSON.Size,
}

func layer(b sinks.BOM) ocispec.Descriptor {
	return ocispec.Descriptor{
		MediaType:   ArtifactType,
		Digest:      digest.Digest(b.BomHash),
		Size:        int64(len(b.Body)),
		Annotations: map[string]string{ocispec.AnnotationTitle: LayerTitle},
	}
}

// Manifest returns the artifact manifest of b as a referrer of subject,
// and its descriptor. It depends on b's content, workload and time only:
// the same BOM gives the same bytes.
func Manifest(b sinks.BOM, subject ocispec.Descriptor) ([]byte, ocispec.Descriptor) {
	m := ocispec.Manifest{
		Versioned:    specs.Versioned{SchemaVersion: 2},
		MediaType:    ocispec.MediaTypeImageManifest,
		ArtifactType: ArtifactType,
		Config:       artifactConfig,
		Layers:       []ocispec.Descriptor{layer(b)},
		Subject:      &subject,
		Annotations: map[string]string{
			AnnotationCreated:  b.Time.UTC().Format(time.RFC3339Nano),
			AnnotationBomHash:  b.BomHash,
			AnnotationWorkload: b.Workload.String(),
			AnnotationUID:      b.Workload.UID,
		},
	}
	body, _ := json.Marshal(m) // map keys are sorted: deterministic
	return body, ocispec.Descriptor{
		MediaType:    ocispec.MediaTypeImageManifest,
		ArtifactType: ArtifactType,
		Digest:       digest.FromBytes(body),
		Size:         int64(len(body)),
		Annotations:  m.Annotations,
	}
}

// Tombstone implements sinks.Sink and writes nothing: a referrer says
// which BOM an image manifest had in a workload at a time, which stays
// true after the workload is gone, and a tombstone names no image. It is
// idempotent by construction.
func (s *Sink) Tombstone(ctx context.Context, t sinks.Tombstone) error {
	if t.Reason != sinks.ReasonDeleted && t.Reason != sinks.ReasonNotServing {
		return sinks.Permanent(fmt.Errorf("tombstone %s: unknown reason %q", t.Workload, t.Reason))
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("tombstone %s: %w", t.Workload, err)
	}
	s.log.Debug("tombstone: referrers are history, nothing to change", zap.Stringer("workload", t.Workload), zap.String("reason", t.Reason))
	return nil
}
