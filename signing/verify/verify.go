// Package verify finds the Sigstore attestations of an image, or the bundle
// of a BOM file, verifies each against a policy ([signing.Policy]), and
// reports what the verified AI-BOMs say: bomstream verify.
package verify

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"

	"oras.land/oras-go/v2/registry"
	"oras.land/oras-go/v2/registry/remote"
	"oras.land/oras-go/v2/registry/remote/auth"
	"oras.land/oras-go/v2/registry/remote/credentials"

	"github.com/bomstream/bomstream/signing"
	"github.com/bomstream/bomstream/transformer"
)

// Options are the flags of bomstream verify.
type Options struct {
	Key          string // a PEM public key the attestations are signed with
	TrustedRoot  string // keyless: the Sigstore instance's trusted_root.json
	Identity     string // keyless: the signer's identity (certificate SAN)
	IdentityRe   string // keyless: a regular expression the identity must match
	Issuer       string // keyless: the OIDC issuer of the identity
	IssuerRe     string // keyless: a regular expression the issuer must match
	IgnoreTlog   bool   // keyless: accept attestations without a transparency log entry
	PlainHTTP    bool   // talk HTTP to the registry
	DockerConfig string // a docker config.json with the registry credentials
	File         string // verify this BOM file instead of an image
	Bundle       string // the bundle of File; default File + ".sigstore.json"
	Output       string // text or json
}

// Run verifies the attestations of image, or of o.File when set, and
// writes what it found to out. It fails, with the reasons, when none
// verifies.
func Run(ctx context.Context, o Options, image string, out io.Writer) error {
	v, err := o.verifier()
	if err != nil {
		return fmt.Errorf("verify: %w", err)
	}
	var rep *Report
	if o.File != "" {
		rep, err = o.verifyFile(v)
	} else {
		rep, err = o.verifyImage(ctx, v, image)
	}
	if err != nil {
		return fmt.Errorf("verify: %w", err)
	}
	return rep.write(out, o.Output)
}

func (o *Options) verifier() (*signing.Verifier, error) {
	if o.Output != "text" && o.Output != "json" {
		return nil, fmt.Errorf("--output %q: want text or json", o.Output)
	}
	p := signing.Policy{Identity: o.Identity, IdentityRegexp: o.IdentityRe, Issuer: o.Issuer, IssuerRegexp: o.IssuerRe, IgnoreTlog: o.IgnoreTlog}
	read := func(flag, path string) ([]byte, error) {
		if path == "" {
			return nil, nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("--%s: %w", flag, err)
		}
		return b, nil
	}
	var err error
	if p.PublicKey, err = read("key", o.Key); err != nil {
		return nil, err
	}
	if p.TrustedRoot, err = read("trusted-root", o.TrustedRoot); err != nil {
		return nil, err
	}
	if o.Key == "" && o.Identity == "" && o.IdentityRe == "" {
		return nil, errors.New("say whom to trust: --key PUB, or --certificate-identity and --certificate-oidc-issuer with --trusted-root")
	}
	return signing.NewVerifier(p)
}

func (o *Options) verifyFile(v *signing.Verifier) (*Report, error) {
	bundlePath := cmp.Or(o.Bundle, o.File+".sigstore.json")
	bom, err := os.ReadFile(o.File)
	if err != nil {
		return nil, err
	}
	b, err := os.ReadFile(bundlePath)
	if err != nil {
		return nil, fmt.Errorf("bundle of %s: %w", o.File, err)
	}
	rep := &Report{File: o.File}
	got, err := v.VerifyBlob(b, bom)
	rep.add(bundlePath, got, err)
	return rep, rep.outcome(o.File)
}

func (o *Options) verifyImage(ctx context.Context, v *signing.Verifier, image string) (*Report, error) {
	ref, err := parseImageRef(image)
	if err != nil {
		return nil, err
	}
	client := &auth.Client{Client: http.DefaultClient, Cache: auth.NewCache(), Header: http.Header{"User-Agent": {"bomstream"}}}
	if o.DockerConfig != "" {
		st, err := credentials.NewStore(o.DockerConfig, credentials.StoreOptions{})
		if err != nil {
			return nil, fmt.Errorf("--docker-config %s: not a readable docker config.json", o.DockerConfig)
		}
		client.Credential = credentials.Credential(st)
	}
	repo := &remote.Repository{Client: client, Reference: ref, PlainHTTP: o.PlainHTTP}
	subject, err := repo.Resolve(ctx, ref.Reference)
	if err != nil {
		return nil, fmt.Errorf("resolve %s: %w", image, err)
	}
	where := ref.Registry + "/" + ref.Repository + "@" + subject.Digest.String()
	found, err := signing.Attachments(ctx, repo, subject)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", where, err)
	}
	rep := &Report{Image: image, Digest: subject.Digest.String()}
	for _, a := range found {
		if a.Err != nil {
			rep.add(a.Manifest.Digest.String(), nil, a.Err)
			continue
		}
		got, err := v.VerifyDigest(a.Bundle, subject.Digest.String())
		rep.add(a.Manifest.Digest.String(), got, err)
	}
	return rep, rep.outcome(where)
}

// parseImageRef reads an image reference with Docker's defaults (no
// registry: Docker Hub; no tag: latest).
func parseImageRef(image string) (registry.Reference, error) {
	s := image
	if i := strings.IndexByte(s, '/'); i < 0 || !(strings.ContainsAny(s[:i], ".:") || s[:i] == "localhost") {
		if i < 0 {
			s = "library/" + s
		}
		s = "registry-1.docker.io/" + s
	}
	ref, err := registry.ParseReference(s)
	if err != nil {
		return registry.Reference{}, fmt.Errorf("image %q: %w", image, err)
	}
	if ref.Reference == "" {
		ref.Reference = "latest"
	}
	return ref, nil
}

// Report is what verify found, in the order found.
type Report struct {
	Image    string        `json:"image,omitempty"`
	Digest   string        `json:"digest,omitempty"`
	File     string        `json:"file,omitempty"`
	Verified []VerifiedBOM `json:"verified"`
	Rejected []Rejected    `json:"rejected"`
}

// VerifiedBOM is one attestation that verified, and what its BOM says.
type VerifiedBOM struct {
	Attestation string `json:"attestation"` // the referrer manifest, or the bundle file
	// PredicateType is the in-toto predicate's type: CycloneDX (an AI-BOM,
	// or an image's SBOM), or another (an SLSA provenance), shown as
	// verified without a BOM summary.
	PredicateType string                       `json:"predicateType"`
	SignedBy      string                       `json:"signedBy"` // "key", or the certificate identity
	Issuer        string                       `json:"issuer,omitempty"`
	SignedAt      string                       `json:"signedAt,omitempty"`
	Subject       string                       `json:"subject"`
	Workload      string                       `json:"workload"`
	When          string                       `json:"when"` // the BOM's metadata.timestamp
	Runtimes      []transformer.RuntimeSummary `json:"runtimes"`
	Models        []string                     `json:"models"`
}

// Rejected is one attestation that did not verify, and why.
type Rejected struct {
	Attestation string `json:"attestation"`
	Reason      string `json:"reason"`
}

func (r *Report) add(name string, got *signing.Verified, err error) {
	if err == nil {
		err = r.addVerified(name, got)
	}
	if err != nil {
		r.Rejected = append(r.Rejected, Rejected{Attestation: name, Reason: err.Error()})
	}
}

func (r *Report) addVerified(name string, got *signing.Verified) error {
	out := VerifiedBOM{Attestation: name, PredicateType: got.PredicateType, SignedBy: cmp.Or(got.Identity, "key"), Issuer: got.Issuer,
		Subject: got.Subject.Name + "@" + got.Subject.Digest, Runtimes: []transformer.RuntimeSummary{}, Models: []string{}}
	if got.PredicateType == signing.PredicateType {
		sum, err := transformer.SummaryOf(got.BOM)
		if err != nil {
			return err
		}
		out.Workload, out.When = bomWorkload(got.BOM)
		out.Runtimes, out.Models = nonNil(sum.Runtimes), nonNil(sum.Models)
	}
	if !got.SignedAt.IsZero() {
		out.SignedAt = got.SignedAt.UTC().Format("2006-01-02T15:04:05Z")
	}
	r.Verified = append(r.Verified, out)
	return nil
}

// outcome is the error of a report with nothing verified: the reasons.
func (r *Report) outcome(what string) error {
	slices.SortStableFunc(r.Verified, func(a, b VerifiedBOM) int { return strings.Compare(b.When, a.When) })
	if len(r.Verified) > 0 {
		return nil
	}
	if len(r.Rejected) == 0 {
		return fmt.Errorf("%s: no Sigstore attestation attached", what)
	}
	reasons := make([]string, len(r.Rejected))
	for i, x := range r.Rejected {
		reasons[i] = x.Attestation + ": " + x.Reason
	}
	return fmt.Errorf("%s: no attestation verified:\n  %s", what, strings.Join(reasons, "\n  "))
}

// bomWorkload reads the workload (cluster/namespace/kind/name) and the
// time a bomstream BOM names.
func bomWorkload(bom []byte) (string, string) {
	var doc struct {
		Metadata struct {
			Timestamp string `json:"timestamp"`
			Component struct {
				Name       string                         `json:"name"`
				Properties []struct{ Name, Value string } `json:"properties"`
			} `json:"component"`
		} `json:"metadata"`
	}
	_ = json.Unmarshal(bom, &doc)
	props := map[string]string{}
	for _, p := range doc.Metadata.Component.Properties {
		props[p.Name] = p.Value
	}
	parts := []string{props["bomstream:cluster"], props["bomstream:namespace"], props["bomstream:kind"], doc.Metadata.Component.Name}
	return strings.Join(parts, "/"), doc.Metadata.Timestamp
}

func (r *Report) write(w io.Writer, format string) error {
	if format == "json" {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(r)
	}
	what := cmp.Or(r.File, r.Image+"@"+r.Digest)
	fmt.Fprintf(w, "%s: %d verified, %d rejected\n", what, len(r.Verified), len(r.Rejected))
	for _, v := range r.Verified {
		by := v.SignedBy
		if v.Issuer != "" {
			by += " (" + v.Issuer + ")"
		}
		if v.PredicateType != signing.PredicateType {
			fmt.Fprintf(w, "verified %s signed by %s%s\n  predicate %s (not a BOM)\n", v.Attestation, by, at(v.SignedAt), v.PredicateType)
			continue
		}
		fmt.Fprintf(w, "verified %s signed by %s%s\n  workload  %s\n  when      %s\n", v.Attestation, by, at(v.SignedAt), v.Workload, v.When)
		for _, rt := range v.Runtimes {
			fmt.Fprintf(w, "  runtime   %s %s (%s)\n", rt.Name, rt.Version, rt.Confidence)
		}
		for _, m := range v.Models {
			fmt.Fprintf(w, "  model     %s\n", m)
		}
	}
	for _, x := range r.Rejected {
		fmt.Fprintf(w, "rejected %s: %s\n", x.Attestation, x.Reason)
	}
	return nil
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

func at(t string) string {
	if t == "" {
		return ""
	}
	return " at " + t
}
