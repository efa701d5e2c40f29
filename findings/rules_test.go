package findings

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func defaults(t testing.TB) *Rules {
	t.Helper()
	r, err := DefaultRules(nil)
	if err != nil {
		t.Fatalf("default rules: %v", err)
	}
	return r
}

// only keeps the findings of one rule, as "subject: message".
func only(fs []Finding, rule string) []string {
	var out []string
	for _, f := range fs {
		if f.Rule == rule {
			out = append(out, f.Subject+": "+f.Message)
		}
	}
	return out
}

func TestFindingDefaultRulesCoverEveryCheck(t *testing.T) {
	r := defaults(t)
	var checks []string
	for _, x := range r.List {
		checks = append(checks, x.Check)
	}
	for c := range checkParams {
		if !slices.Contains(checks, c) {
			t.Errorf("the default rules have no %s rule", c)
		}
	}
}

// Each default rule, with a BOM that breaks it and one that does not.
func TestFindingDefaultRules(t *testing.T) {
	r := defaults(t)
	pinnedHF := Model{Name: "Qwen/Qwen2.5-1.5B-Instruct", LocationKind: "huggingface", Pinned: true, Licensed: true}
	cases := []struct {
		rule     string
		bad, ok  Facts
		contains string
	}{
		{"model-unpinned",
			Facts{Models: []Model{{Name: "org/m", LocationKind: "huggingface"}}},
			Facts{Models: []Model{pinnedHF}}, "no pinned revision"},
		{"model-source", // organisation outside the allow-list
			Facts{Models: []Model{{Name: "someone/m", LocationKind: "huggingface", Pinned: true}}},
			Facts{Models: []Model{pinnedHF}}, "organisation someone"},
		{"model-source", // registry outside the allow-list
			Facts{Models: []Model{{Name: "quay.io/x/m", LocationKind: "oci", PURL: "pkg:oci/m?repository_url=quay.io/x/m&tag=1"}}},
			Facts{Models: []Model{{Name: "nvcr.io/nim/m", LocationKind: "oci", PURL: "pkg:oci/m?repository_url=nvcr.io/nim/m&tag=1"}}}, "comes from quay.io"},
		{"runtime-version", // below the minimum
			Facts{Runtimes: []Runtime{{Name: "vllm", Version: "0.8.4", Confidence: "declared"}}},
			Facts{Runtimes: []Runtime{{Name: "vllm", Version: "0.8.5", Confidence: "declared"}}}, "below the minimum 0.8.5"},
		{"runtime-version", // a version that cannot be compared is reported, never passed
			Facts{Runtimes: []Runtime{{Name: "sglang", Version: "latest", Confidence: "declared"}}},
			Facts{Runtimes: []Runtime{{Name: "sglang", Version: "v0.5.2-cu126", Confidence: "declared"}, {Name: "tgi", Version: "latest"}}}, "unparsable version"},
		{"image-digest",
			Facts{Images: []Image{{Ref: "docker.io/vllm/vllm-openai:v0.10.1"}}},
			Facts{Images: []Image{{Ref: "docker.io/vllm/vllm-openai:v0.10.1", Digests: []string{"sha256:aa"}}}}, "no resolved digest"},
		{"runtime-inferred",
			Facts{Runtimes: []Runtime{{Name: "ollama", Version: "0.6.5", Confidence: "inferred"}}},
			Facts{Runtimes: []Runtime{{Name: "ollama", Version: "0.6.5", Confidence: "declared"}}}, "only inferred"},
		{"model-license",
			Facts{Models: []Model{{Name: "Qwen/Qwen3-8B", LocationKind: "huggingface", Pinned: true}}},
			Facts{Models: []Model{pinnedHF}}, "names no license"},
	}
	for _, tc := range cases {
		bad := only(r.Evaluate(tc.bad), tc.rule)
		if len(bad) != 1 || !strings.Contains(bad[0], tc.contains) {
			t.Errorf("%s: breaking facts %+v gave %q, want one finding saying %q", tc.rule, tc.bad, bad, tc.contains)
		}
		if ok := only(r.Evaluate(tc.ok), tc.rule); len(ok) != 0 {
			t.Errorf("%s: compliant facts %+v gave %q", tc.rule, tc.ok, ok)
		}
	}
}

func TestFindingDenyRange(t *testing.T) {
	r, err := ParseRules("deny.yaml", []byte(`rules:
  - {id: bad-sglang, check: runtime-version, severity: critical, deny: ["sglang>=0.4,<0.5"]}
`), nil)
	if err != nil {
		t.Fatal(err)
	}
	for v, want := range map[string]int{"0.4.6.post1": 1, "v0.4.0-cu124": 1, "0.5.0rc2": 1, "0.5.0": 0, "0.3.9": 0} {
		got := r.Evaluate(Facts{Runtimes: []Runtime{{Name: "sglang", Version: v}}})
		if len(got) != want {
			t.Errorf("sglang %s: %v, want %d findings", v, got, want)
		} else if want == 1 && (got[0].Severity != "critical" || !strings.Contains(got[0].Message, "inside the deny range")) {
			t.Errorf("sglang %s: %+v", v, got[0])
		}
	}
}

// ReadFacts on BOMs the transformer rendered (its golden files).
func TestFindingReadFactsOfRenderedBOMs(t *testing.T) {
	dir := "../transformer/testdata/golden/manifests"
	read := func(name string) Facts {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		f, err := ReadFacts(b)
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	got := defaults(t).Evaluate(read("stacks-operators.yaml--InferenceService-isvc-modelcar-qwen.cdx.json"))
	var ids []string
	for _, f := range got {
		ids = append(ids, f.Rule+" "+f.Subject)
	}
	want := []string{
		"model-license oci://quay.io/example-org/modelcars/qwen2.5-0.5b-instruct:1.0",
		"model-source oci://quay.io/example-org/modelcars/qwen2.5-0.5b-instruct:1.0",
		"model-unpinned oci://quay.io/example-org/modelcars/qwen2.5-0.5b-instruct:1.0",
		"runtime-inferred vllm",
		"runtime-version vllm",
	}
	for _, w := range want {
		if !slices.Contains(ids, w) {
			t.Errorf("missing finding %q in %q", w, ids)
		}
	}
	f := read("engines.yaml--Deployment-llamacpp-and-ollama.cdx.json")
	if len(f.Images) != 2 || len(f.Images[0].Digests) != 0 || len(f.Runtimes) != 2 || f.Runtimes[1].Confidence != "inferred" || f.Models[0].Pinned {
		t.Errorf("facts: %+v", f)
	}
}

func TestFindingBadRulesFile(t *testing.T) {
	cases := []struct{ yaml, want string }{
		{`rules: [{id: a, check: model-unpinned, severity: urgent}]`, `rule "a" (rules[0], line 1): field severity (line 1): "urgent" is not one of info, low, medium, high, critical`},
		{"rules:\n  - id: ok\n    check: model-unpinned\n    severity: low\n  - id: src\n    check: model-source\n    severity: high\n    organizations: [x]\n",
			`rule "src" (rules[1], line 5): field organizations (line 8): unknown for check model-source (it takes: organisations, registries)`},
		{"rules:\n  - id: rv\n    check: runtime-version\n    severity: high\n    minimum: {vllm: latest}\n", `rule "rv" (rules[0], line 2): field minimum.vllm (line 5): malformed version range: range "vllm<latest": constraint "<latest": version "latest"`},
		{"rules:\n  - id: rv\n    check: runtime-version\n    severity: high\n    deny: [\"vllm\"]\n", `field deny[0] (line 5): malformed version range: range "vllm": no version constraint`},
		{`rules: [{id: Bad_Id, check: nope, severity: low}]`, `field check (line 1): "nope" is not one of image-digest, model-license`},
		{`rules: [{id: a, check: model-unpinned, severity: low}, {id: a, check: image-digest, severity: low}]`, `rule "a" (rules[1], line 1): field id: "a" is used by rules[0] too`},
		{`rulez: []`, `line 1: rulez: unknown key (known here: rules)`},
	}
	for _, tc := range cases {
		_, err := ParseRules("team.yaml", []byte(tc.yaml), nil)
		if err == nil || !strings.Contains(err.Error(), "findings rules file team.yaml: ") || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("rules %q:\n got %v\nwant %s", tc.yaml, err, tc.want)
		}
	}
	if _, err := LoadRules(filepath.Join(t.TempDir(), "missing.yaml"), nil); err == nil || !strings.Contains(err.Error(), "missing.yaml") {
		t.Errorf("a missing file: %v", err)
	}
}

func TestFindingDisabledRule(t *testing.T) {
	r, err := ParseRules("x", []byte(`rules: [{id: a, check: model-license, severity: low, enabled: false}, {id: b, check: image-digest, severity: low}]`), nil)
	if err != nil || !slices.Equal(r.IDs(), []string{"b"}) {
		t.Fatalf("%v %v", r, err)
	}
}
