package transformer

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"

	cdx "github.com/CycloneDX/cyclonedx-go"

	"github.com/bomstream/bomstream/schemas"
)

// Config configures a Renderer. The zero value is usable: the built-in rules
// and an empty tool version.
type Config struct {
	// Version is the transformer's version; it goes into metadata.tools and
	// into the serial number, so a new transformer gives new BOM identities.
	Version string
	// RulesFile is an optional YAML file of rules merged over the built-in ones.
	RulesFile string
	// MaxBOMBytes bounds a BOM, so that it fits a stream message with its
	// headers (the embedded server takes 1 MiB). A BOM that would be larger
	// lists at most 16 methods and locations in each component's evidence,
	// and if that is not enough, only the models found first, as many as
	// fit; it says so in bomstream:truncated properties of the workload.
	// Default 768 KiB.
	MaxBOMBytes int
	// Facts makes Render give Result.Facts, for a stage of the same
	// process that reads them (the findings stage inline).
	Facts bool
}

// DefaultMaxBOMBytes is the default of Config.MaxBOMBytes.
const DefaultMaxBOMBytes = 768 << 10

// minBOMBytes is the smallest MaxBOMBytes: a BOM with a few components.
const minBOMBytes = 16 << 10

// maxBOM is MaxBOMBytes or its default.
func (c Config) maxBOM() int {
	if c.MaxBOMBytes == 0 {
		return DefaultMaxBOMBytes
	}
	return c.MaxBOMBytes
}

// Validate checks the fields of c.
func (c Config) Validate() error {
	if strings.ContainsAny(c.Version, "\n\r\t") {
		return fmt.Errorf("transformer config: Version %q has control characters", c.Version)
	}
	if c.MaxBOMBytes != 0 && c.MaxBOMBytes < minBOMBytes {
		return fmt.Errorf("transformer config: MaxBOMBytes %d is less than %d", c.MaxBOMBytes, minBOMBytes)
	}
	if c.RulesFile != "" {
		if _, err := os.Stat(c.RulesFile); err != nil {
			return fmt.Errorf("transformer config: RulesFile: %w", err)
		}
	}
	return nil
}

// Renderer turns WorkloadChange events into CycloneDX 1.6 BOMs. Its rules are
// compiled once; its only mutable state is the memos of what the rules said
// of strings seen before, which never change an answer, and the pool of the
// working memory renders leave to the next ones (state.go). It is safe for
// concurrent use.
type Renderer struct {
	cfg   Config
	rules *rules
	// states holds the *renderState of renders done, for the next ones.
	states sync.Pool
	// rooms holds the scratch space of the detections of renders done
	// (*detectRoom), for the next ones: garbage once a BOM is built.
	rooms sync.Pool
	// tools is the metadata.tools of every BOM: this tool at cfg.Version.
	// BOMs point to it, and nothing writes through them.
	tools *cdx.ToolsChoice
	// fingerprint names the version and the effective rules; see Fingerprint.
	fingerprint string
}

// NewRenderer validates cfg and compiles the rules.
func NewRenderer(cfg Config) (*Renderer, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	// The rules file is read once: the rules compiled and the
	// fingerprint are of the same bytes.
	file, err := readRulesFile(cfg.RulesFile)
	if err != nil {
		return nil, fmt.Errorf("new renderer: %w", err)
	}
	rs, err := parseRules(cfg.RulesFile, file)
	if err != nil {
		return nil, fmt.Errorf("new renderer: %w", err)
	}
	r, err := compileRules(rs)
	if err != nil {
		return nil, fmt.Errorf("new renderer: rules: %w", err)
	}
	fp := fingerprint(cfg.Version, file)
	tool := []cdx.Component{{Type: cdx.ComponentTypeApplication, Name: toolName, Version: cfg.Version, BOMRef: "tool:" + toolName}}
	return &Renderer{cfg: cfg, rules: r, tools: &cdx.ToolsChoice{Components: &tool}, fingerprint: fp}, nil
}

// Fingerprint names what decides the renderer's output: its version, the
// built-in rules and the rules file. Two renderers with the same
// fingerprint render every event alike; a new one means the store's BOMs
// may be out of date (package transformer/rerender). It is
// "sha256:<hex>".
func (r *Renderer) Fingerprint() string { return r.fingerprint }

// fingerprint hashes version, the embedded rules and the rules file's
// bytes, each behind its length.
func fingerprint(version string, file []byte) string {
	h := sha256.New()
	for _, part := range [][]byte{[]byte("bomstream transformer"), []byte(version), defaultRules, file} {
		fmt.Fprintf(h, "%d:", len(part))
		h.Write(part)
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}

// room lends the scratch space of one render's detection (detectRoom).
func (r *Renderer) room() *detectRoom {
	if p, ok := r.rooms.Get().(*detectRoom); ok {
		return p
	}
	return &detectRoom{sigs: make([]signal, 0, 32)}
}

// giveRoom takes back the room d borrowed, with what it grew to, unless
// its signals grew large. d must not be read after.
func (r *Renderer) giveRoom(d *detection) {
	room := d.room
	if room == nil || cap(d.sigs) > 1024 {
		return
	}
	room.sigs, room.units = d.sigs[:0], d.units[:0]
	d.room = nil
	r.rooms.Put(room)
}

// Skip reasons.
const (
	SkipTombstone = "tombstone: the workload is gone"
	SkipNothing   = "serves no model: no container's signals reach the serving threshold, and neither its kind nor a kind field names an engine"
	SkipCache     = "a model cache, not a serving workload"
	SkipTemplate  = "runtime template, not a workload"
)

const (
	toolName    = "bomstream"
	schemaURL16 = "http://cyclonedx.org/schema/bom-1.6.schema.json"
	propPrefix  = "bomstream:"
	workloadRef = "workload"
	technique   = cdx.EvidenceIdentityTechniqueManifestAnalysis
)

// Render renders the BOM of one event. It is a pure function of the event and
// the Renderer's configuration: the same event gives the same bytes.
func (r *Renderer) Render(ev schemas.WorkloadChange) (Result, error) {
	res, bi, d, err := r.prepare(ev)
	if err != nil || d == nil {
		return res, err
	}
	st := r.state()
	defer r.release(st)
	defer r.giveRoom(d)
	b := st.builder(r, bi, d)
	out, err := b.encode()
	if err != nil {
		return res, fmt.Errorf("render %s: encode: %w", res.Workload, err)
	}
	if len(out) > r.cfg.maxBOM() {
		if out, err = b.shrink(len(out), r.cfg.maxBOM()); err != nil {
			return res, fmt.Errorf("render %s: %w", res.Workload, err)
		}
	}
	res.BOM = bytes.Clone(out)
	res.BomHash = schemas.BomHash(res.BOM)
	res.Summary = b.summary()
	if r.cfg.Facts {
		res.Facts = b.facts()
	}
	return res, nil
}

// prepare runs the rules over the inputs of ev; d is nil when the event is
// skipped (res.Skipped says why) or fails.
func (r *Renderer) prepare(ev schemas.WorkloadChange) (res Result, bi bomInput, d *detection, err error) {
	res = Result{Workload: ev.Data.Workload}
	if ev.IsTombstone() {
		res.Skipped = SkipTombstone
		return res, bi, nil, nil
	}
	in := ev.Data.Inputs
	if in == nil {
		return res, bi, nil, fmt.Errorf("render %s: %w", ev.Data.Workload, errNoInputs)
	}
	if in.Workload.Kind != "" {
		res.Workload = in.Workload
	}
	if r.rules.kindPurpose[res.Workload.Kind] == "template" {
		res.Skipped = SkipTemplate
		return res, bi, nil, nil
	}
	d = r.rules.detect(in, r.room())
	// Only a workload that serves has a BOM (serving.go): one that only
	// names models (a download, training, benchmark or UI job) has none.
	if !d.serving {
		res.Skipped = SkipNothing
		if d.purpose == "cache" {
			res.Skipped = SkipCache
		}
		r.giveRoom(d)
		return res, bi, nil, nil
	}
	bi = bomInput{workload: res.Workload, in: in, time: ev.Time, inputHash: ev.Data.InputHash}
	if bi.inputHash == "" {
		if bi.inputHash, err = schemas.InputHash(in); err != nil {
			return res, bi, nil, fmt.Errorf("render %s: %w", res.Workload, err)
		}
	}
	return res, bi, d, nil
}

// ErrBOMTooLarge is wrapped by Render when a BOM is larger than
// Config.MaxBOMBytes even with no model listed.
var ErrBOMTooLarge = errors.New("bom too large")

// evidenceShrunk is the most identity methods and occurrences a
// component's evidence lists in a BOM shrunk to its limit.
const evidenceShrunk = 16

// shrink renders again a BOM whose full form (size bytes) is over limit:
// first with at most evidenceShrunk methods and locations in each
// component's evidence, then, if that is not enough, listing only the
// models found first (d.models in detection order: workload fields, then
// components, containers and arguments in manifest order), as many as
// fit, found by a binary search. Each step is said in a bomstream:truncated
// property of the workload.
func (b *bomBuilder) shrink(size, limit int) ([]byte, error) {
	b.evidenceCap = evidenceShrunk
	evidence := fmt.Sprintf("evidence: at most %d methods and locations listed per component, the BOM would be %d bytes, more than %d", evidenceShrunk, size, limit)
	b.notes = []string{evidence}
	out, err := b.encode()
	if err != nil || len(out) <= limit {
		return out, err
	}
	all := b.d.models.len()
	try := func(k int) ([]byte, error) {
		b.listed = make(map[string]bool, k)
		for _, e := range b.d.models.entries[:k] {
			b.listed[e.key] = true
		}
		b.notes = []string{evidence, fmt.Sprintf("models: %d of %d listed, the first found", k, all)}
		return b.encode()
	}
	if out, err = try(0); err != nil {
		return nil, err
	}
	if len(out) > limit {
		return nil, fmt.Errorf("%w: %d bytes with no model listed, more than %d", ErrBOMTooLarge, len(out), limit)
	}
	lo, hi := 0, all-1 // the most models that fit: lo fits, hi+1 does not
	for lo < hi {
		mid := lo + (hi-lo+1)/2
		out, err := try(mid)
		if err != nil {
			return nil, err
		}
		if len(out) <= limit {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	return try(lo)
}

var errNoInputs = errors.New("observed event without inputs")
