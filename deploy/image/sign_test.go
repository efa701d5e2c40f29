package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	cdx "github.com/CycloneDX/cyclonedx-go"
	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/bomstream/bomstream/schemas/validate"
	"github.com/bomstream/bomstream/signing"
	"github.com/bomstream/bomstream/signing/signingtest"
	"github.com/bomstream/bomstream/sinks/oci/ocitest"
)

// cosignBinary is the cosign the interoperability tests run.
func cosignBinary(t *testing.T) string { return signingtest.Cosign(t) }

// runTool runs a command in dir with a HOME of its own and returns its
// stdout, failing the test with both outputs when it fails.
func runTool(t *testing.T, dir, bin string, args ...string) string {
	t.Helper()
	return signingtest.Run(t, dir, bin, args...)
}

// signedCopy copies the shared bomstream layout into a new directory, to
// sign it there, and extracts the image's own bomstream binary for this
// machine: the release verifies itself.
func signedCopy(t *testing.T) (res *Result, dir, bomstream string) {
	t.Helper()
	res = built(t)
	dir = filepath.Join(t.TempDir(), "oci-layout")
	if err := os.CopyFS(dir, os.DirFS(res.Out)); err != nil {
		t.Fatal(err)
	}
	_, imgs := images(t, dir)
	img := imgs["linux/"+runtime.GOARCH]
	if runtime.GOOS != "linux" || img == nil {
		if os.Getenv("CI") == "true" { // CI runs on linux/amd64: there, the release must verify itself
			t.Fatalf("no image to run on %s/%s: CI must run on linux/amd64 or linux/arm64", runtime.GOOS, runtime.GOARCH)
		}
		t.Skipf("no image to run on %s/%s", runtime.GOOS, runtime.GOARCH)
	}
	bomstream = filepath.Join(t.TempDir(), "bomstream")
	layerFilesOf(t, img, bomstream)
	return res, dir, bomstream
}

// writeKeyPair writes a PEM ECDSA P-256 private key and its public key.
func writeKeyPair(t *testing.T, dir string) (key, pub string) {
	t.Helper()
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	privPEM := pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})
	pubPEM, err := signing.PublicKeyPEM(privPEM)
	if err != nil {
		t.Fatal(err)
	}
	key, pub = filepath.Join(dir, "image.key"), filepath.Join(dir, "image.pub")
	if err := os.WriteFile(key, privPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(pub, pubPEM, 0o644); err != nil {
		t.Fatal(err)
	}
	return key, pub
}

// layoutAttestation is a signed attestation listed in a layout.
type layoutAttestation struct {
	manifest  v1.Hash
	subject   v1.Hash
	predType  string
	statement struct {
		Subject []struct {
			Digest map[string]string `json:"digest"`
		} `json:"subject"`
		PredicateType string          `json:"predicateType"`
		Predicate     json.RawMessage `json:"predicate"`
	}
}

// attestationsOf reads the bundles listed in a layout's index.json and
// decodes their statements (unverified: cosign and bomstream verify check
// the signatures).
func attestationsOf(t *testing.T, dir string) []layoutAttestation {
	t.Helper()
	top, im := topIndex(t, dir)
	var out []layoutAttestation
	for _, d := range im.Manifests {
		if d.ArtifactType != signing.BundleMediaType {
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
		ls, err := art.Layers()
		if err != nil || len(ls) != 1 || m.Subject == nil || m.ArtifactType != signing.BundleMediaType {
			t.Fatalf("attestation %s: %d layers (%v), subject %v, artifactType %q", d.Digest, len(ls), err, m.Subject, m.ArtifactType)
		}
		raw, err := readLayer(ls[0])
		if err != nil {
			t.Fatal(err)
		}
		var b struct {
			DSSE struct {
				Payload     string `json:"payload"`
				PayloadType string `json:"payloadType"`
			} `json:"dsseEnvelope"`
		}
		if err := json.Unmarshal(raw, &b); err != nil || b.DSSE.PayloadType != signing.PayloadType {
			t.Fatalf("attestation %s: not a DSSE bundle: %v", d.Digest, err)
		}
		payload, err := base64.StdEncoding.DecodeString(b.DSSE.Payload)
		if err != nil {
			t.Fatal(err)
		}
		a := layoutAttestation{manifest: d.Digest, subject: m.Subject.Digest, predType: m.Annotations[signing.AnnotationPredicateType]}
		if err := json.Unmarshal(payload, &a.statement); err != nil {
			t.Fatal(err)
		}
		if a.statement.PredicateType != a.predType || len(a.statement.Subject) != 1 || "sha256:"+a.statement.Subject[0].Digest["sha256"] != a.subject.String() {
			t.Fatalf("attestation %s: annotation %q, statement %s on %v, manifest subject %s", d.Digest, a.predType, a.statement.PredicateType, a.statement.Subject, a.subject)
		}
		out = append(out, a)
	}
	return out
}

// goSum is the h1: hash go.sum holds for a module version.
func goSum(t *testing.T, path, version string) string {
	t.Helper()
	f, err := os.Open("../../go.sum")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if fs := strings.Fields(sc.Text()); len(fs) == 3 && fs[0] == path && fs[1] == version {
			return fs[2]
		}
	}
	t.Fatalf("go.sum has no %s %s", path, version)
	return ""
}

// checkAttestations checks what a signed layout holds: for each platform
// image and the index, one SBOM and one provenance attestation; the SBOM
// the one Build made (the index's a valid merge of them), the provenance
// naming the commit, the Go version, the platforms and the modules with
// their go.sum hashes.
func checkAttestations(t *testing.T, res *Result, dir string) {
	t.Helper()
	as := attestationsOf(t, dir)
	subjects := map[v1.Hash]string{res.Index: "index"}
	for _, pi := range res.Images {
		subjects[pi.Manifest] = pi.Platform.String()
	}
	if len(as) != 2*len(subjects) {
		t.Fatalf("%d attestations, want %d (SBOM and provenance of %d subjects)", len(as), 2*len(subjects), len(subjects))
	}
	sboms := map[v1.Hash][]byte{}
	for _, r := range referrersOf(t, res.Out) {
		sboms[r.manifest.Subject.Digest] = r.sbom
	}
	v, err := validate.CycloneDX()
	if err != nil {
		t.Fatal(err)
	}
	goVersion := strings.TrimSpace(runTool(t, t.TempDir(), "go", "env", "GOVERSION"))
	natsVersion := moduleVersion(t, "github.com/nats-io/nats-server/v2")
	natsSum := goSum(t, "github.com/nats-io/nats-server/v2", natsVersion)
	seen := map[string]bool{}
	for _, a := range as {
		what, ok := subjects[a.subject]
		if !ok {
			t.Fatalf("attestation %s on %s: not an image of the layout", a.manifest, a.subject)
		}
		seen[what+" "+a.predType] = true
		switch a.predType {
		case PredicateCycloneDX:
			if err := v.ValidateBOM(a.statement.Predicate); err != nil {
				t.Errorf("%s: attested SBOM: %v", what, err)
			}
			var bom cdx.BOM
			if err := json.Unmarshal(a.statement.Predicate, &bom); err != nil {
				t.Fatal(err)
			}
			if mc := bom.Metadata.Component; mc == nil || !strings.Contains(mc.PackageURL, a.subject.Hex) {
				t.Errorf("%s: attested SBOM describes %+v, not %s", what, mc, a.subject)
			}
			if what != "index" {
				var want bytes.Buffer
				if err := json.Compact(&want, sboms[a.subject]); err != nil || !bytes.Equal(want.Bytes(), a.statement.Predicate) {
					t.Errorf("%s: attested SBOM differs from the SBOM referrer (%v)", what, err)
				}
			} else if n := len(*bom.Components); n <= len(res.Images) {
				t.Errorf("index SBOM has %d components", n)
			}
		case PredicateSLSA:
			var p provenance
			if err := json.Unmarshal(a.statement.Predicate, &p); err != nil {
				t.Fatal(err)
			}
			ext := p.BuildDefinition.ExternalParameters
			if ext.Revision != "0123456789abcdef0123456789abcdef01234567" || ext.GoVersion != goVersion || ext.Source != "git+"+DefaultSource || ext.Package != DefaultPackage {
				t.Errorf("%s: external parameters %+v, want the commit, %s, the source and the package", what, ext, goVersion)
			}
			wantPlatforms := []string{what}
			if what == "index" {
				wantPlatforms = nil
				for _, pi := range res.Images {
					wantPlatforms = append(wantPlatforms, pi.Platform.String())
				}
			}
			if !slices.Equal(ext.Platforms, wantPlatforms) {
				t.Errorf("%s: platforms %v", what, ext.Platforms)
			}
			if p.BuildDefinition.BuildType != BuildType || p.RunDetails.Builder.ID != DefaultBuilderID ||
				p.RunDetails.Metadata.StartedOn != "2026-01-02T03:04:05Z" || p.RunDetails.Metadata.FinishedOn != "2026-01-02T03:04:05Z" {
				t.Errorf("%s: build type %q, run details %+v", what, p.BuildDefinition.BuildType, p.RunDetails)
			}
			var src, nats *resourceDescriptor
			for i, d := range p.BuildDefinition.ResolvedDependencies {
				switch d.Name {
				case "source":
					src = &p.BuildDefinition.ResolvedDependencies[i]
				case "github.com/nats-io/nats-server/v2":
					nats = &p.BuildDefinition.ResolvedDependencies[i]
				}
			}
			if src == nil || src.Digest["gitCommit"] != ext.Revision {
				t.Errorf("%s: source dependency %+v", what, src)
			}
			if nats == nil || nats.URI != "pkg:golang/github.com/nats-io/nats-server/v2@"+natsVersion+"?type=module" ||
				nats.Annotations["goSum"] != natsSum || nats.Digest["dirHash"] != h1SHA256(natsSum) {
				t.Errorf("%s: nats-server dependency %+v, want %s %s", what, nats, natsVersion, natsSum)
			}
		default:
			t.Errorf("attestation %s: predicate type %q", a.manifest, a.predType)
		}
	}
	for _, what := range subjects {
		for _, pt := range []string{PredicateCycloneDX, PredicateSLSA} {
			if !seen[what+" "+pt] {
				t.Errorf("%s: no %s attestation", what, pt)
			}
		}
	}
}

// The release signed with a key: the layout's attestations hold what they
// should; signing again replaces them; pushed to a registry with the
// referrers API and to one with the tag schema only, cosign
// verify-attestation accepts the SBOM and the provenance of a platform
// image and of the tag (the index), and the image's own bomstream verify
// accepts both, the provenance as a verified attestation that is no BOM.
func TestSignedWithKey(t *testing.T) {
	cosign := cosignBinary(t)
	res, dir, bomstream := signedCopy(t)
	keys := t.TempDir()
	key, pub := writeKeyPair(t, keys)
	var out strings.Builder
	if err := run(context.Background(), []string{"--skip-build", "--out", dir, "--sign-key", key}, &out, func(string) string { return "" }); err != nil {
		t.Fatal(err)
	}
	t.Logf("%s", out.String())
	keyPEM, _ := os.ReadFile(key)
	if strings.Contains(out.String(), string(keyPEM[30:60])) {
		t.Fatal("the output quotes the key")
	}
	// Again: replaced, not added.
	if err := run(context.Background(), []string{"--skip-build", "--out", dir, "--sign-key", key}, &out, func(string) string { return "" }); err != nil {
		t.Fatal(err)
	}
	checkAttestations(t, res, dir)

	plat := res.Images[0]
	for _, pi := range res.Images {
		if pi.Platform.Arch == runtime.GOARCH {
			plat = pi
		}
	}
	for _, k := range []ocitest.Kind{ocitest.GGCR, ocitest.Distribution} {
		t.Run(string(k), func(t *testing.T) {
			reg := ocitest.Start(t, k, ocitest.Options{})
			ref := reg.Host + "/bomstream:" + res.Tag
			var pushed strings.Builder
			if err := run(context.Background(), []string{"--skip-build", "--out", dir, "--push", ref, "--insecure"}, &pushed, func(string) string { return "" }); err != nil {
				t.Fatal(err)
			}
			byDigest := reg.Host + "/bomstream@" + plat.Manifest.String()
			for _, image := range []string{byDigest, ref} {
				for _, typ := range []string{"cyclonedx", "slsaprovenance1"} {
					got := runTool(t, keys, cosign, "verify-attestation", "--key", pub, "--type", typ,
						"--allow-http-registry", "--insecure-ignore-tlog=true", image)
					if !strings.Contains(got, `"payloadType":"application/vnd.in-toto+json"`) {
						t.Errorf("cosign verify-attestation --type %s %s printed:\n%s", typ, image, got)
					}
				}
			}
			text := runTool(t, keys, bomstream, "verify", "--key", pub, "--allow-http-registry", byDigest)
			for _, want := range []string{"2 verified, 0 rejected", "signed by key", "predicate " + PredicateSLSA + " (not a BOM)"} {
				if !strings.Contains(text, want) {
					t.Errorf("bomstream verify printed no %q:\n%s", want, text)
				}
			}
			var rep struct {
				Verified []struct{ Subject, SignedBy, PredicateType string }
				Rejected []struct{ Reason string }
			}
			if err := json.Unmarshal([]byte(runTool(t, keys, bomstream, "verify", "--key", pub, "--allow-http-registry", "-o", "json", ref)), &rep); err != nil {
				t.Fatal(err)
			}
			types := map[string]bool{}
			for _, v := range rep.Verified {
				types[v.PredicateType] = v.Subject == "bomstream@"+res.Index.String() && v.SignedBy == "key"
			}
			if len(rep.Verified) != 2 || !types["https://cyclonedx.org/bom"] || !types[PredicateSLSA] || len(rep.Rejected) != 0 {
				t.Errorf("bomstream verify -o json %s: %+v", ref, rep)
			}
			// Another key verifies nothing.
			_, otherPub := writeKeyPair(t, t.TempDir())
			cmd := exec.Command(bomstream, "verify", "--key", otherPub, "--allow-http-registry", byDigest)
			if b, err := cmd.CombinedOutput(); err == nil {
				t.Errorf("bomstream verify accepted another key:\n%s", b)
			}
		})
	}
}

// The release signed keyless, against the in-memory Sigstore: bomstream
// verify accepts it by identity and issuer, and refuses another identity.
func TestSignedKeyless(t *testing.T) {
	res, dir, bomstream := signedCopy(t)
	const identity, issuer = "https://github.com/bomstream/bomstream/.github/workflows/release.yml@refs/tags/v0.4.0", "https://token.actions.githubusercontent.com"
	ss := signingtest.New(t)
	s, err := signing.New(signing.Config{Keyless: &signing.Keyless{TokenFile: signingtest.TokenFile(t, identity, issuer)}}, nil, ss.Options()...)
	if err != nil {
		t.Fatal(err)
	}
	as, err := Sign(context.Background(), dir, SignOptions{Signer: s})
	if err != nil {
		t.Fatal(err)
	}
	if len(as) != 2*(len(res.Images)+1) {
		t.Fatalf("%d attestations: %+v", len(as), as)
	}
	checkAttestations(t, res, dir)
	reg := ocitest.Start(t, ocitest.GGCR, ocitest.Options{})
	ref := reg.Host + "/bomstream:" + res.Tag
	if err := Push(context.Background(), dir, ref, PushOptions{Insecure: true}); err != nil {
		t.Fatal(err)
	}
	work := t.TempDir()
	trusted := filepath.Join(work, "trusted_root.json")
	if err := os.WriteFile(trusted, ss.TrustedRoot(t), 0o644); err != nil {
		t.Fatal(err)
	}
	image := reg.Host + "/bomstream@" + res.Images[0].Manifest.String()
	text := runTool(t, work, bomstream, "verify", "--trusted-root", trusted, "--certificate-identity", identity,
		"--certificate-oidc-issuer", issuer, "--allow-http-registry", image)
	for _, want := range []string{"2 verified, 0 rejected", "signed by " + identity + " (" + issuer + ")", "predicate " + PredicateSLSA + " (not a BOM)"} {
		if !strings.Contains(text, want) {
			t.Errorf("bomstream verify printed no %q:\n%s", want, text)
		}
	}
	cmd := exec.Command(bomstream, "verify", "--trusted-root", trusted, "--certificate-identity", "https://github.com/someone/else",
		"--certificate-oidc-issuer", issuer, "--allow-http-registry", image)
	if b, err := cmd.CombinedOutput(); err == nil || !strings.Contains(string(b), "no matching CertificateIdentity") {
		t.Errorf("bomstream verify with another identity: %v\n%s", err, b)
	}
}

// Signing flags are checked before anything is built: one way to sign, a
// key that can be read (named, never quoted), a token for keyless.
func TestSignFlags(t *testing.T) {
	dir := t.TempDir()
	secret := "-----BEGIN PRIVATE KEY-----\nczNjcjN0bWF0ZXJpYWwK\n-----END PRIVATE KEY-----\n"
	bad := filepath.Join(dir, "bad.pem")
	if err := os.WriteFile(bad, []byte(secret), 0o600); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"IMAGE_KEY": secret}
	out := filepath.Join(dir, "never-built")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--sign-key", bad, "--keyless"}, "set one of --sign-key, --sign-key-env, --sign-kms-key and --keyless"},
		{[]string{"--fulcio-url", "https://fulcio.example"}, "need --keyless"},
		{[]string{"--sign-key", filepath.Join(dir, "missing.pem")}, "attest.keyFile " + filepath.Join(dir, "missing.pem") + ": no such file"},
		{[]string{"--sign-key", bad}, "attest.keyFile " + bad + ": the PEM block does not hold a readable private key"},
		{[]string{"--sign-key-env", "IMAGE_KEY"}, "attest.keyEnv IMAGE_KEY: the PEM block"},
		{[]string{"--keyless"}, "--keyless: no OIDC token: set --oidc-token-file, or the variable SIGSTORE_ID_TOKEN"},
		{[]string{"--keyless", "--oidc-token-file", filepath.Join(dir, "token")}, "attest.keyless.tokenFile " + filepath.Join(dir, "token") + ": no such file"},
	} {
		err := run(context.Background(), append([]string{"--out", out}, c.args...), &strings.Builder{}, func(k string) string { return env[k] })
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: got %v, want %q", c.args, err, c.want)
		}
		if err != nil && strings.Contains(err.Error(), "czNjcjN0") {
			t.Errorf("%q: the error quotes the key: %v", c.args, err)
		}
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("a refused signing flag still built %s (%v)", out, err)
	}
}
