package sinks_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/bomstream/bomstream/schemas"
	"github.com/bomstream/bomstream/schemas/validate"
	"github.com/bomstream/bomstream/sinks"
)

// cdx17 compiles the official CycloneDX 1.7 schema from ../shared (CI has
// it); outside CI without it, the test cannot say anything.
func cdx17(t *testing.T) *validate.Validator {
	t.Helper()
	dir, ok := validate.SharedSchemaDir("cyclonedx-1.7", "bom-1.7.schema.json")
	if !ok {
		if os.Getenv("CI") != "" {
			t.Fatal("../shared/schemas/cyclonedx-1.7 is missing: CI must provide the official schemas")
		}
		t.Skip("no ../shared/schemas/cyclonedx-1.7 here")
	}
	v, err := validate.New17(dir)
	if err != nil || !v.Official() {
		t.Fatalf("compile the official 1.7 schema from %s: %v", dir, err)
	}
	return v
}

// Every golden BOM of the transformer converts to a 1.7 document that the
// official 1.7 schema accepts and that says everything the 1.6 one says:
// equal as JSON values but for specVersion and $schema.
func TestConvertSpec17IsValidAndLossless(t *testing.T) {
	v17 := cdx17(t)
	files, _ := filepath.Glob("../transformer/testdata/golden/*/*.cdx.json")
	if len(files) < 50 {
		t.Fatalf("%d golden BOMs found", len(files))
	}
	for _, f := range files {
		body, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		out, err := sinks.ConvertSpec(body, sinks.Spec17)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if err := v17.ValidateBOM(out); err != nil {
			t.Fatalf("%s: the 1.7 document fails the official schema: %v", f, err)
		}
		again, _ := sinks.ConvertSpec(body, sinks.Spec17)
		if !bytes.Equal(out, again) {
			t.Fatalf("%s: conversion is not deterministic", f)
		}
		var a, b map[string]any
		if json.Unmarshal(body, &a) != nil || json.Unmarshal(out, &b) != nil {
			t.Fatalf("%s: not JSON", f)
		}
		if b["specVersion"] != "1.7" || !strings.Contains(b["$schema"].(string), "bom-1.7") {
			t.Fatalf("%s: specVersion %v, $schema %v", f, b["specVersion"], b["$schema"])
		}
		for _, m := range []map[string]any{a, b} {
			delete(m, "specVersion")
			delete(m, "$schema")
		}
		if !reflect.DeepEqual(a, b) {
			ja, _ := json.Marshal(a)
			jb, _ := json.Marshal(b)
			t.Fatalf("%s: the 1.7 document differs from the 1.6 one:\n1.6 %s\n1.7 %s", f, ja, jb)
		}
	}
}

// A sink of specVersion 1.7 gets converted bodies under the canonical
// bomHash; 1.6 gets the bytes as rendered; a bad version is refused.
func TestWithSpecVersion(t *testing.T) {
	body, err := os.ReadFile("../transformer/testdata/golden/manifests/stacks-runtimes.yaml--Deployment-tgi-gaudi.cdx.json")
	if err != nil {
		t.Fatal(err)
	}
	b := sinks.BOM{Workload: schemas.Workload{Cluster: "c", Namespace: "n", Kind: "Deployment", Name: "x"}, BomHash: schemas.BomHash(body), Body: body}
	for _, c := range []struct{ v, want string }{{"", "1.6"}, {"1.6", "1.6"}, {"1.7", "1.7"}} {
		rec := &recorder{}
		if err := sinks.WithSpecVersion(rec, c.v).Export(context.Background(), b); err != nil {
			t.Fatal(err)
		}
		var doc struct{ SpecVersion string }
		if json.Unmarshal(rec.got.Body, &doc) != nil || doc.SpecVersion != c.want || rec.got.BomHash != b.BomHash {
			t.Errorf("specVersion %q: got %q, hash %s", c.v, doc.SpecVersion, rec.got.BomHash)
		}
		if c.want == "1.6" && !bytes.Equal(rec.got.Body, body) {
			t.Errorf("specVersion %q: the rendered bytes were changed", c.v)
		}
	}
	if err := sinks.ValidSpecVersion("1.5"); err == nil || !strings.Contains(err.Error(), `specVersion "1.5"`) {
		t.Fatalf("1.5: %v", err)
	}
	bad := b
	bad.Body = []byte(`{"components":"no"}`)
	if err := sinks.WithSpecVersion(&recorder{}, "1.7").Export(context.Background(), bad); !sinks.IsPermanent(err) {
		t.Fatalf("an unconvertible body: %v, want permanent", err)
	}
}

type recorder struct{ got sinks.BOM }

func (r *recorder) Name() string                                     { return "rec" }
func (r *recorder) Export(_ context.Context, b sinks.BOM) error      { r.got = b; return nil }
func (r *recorder) Tombstone(context.Context, sinks.Tombstone) error { return nil }
func (r *recorder) Close() error                                     { return nil }
