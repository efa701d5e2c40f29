package gcs

import (
	"context"
	"strings"
	"testing"

	"github.com/bomstream/bomstream/signing"
	"github.com/bomstream/bomstream/signing/signingtest"
	"github.com/bomstream/bomstream/sinks"
	"github.com/bomstream/bomstream/sinks/gcs/gcstest"
	"github.com/bomstream/bomstream/sinks/sinktest"
)

// Keyless (an in-memory Sigstore): a bundle beside each BOM object that
// verifies against the object's bytes by identity and issuer; a replay
// signs and writes nothing.
func TestAttestBundles(t *testing.T) {
	srv := gcstest.Start(t, "boms")
	ss := signingtest.New(t)
	const id, iss = "system:serviceaccount:bomstream:bomstream", "https://kubernetes.default.svc"
	reg := sinks.Registry{Type: sinks.Type{NewConfig: SinkType.NewConfig}}
	raw := srv.Config("signed")
	raw["attest"] = map[string]any{"keyless": map[string]any{"tokenFile": signingtest.TokenFile(t, id, iss)}}
	cfg, err := reg.Decode(Type, raw)
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(context.Background(), *cfg.(*Config), sinks.Deps{}, WithAttestOptions(ss.Options()...))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	b := sinktest.NewBOM(sinktest.Workload("chat"), 1)
	if err := s.Export(context.Background(), b); err != nil {
		t.Fatal(err)
	}
	p, _ := s.WorkloadPaths(b.Workload)
	objs := map[string][]byte{}
	for _, o := range srv.Objects(t, p.Dir+"/") {
		objs[o.Name] = o.Content
	}
	name := s.BOMObject(p, b.BomHash)
	bundle, ok := objs[name+BundleSuffix]
	if !ok {
		t.Fatalf("no bundle beside %s: %v", name, objs)
	}
	v, err := signing.NewVerifier(signing.Policy{TrustedRoot: ss.TrustedRoot(t), Identity: id, Issuer: iss})
	if err != nil {
		t.Fatal(err)
	}
	got, err := v.VerifyBlob(bundle, objs[name])
	if err != nil {
		t.Fatal(err)
	}
	if got.Subject.Name != "gs://boms/"+name || got.Identity != id {
		t.Fatalf("verified %+v", got)
	}
	if _, err := v.VerifyBlob(bundle, []byte(strings.Replace(string(objs[name]), "chat", "chad", 1))); err == nil {
		t.Fatal("a changed BOM verified")
	}
	writes := srv.Writes()
	if err := s.Export(context.Background(), b); err != nil {
		t.Fatal(err)
	}
	if n := srv.Writes() - writes; n != 0 {
		t.Fatalf("a replay wrote %d objects", n)
	}
}

func TestAttestKeyMissing(t *testing.T) {
	srv := gcstest.Start(t, "boms")
	raw := srv.Config("")
	raw["attest"] = map[string]any{"keyEnv": "BOMSTREAM_SIGNING_KEY"}
	reg := sinks.Registry{Type: SinkType}
	cfg, err := reg.Decode(Type, raw)
	if err != nil {
		t.Fatal(err)
	}
	_, err = reg.New(context.Background(), Type, "gcs", cfg, sinks.Deps{})
	if err == nil || !strings.Contains(err.Error(), "sink gcs: attest.keyEnv BOMSTREAM_SIGNING_KEY: the environment variable is not set") {
		t.Fatalf("got %v", err)
	}
}
