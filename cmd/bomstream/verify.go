//go:build !nocloudsinks

package main

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

	"github.com/spf13/cobra"
	"oras.land/oras-go/v2/registry"
	"oras.land/oras-go/v2/registry/remote"
	"oras.land/oras-go/v2/registry/remote/auth"
	"oras.land/oras-go/v2/registry/remote/credentials"

	"github.com/bomstream/bomstream/signing"
	"github.com/bomstream/bomstream/transformer"
)

// verifyFlags are the options of bomstream verify.
type verifyFlags struct {
	key, trustedRoot                 string
	identity, identityRe             string
	issuer, issuerRe                 string
	ignoreTlog, plainHTTP            bool
	dockerConfig, file, bundle, outp string
}

func verifyCmd(e *env) *cobra.Command {
	var f verifyFlags
	cmd := &cobra.Command{
		Use:   "verify IMAGE | --file BOM",
		Short: "Verify the signed AI-BOM attestations of an image (or of a BOM file) and print what they say",
		Example: `  bomstream verify --key cosign.pub registry.example.com/ml/chat:1.2
  bomstream verify --certificate-identity system:serviceaccount:bomstream:bomstream --certificate-oidc-issuer https://kubernetes.default.svc --trusted-root trusted_root.json registry.example.com/ml/chat:1.2
  bomstream verify --key cosign.pub --file boms/ml_Deployment_chat.cdx.json`,
		Long: `verify finds the Sigstore attestations attached to IMAGE (a tag or a digest;
referrers API or referrers tag schema), bomstream's and cosign's, and verifies
each against a public key (--key) or a certificate identity and OIDC issuer
with the Sigstore instance's trusted root (--trusted-root). It prints the
verified AI-BOMs (workload, when, runtimes, models) and exits non-zero with
the reasons when none verifies. With --file it verifies a BOM object read from
a bucket against its bundle (BOM.sigstore.json beside it). See docs/signing.md.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if (len(args) == 1) == (f.file != "") {
				return errors.New("verify: name an IMAGE or --file, one of them")
			}
			v, err := f.verifier()
			if err != nil {
				return fmt.Errorf("verify: %w", err)
			}
			var rep *verifyReport
			if f.file != "" {
				rep, err = f.verifyFile(v)
			} else {
				rep, err = f.verifyImage(cmd.Context(), v, args[0])
			}
			if err != nil {
				return fmt.Errorf("verify: %w", err)
			}
			return rep.write(cmd.OutOrStdout(), f.outp)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.key, "key", "", "PEM public key the attestations are signed with")
	fl.StringVar(&f.identity, "certificate-identity", "", "keyless: the signer's identity (certificate SAN), e.g. system:serviceaccount:bomstream:bomstream")
	fl.StringVar(&f.identityRe, "certificate-identity-regexp", "", "keyless: a regular expression the identity must match")
	fl.StringVar(&f.issuer, "certificate-oidc-issuer", "", "keyless: the OIDC issuer of the identity")
	fl.StringVar(&f.issuerRe, "certificate-oidc-issuer-regexp", "", "keyless: a regular expression the issuer must match")
	fl.StringVar(&f.trustedRoot, "trusted-root", "", "keyless: the Sigstore instance's trusted_root.json (CAs, logs, timestamp authorities)")
	fl.BoolVar(&f.ignoreTlog, "insecure-ignore-tlog", false, "keyless: accept attestations without a transparency log entry (a timestamp is still required)")
	fl.BoolVar(&f.plainHTTP, "allow-http-registry", false, "talk HTTP to the registry (local test registries)")
	fl.StringVar(&f.dockerConfig, "docker-config", "", "docker config.json with the registry credentials (default: anonymous)")
	fl.StringVar(&f.file, "file", "", "verify a BOM file (a bucket object) instead of an image")
	fl.StringVar(&f.bundle, "bundle", "", "the bundle of --file (default: the file's name + .sigstore.json)")
	fl.StringVarP(&f.outp, "output", "o", "text", "text or json")
	return cmd
}

func (f *verifyFlags) verifier() (*signing.Verifier, error) {
	if f.outp != "text" && f.outp != "json" {
		return nil, fmt.Errorf("--output %q: want text or json", f.outp)
	}
	p := signing.Policy{Identity: f.identity, IdentityRegexp: f.identityRe, Issuer: f.issuer, IssuerRegexp: f.issuerRe, IgnoreTlog: f.ignoreTlog}
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
	if p.PublicKey, err = read("key", f.key); err != nil {
		return nil, err
	}
	if p.TrustedRoot, err = read("trusted-root", f.trustedRoot); err != nil {
		return nil, err
	}
	if f.key == "" && f.identity == "" && f.identityRe == "" {
		return nil, errors.New("say whom to trust: --key PUB, or --certificate-identity and --certificate-oidc-issuer with --trusted-root")
	}
	return signing.NewVerifier(p)
}

func (f *verifyFlags) verifyFile(v *signing.Verifier) (*verifyReport, error) {
	bundlePath := cmp.Or(f.bundle, f.file+".sigstore.json")
	bom, err := os.ReadFile(f.file)
	if err != nil {
		return nil, err
	}
	b, err := os.ReadFile(bundlePath)
	if err != nil {
		return nil, fmt.Errorf("bundle of %s: %w", f.file, err)
	}
	rep := &verifyReport{File: f.file}
	got, err := v.VerifyBlob(b, bom)
	rep.add(bundlePath, got, err)
	return rep, rep.outcome(f.file)
}

func (f *verifyFlags) verifyImage(ctx context.Context, v *signing.Verifier, image string) (*verifyReport, error) {
	ref, err := parseImageRef(image)
	if err != nil {
		return nil, err
	}
	client := &auth.Client{Client: http.DefaultClient, Cache: auth.NewCache(), Header: http.Header{"User-Agent": {"bomstream"}}}
	if f.dockerConfig != "" {
		st, err := credentials.NewStore(f.dockerConfig, credentials.StoreOptions{})
		if err != nil {
			return nil, fmt.Errorf("--docker-config %s: not a readable docker config.json", f.dockerConfig)
		}
		client.Credential = credentials.Credential(st)
	}
	repo := &remote.Repository{Client: client, Reference: ref, PlainHTTP: f.plainHTTP}
	subject, err := repo.Resolve(ctx, ref.Reference)
	if err != nil {
		return nil, fmt.Errorf("resolve %s: %w", image, err)
	}
	where := ref.Registry + "/" + ref.Repository + "@" + subject.Digest.String()
	found, err := signing.Attachments(ctx, repo, subject)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", where, err)
	}
	rep := &verifyReport{Image: image, Digest: subject.Digest.String()}
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

// verifyReport is what verify found, in the order found.
type verifyReport struct {
	Image    string         `json:"image,omitempty"`
	Digest   string         `json:"digest,omitempty"`
	File     string         `json:"file,omitempty"`
	Verified []verifiedBOM  `json:"verified"`
	Rejected []rejectedItem `json:"rejected"`
}

type verifiedBOM struct {
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

type rejectedItem struct {
	Attestation string `json:"attestation"`
	Reason      string `json:"reason"`
}

func (r *verifyReport) add(name string, got *signing.Verified, err error) {
	if err == nil {
		err = r.addVerified(name, got)
	}
	if err != nil {
		r.Rejected = append(r.Rejected, rejectedItem{Attestation: name, Reason: err.Error()})
	}
}

func (r *verifyReport) addVerified(name string, got *signing.Verified) error {
	out := verifiedBOM{Attestation: name, PredicateType: got.PredicateType, SignedBy: cmp.Or(got.Identity, "key"), Issuer: got.Issuer,
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
func (r *verifyReport) outcome(what string) error {
	slices.SortStableFunc(r.Verified, func(a, b verifiedBOM) int { return strings.Compare(b.When, a.When) })
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

func (r *verifyReport) write(w io.Writer, format string) error {
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
