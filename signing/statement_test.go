package signing_test

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"testing"

	"github.com/bomstream/bomstream/signing"
)

// A BOM with '&', '<' or '>' (a purl's qualifiers) is attested as it is,
// compacted, not HTML-escaped: VerifyBlob then finds it equal to the file.
func TestStatementKeepsBytes(t *testing.T) {
	file := []byte("{\n  \"components\": [{\"purl\": \"pkg:oci/app@sha256%3Aab?arch=amd64&tag=<v1>\"}]\n}\n")
	sub := signing.Subject{Name: "gs://bucket/bom.cdx.json", Digest: digest(file)}
	st, err := signing.StatementOf(sub, "https://cyclonedx.org/bom", file)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(st, []byte(`"predicate":{"components":[{"purl":"pkg:oci/app@sha256%3Aab?arch=amd64&tag=<v1>"}]}}`)) {
		t.Fatalf("statement %s", st)
	}
	priv, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	keyFile := writeKey(t, priv)
	s, err := signing.New(signing.Config{KeyFile: keyFile}, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := s.Sign(context.Background(), st)
	if err != nil {
		t.Fatal(err)
	}
	v, err := signing.NewVerifier(signing.Policy{PublicKey: publicPEM(t, keyFile)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := v.VerifyBlob(b, file); err != nil {
		t.Fatal(err)
	}
	if _, err := signing.StatementOf(sub, "", file); err == nil {
		t.Error("a statement without a predicate type")
	}
}
