package attest_test

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"testing"

	"github.com/bomstream/bomstream/sinks/attest"
)

// A BOM with '&', '<' or '>' (a purl's qualifiers) is attested as it is,
// compacted, not HTML-escaped: VerifyBlob then finds it equal to the file.
func TestStatementKeepsBytes(t *testing.T) {
	file := []byte("{\n  \"components\": [{\"purl\": \"pkg:oci/app@sha256%3Aab?arch=amd64&tag=<v1>\"}]\n}\n")
	sub := attest.Subject{Name: "gs://bucket/bom.cdx.json", Digest: digest(file)}
	st, err := attest.StatementOf(sub, "https://cyclonedx.org/bom", file)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(st, []byte(`"predicate":{"components":[{"purl":"pkg:oci/app@sha256%3Aab?arch=amd64&tag=<v1>"}]}}`)) {
		t.Fatalf("statement %s", st)
	}
	priv, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	keyFile := writeKey(t, priv)
	s, err := attest.New(attest.Config{KeyFile: keyFile}, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := s.Sign(context.Background(), st)
	if err != nil {
		t.Fatal(err)
	}
	v, err := attest.NewVerifier(attest.Policy{PublicKey: publicPEM(t, keyFile)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := v.VerifyBlob(b, file); err != nil {
		t.Fatal(err)
	}
	if _, err := attest.StatementOf(sub, "", file); err == nil {
		t.Error("a statement without a predicate type")
	}
}
