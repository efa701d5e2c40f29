package gcs

import (
	"context"
	"crypto/md5"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"cloud.google.com/go/storage"
	"go.uber.org/zap"
	"google.golang.org/api/option"

	"github.com/bomstream/bomstream/schemas"
	"github.com/bomstream/bomstream/signing"
	"github.com/bomstream/bomstream/sinks"
)

// Type is the registry name of this sink.
const Type = "gcs"

// Names of the per-workload objects, in the folder of the workload's BOMs.
const (
	LatestObject    = "latest.cdx.json"
	TombstoneObject = "tombstone.json"
)

// ContentType of BOM objects.
const ContentType = "application/vnd.cyclonedx+json"

// Metadata keys set on the objects.
const (
	MetaBomHash   = "bomHash"
	MetaInputHash = "inputHash"
	MetaWorkload  = "workload"
	MetaUID       = "uid"
	MetaChangeSeq = "changeSeq"
	MetaStreamSeq = "streamSeq"
	MetaTime      = "time"
	MetaReason    = "reason"
)

// Sink writes BOMs into a bucket. It implements sinks.Sink, sinks.Checker
// and sinks.Locator.
type Sink struct {
	name   string
	bucket string
	prefix string
	tmpl   template
	// byName: the workload's folder is named by its name, not its uid, so
	// the runner's order flags (sinks.BOM.Superseded, sinks.Tombstone.Stale),
	// which are about names, are about this folder.
	byName bool
	// console: the bucket is Google's (no endpoint configured), so its
	// objects have a page in the Cloud console.
	console bool
	client  *storage.Client
	log     *zap.Logger
	signer  *signing.Signer // nil: no bundles
}

// SinkType is the registry entry of the gcs sink.
var SinkType = sinks.Type{
	NewConfig: func() sinks.Config { return &Config{} },
	New: func(ctx context.Context, cfg sinks.Config, deps sinks.Deps) (sinks.Sink, error) {
		return New(ctx, *cfg.(*Config), deps)
	},
}

// Option adjusts a sink beyond its configuration.
type Option func(*[]signing.Option)

// WithAttestOptions passes options to the signer that cfg.Attest
// configures (tests: an in-memory Sigstore).
func WithAttestOptions(opts ...signing.Option) Option {
	return func(o *[]signing.Option) { *o = append(*o, opts...) }
}

// New validates cfg and opens a storage client. It reads the credentials
// file, if any, and the signing key, if any (a missing or unreadable key
// refuses the start, named, not quoted), but does not reach the bucket:
// Check does.
func New(ctx context.Context, cfg Config, deps sinks.Deps, sinkOpts ...Option) (*Sink, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	var aopts []signing.Option
	for _, o := range sinkOpts {
		o(&aopts)
	}
	signer, err := signing.New(cfg.Attest, deps.Getenv, aopts...)
	if err != nil {
		return nil, err
	}
	if deps.Name == "" {
		deps.Name = Type
	}
	if deps.Log == nil {
		deps.Log = zap.NewNop()
	}
	tmpl, _ := parseTemplate(cfg.pathTemplate())
	if tmpl.old {
		deps.Log.Warn(fmt.Sprintf("pathTemplate %q uses the old {name} form, read for one more release; write %q", cfg.PathTemplate, tmpl.newForm()))
	}
	// JSON reads: one API for everything, and the one emulators serve.
	opts := []option.ClientOption{storage.WithJSONReads()}
	if cfg.Endpoint != "" {
		opts = append(opts, option.WithEndpoint(cfg.Endpoint))
	}
	switch {
	case cfg.Anonymous:
		opts = append(opts, option.WithoutAuthentication())
	case cfg.CredentialsFile != "":
		typ, err := credentialsType(cfg.CredentialsFile)
		if err != nil {
			return nil, fmt.Errorf("credentialsFile %s: %w", cfg.CredentialsFile, err)
		}
		opts = append(opts, option.WithAuthCredentialsFile(typ, cfg.CredentialsFile))
	}
	client, err := storage.NewClient(ctx, opts...)
	if err != nil {
		if cfg.CredentialsFile == "" && !cfg.Anonymous {
			return nil, fmt.Errorf("storage client: no usable Google credentials (set credentialsFile or GOOGLE_APPLICATION_CREDENTIALS, run with GKE workload identity, or anonymous: true for an emulator): %w", err)
		}
		return nil, fmt.Errorf("storage client: %w", err)
	}
	// The runner owns retries (with backoff, metrics and the dead-letter
	// path); a client retrying inside one attempt would hide the cause.
	client.SetRetry(storage.WithPolicy(storage.RetryNever))
	return &Sink{
		name: deps.Name, bucket: cfg.Bucket, prefix: strings.TrimSuffix(cfg.Prefix, "/"),
		tmpl: tmpl, byName: !tmpl.perWorkload(), console: cfg.Endpoint == "", client: client, log: deps.Log, signer: signer,
	}, nil
}

// credentialsType reads the "type" of a Google credentials file.
func credentialsType(path string) (option.CredentialsType, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		if pe, ok := errors.AsType[*os.PathError](err); ok {
			err = pe.Err
		}
		return "", err
	}
	var f struct {
		Type string `json:"type"`
	}
	if err := json.Unmarshal(b, &f); err != nil {
		return "", fmt.Errorf("not a JSON credentials file") // the text may hold a key: do not quote it
	}
	switch t := option.CredentialsType(f.Type); t {
	case option.ServiceAccount, option.AuthorizedUser, option.ImpersonatedServiceAccount,
		option.ExternalAccount:
		return t, nil
	}
	return "", fmt.Errorf("unknown credentials type %q", f.Type)
}

// Name implements sinks.Sink.
func (s *Sink) Name() string { return s.name }

// Bucket is the bucket the sink writes to.
func (s *Sink) Bucket() string { return s.bucket }

// Close implements sinks.Sink.
func (s *Sink) Close() error { return s.client.Close() }

// Paths are the object names of one workload in the bucket.
type Paths struct {
	Dir       string // the workload's folder, no trailing slash
	Latest    string // Dir + "/latest.cdx.json"
	Tombstone string // Dir + "/tombstone.json"
}

// WorkloadPaths returns the object names of w, or a permanent error when a
// segment of w's identity is empty or could be read as a path step.
func (s *Sink) WorkloadPaths(w schemas.Workload) (Paths, error) {
	vals, err := s.values(w)
	if err != nil {
		return Paths{}, err
	}
	dir := render(s.tmpl.dir, vals)
	return Paths{Dir: dir, Latest: dir + "/" + LatestObject, Tombstone: dir + "/" + TombstoneObject}, nil
}

func (s *Sink) values(w schemas.Workload) (map[string]string, error) {
	ns := w.Namespace
	if ns == "" {
		ns = "_"
	}
	vals := map[string]string{"prefix": s.prefix, "cluster": w.Cluster, "namespace": ns, "kind": w.Kind, "name": w.Name, "uid": w.UID}
	for _, k := range []string{"cluster", "namespace", "kind", "name", "uid"} {
		if err := checkSegment(vals[k]); err != nil {
			return nil, sinks.Permanent(fmt.Errorf("workload %s: %s: %w", w, k, err))
		}
	}
	return vals, nil
}

// BOMObject is the name of the immutable object of the BOM with the given
// hash ("sha256:<hex>") in the workload folder p.
func (s *Sink) BOMObject(p Paths, bomHash string) string {
	return p.Dir + "/" + render(s.tmpl.file, map[string]string{"bomHash": strings.TrimPrefix(bomHash, "sha256:")})
}

func checkSegment(seg string) error {
	switch {
	case seg == "" || seg == "." || seg == "..":
		return fmt.Errorf("path segment %q is not allowed", seg)
	case strings.ContainsAny(seg, "/\\\x00\r\n"):
		return fmt.Errorf("path segment %q contains a separator, a line break or NUL", seg)
	}
	return nil
}

func bomMetadata(b sinks.BOM) map[string]string {
	return map[string]string{
		MetaBomHash:   b.BomHash,
		MetaInputHash: b.InputHash,
		MetaWorkload:  b.Workload.String(),
		MetaUID:       b.Workload.UID,
		MetaChangeSeq: strconv.FormatUint(b.ChangeSeq, 10),
		MetaStreamSeq: strconv.FormatUint(b.StreamSeq, 10),
		MetaTime:      b.Time.UTC().Format(time.RFC3339Nano),
	}
}

// Export implements sinks.Sink: the immutable object first (create-only),
// then, unless the BOM is superseded, the latest object and the removal of
// the tombstone.
func (s *Sink) Export(ctx context.Context, b sinks.BOM) error {
	p, err := s.WorkloadPaths(b.Workload)
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("export %s: %w", b.Workload, err)
	}
	meta := bomMetadata(b)
	name := s.BOMObject(p, b.BomHash)
	if err := s.createBOM(ctx, name, b, meta); err != nil {
		return fmt.Errorf("export %s: %w", b.Workload, err)
	}
	if s.signer != nil {
		if err := s.createBundle(ctx, name, b); err != nil {
			return fmt.Errorf("export %s: %w", b.Workload, err)
		}
	}
	if b.Superseded && s.byName {
		s.log.Debug("superseded: kept as history", zap.Stringer("workload", b.Workload), zap.String("bomHash", b.BomHash), zap.String("object", name))
		return nil
	}
	if err := s.moveLatest(ctx, p.Latest, b, meta); err != nil {
		return fmt.Errorf("export %s: latest: %w", b.Workload, err)
	}
	if err := s.revive(ctx, p.Tombstone, b); err != nil {
		return fmt.Errorf("export %s: revive: %w", b.Workload, err)
	}
	s.log.Debug("exported", zap.Stringer("workload", b.Workload), zap.String("bomHash", b.BomHash), zap.String("object", name))
	return nil
}

// createBOM writes the immutable object unless it exists. An existing object
// holding the same BOM (a retry whose first answer was lost, a replay) is
// success; one holding other bytes is a permanent error.
func (s *Sink) createBOM(ctx context.Context, name string, b sinks.BOM, meta map[string]string) error {
	obj := s.client.Bucket(s.bucket).Object(name)
	err := s.write(ctx, obj.If(storage.Conditions{DoesNotExist: true}), b.Body, ContentType, meta)
	if !isPrecondition(err) {
		return s.classify(err, opCreate, name)
	}
	attrs, err := obj.Attrs(ctx)
	if err != nil {
		return s.classify(err, opRead, name)
	}
	sum := md5.Sum(b.Body)
	if attrs.Metadata[MetaBomHash] != b.BomHash || attrs.Size != int64(len(b.Body)) || (len(attrs.MD5) > 0 && string(attrs.MD5) != string(sum[:])) {
		return sinks.Permanent(fmt.Errorf("gs://%s/%s exists with other content (bomHash %q): immutable objects are never rewritten", s.bucket, name, attrs.Metadata[MetaBomHash]))
	}
	return nil
}

// moveLatest makes the latest object a copy of b, unless it is one already
// (the same BOM and change: a retry whose answer was lost, a replay).
func (s *Sink) moveLatest(ctx context.Context, name string, b sinks.BOM, meta map[string]string) error {
	obj := s.client.Bucket(s.bucket).Object(name)
	attrs, err := obj.Attrs(ctx)
	switch {
	case errors.Is(err, storage.ErrObjectNotExist):
	case err != nil:
		return s.classify(err, opRead, name)
	case attrs.Metadata[MetaBomHash] == b.BomHash && attrs.Metadata[MetaChangeSeq] == meta[MetaChangeSeq]:
		return nil
	}
	return s.classify(s.write(ctx, obj, b.Body, ContentType, meta), opReplace, name)
}

// revive deletes the tombstone, if there is one: b is newer.
func (s *Sink) revive(ctx context.Context, name string, b sinks.BOM) error {
	err := s.client.Bucket(s.bucket).Object(name).Delete(ctx)
	switch {
	case errors.Is(err, storage.ErrObjectNotExist):
		return nil
	case err != nil:
		return s.classify(err, opDelete, name)
	}
	s.log.Info("workload revived", zap.Stringer("workload", b.Workload), zap.Uint64("changeSeq", b.ChangeSeq))
	return nil
}

// marker is the content of tombstone.json.
type marker struct {
	Workload  string    `json:"workload"`
	UID       string    `json:"uid"`
	Reason    string    `json:"reason"`
	ChangeSeq uint64    `json:"changeSeq"`
	StreamSeq uint64    `json:"streamSeq"`
	Time      time.Time `json:"time"`
}

// Tombstone implements sinks.Sink: it writes tombstone.json next to the
// workload's BOMs, unless the tombstone is stale, nothing was exported for
// the workload, or this tombstone is there already.
func (s *Sink) Tombstone(ctx context.Context, t sinks.Tombstone) error {
	p, err := s.WorkloadPaths(t.Workload)
	if err != nil {
		return err
	}
	if t.Reason != sinks.ReasonDeleted && t.Reason != sinks.ReasonNotServing {
		return sinks.Permanent(fmt.Errorf("tombstone %s: unknown reason %q", t.Workload, t.Reason))
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("tombstone %s: %w", t.Workload, err)
	}
	if t.Stale && s.byName {
		s.log.Info("stale tombstone ignored: a newer version exists for this name",
			zap.Stringer("workload", t.Workload), zap.Uint64("changeSeq", t.ChangeSeq))
		return nil
	}
	bkt := s.client.Bucket(s.bucket)
	_, err = bkt.Object(p.Latest).Attrs(ctx)
	if errors.Is(err, storage.ErrObjectNotExist) {
		return nil // nothing of this workload was exported here
	}
	if err != nil {
		return fmt.Errorf("tombstone %s: %w", t.Workload, s.classify(err, opRead, p.Latest))
	}
	meta := map[string]string{
		MetaWorkload: t.Workload.String(), MetaUID: t.Workload.UID, MetaReason: t.Reason,
		MetaChangeSeq: strconv.FormatUint(t.ChangeSeq, 10), MetaStreamSeq: strconv.FormatUint(t.StreamSeq, 10),
		MetaTime: t.Time.UTC().Format(time.RFC3339Nano),
	}
	obj := bkt.Object(p.Tombstone)
	attrs, err := obj.Attrs(ctx)
	switch {
	case errors.Is(err, storage.ErrObjectNotExist):
	case err != nil:
		return fmt.Errorf("tombstone %s: %w", t.Workload, s.classify(err, opRead, p.Tombstone))
	case attrs.Metadata[MetaChangeSeq] == meta[MetaChangeSeq] && attrs.Metadata[MetaReason] == t.Reason:
		return nil // already recorded
	}
	body, _ := json.Marshal(marker{
		Workload: t.Workload.String(), UID: t.Workload.UID, Reason: t.Reason,
		ChangeSeq: t.ChangeSeq, StreamSeq: t.StreamSeq, Time: t.Time.UTC(),
	})
	if err := s.write(ctx, obj, body, "application/json", meta); err != nil {
		return fmt.Errorf("tombstone %s: %w", t.Workload, s.classify(err, opReplace, p.Tombstone))
	}
	return nil
}

// write uploads data as obj in one request, with an MD5 the server checks.
func (s *Sink) write(ctx context.Context, obj *storage.ObjectHandle, data []byte, contentType string, meta map[string]string) error {
	w := obj.NewWriter(ctx)
	w.ChunkSize = 0 // one request; no buffer
	w.ContentType = contentType
	w.Metadata = meta
	sum := md5.Sum(data)
	w.MD5 = sum[:]
	if _, err := w.Write(data); err != nil {
		_ = w.Close()
		return err
	}
	return w.Close()
}
