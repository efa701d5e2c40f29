package bomview_test

import (
	"encoding/json"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/bomstream/bomstream/inventory/bomview"
)

const goldenDir = "../../transformer/testdata/golden/manifests"

// golden reads a golden BOM of the transformer.
func golden(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(goldenDir, name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// mustRead reads body or fails t.
func mustRead(t testing.TB, body []byte) bomview.View {
	t.Helper()
	v, err := bomview.Read(body)
	if err != nil {
		t.Fatalf("Read: %v", err)
	}
	return v
}

// find is the component of ref among cs.
func find(t *testing.T, cs []bomview.Component, ref string) bomview.Component {
	t.Helper()
	for _, c := range cs {
		if c.Ref == ref {
			return c
		}
	}
	t.Fatalf("no component %s among %v", ref, refs(cs))
	return bomview.Component{}
}

func refs(cs []bomview.Component) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.Ref
	}
	return out
}

func TestReadAllGolden(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(goldenDir, "*.cdx.json"))
	if err != nil || len(files) < 10 {
		t.Fatalf("golden files: %v %v", files, err)
	}
	for _, f := range files {
		body, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var raw struct {
			Components []struct {
				Type string `json:"type"`
			} `json:"components"`
		}
		if err := json.Unmarshal(body, &raw); err != nil {
			t.Fatal(err)
		}
		v, err := bomview.Read(body)
		if err != nil {
			t.Errorf("%s: %v", filepath.Base(f), err)
			continue
		}
		if n := len(v.Runtimes) + len(v.Models) + len(v.Images) + len(v.Others); n != len(raw.Components) {
			t.Errorf("%s: %d components in the view, %d in the BOM", filepath.Base(f), n, len(raw.Components))
		}
		if v.Workload.Ref != "workload" || v.Workload.Property("bomstream:inputHash") == nil || len(v.Others) != 0 {
			t.Errorf("%s: workload %+v, others %v", filepath.Base(f), v.Workload, refs(v.Others))
		}
		if d := bomview.Compare(v, v); !d.Empty() {
			t.Errorf("%s: Compare with itself: %+v", filepath.Base(f), d)
		}
	}
}

func TestReadVLLMServe(t *testing.T) {
	v := mustRead(t, golden(t, "engines.yaml--Deployment-vllm-serve.cdx.json"))
	if v.SpecVersion != "1.6" || v.SerialNumber != "urn:uuid:a418d534-aa9c-5daa-924e-5d01b4596f89" || v.Timestamp != "2026-11-30T01:02:03Z" {
		t.Errorf("header %q %q %q", v.SpecVersion, v.SerialNumber, v.Timestamp)
	}
	if len(v.Runtimes) != 1 || len(v.Models) != 1 || len(v.Images) != 1 || len(v.Others) != 0 {
		t.Fatalf("runtimes %v models %v images %v others %v", refs(v.Runtimes), refs(v.Models), refs(v.Images), refs(v.Others))
	}
	w := v.Workload
	if w.Name != "vllm-serve" || w.Group != "ml" || w.Section != bomview.SectionWorkload ||
		!slices.Equal(w.Property("bomstream:cluster"), []string{"dev"}) ||
		!slices.Equal(w.Property("bomstream:kind"), []string{"Deployment"}) ||
		!slices.Equal(w.Property("bomstream:uid"), []string{"36a203cb1b990c830e0649357ae36cb8"}) ||
		!slices.Equal(w.Roles, []string{"decode"}) {
		t.Errorf("workload %+v", w)
	}

	rt := v.Runtimes[0]
	if rt.Ref != "runtime:vllm@0.9.2" || rt.Type != "application" || rt.Name != "vLLM" || rt.Version != "0.9.2" ||
		rt.Purl != "pkg:pypi/vllm@0.9.2" || rt.Confidence != "declared" || rt.Section != bomview.SectionRuntime ||
		!slices.Equal(rt.Roles, []string{"decode"}) {
		t.Errorf("runtime %+v", rt)
	}
	if len(rt.Properties) != 10 || rt.Properties[0] != (bomview.Property{Name: "bomstream:confidence", Value: "declared"}) ||
		!slices.Equal(rt.Property("bomstream:runtime:tensorParallelSize"), []string{"4"}) || rt.Property("nope") != nil {
		t.Errorf("runtime properties %v", rt.Properties)
	}
	wantEv := []bomview.Evidence{
		{Field: "name", Technique: "manifest-analysis", Confidence: 1, Value: "command vllm serve"},
		{Field: "name", Technique: "manifest-analysis", Confidence: 0.6, Value: "image vllm/vllm-openai:v0.9.2"},
		{Field: "version", Technique: "manifest-analysis", Confidence: 0.6, Value: "tag v0.9.2", Concluded: "0.9.2"},
	}
	if !reflect.DeepEqual(rt.Evidence, wantEv) {
		t.Errorf("runtime evidence %+v", rt.Evidence)
	}
	if !slices.Equal(rt.Locations, []string{"spec.template.spec.containers[0].command[0]", "spec.template.spec.containers[0].image"}) {
		t.Errorf("runtime locations %v", rt.Locations)
	}

	m := v.Models[0]
	const rev = "0123456789abcdef0123456789abcdef01234567"
	if m.Ref != "model:huggingface:org/model-a" || m.Name != "org/model-a" || m.Version != rev ||
		!slices.Equal(m.Revisions, []string{rev}) || m.Digests != nil || m.Section != bomview.SectionModel {
		t.Errorf("model %+v", m)
	}
	img := v.Images[0]
	if img.Ref != "container:docker.io/vllm/vllm-openai:v0.9.2" || img.Name != "docker.io/vllm/vllm-openai" ||
		img.Digests != nil || !slices.Equal(img.Property("bomstream:image:digest"), []string{"unresolved"}) ||
		!slices.Equal(img.Locations, []string{"spec.template.spec.containers[0].image"}) {
		t.Errorf("image %+v", img)
	}
	if !slices.Equal(v.Dependencies["workload"], []string{"container:docker.io/vllm/vllm-openai:v0.9.2", "runtime:vllm@0.9.2"}) ||
		!slices.Equal(v.Dependencies["runtime:vllm@0.9.2"], []string{"model:huggingface:org/model-a"}) {
		t.Errorf("dependencies %v", v.Dependencies)
	}
	if deps, ok := v.Dependencies["model:huggingface:org/model-a"]; !ok || deps != nil {
		t.Errorf("a dependency with no dependsOn: %v %v", deps, ok)
	}
}

func TestReadRolesAndSeveralRuntimes(t *testing.T) {
	v := mustRead(t, golden(t, "operators.yaml--DynamoGraphDeployment-dgd-sglang.cdx.json"))
	if !slices.Equal(refs(v.Runtimes), []string{"runtime:dynamo@0.9.0", "runtime:sglang"}) || len(v.Models) != 1 || len(v.Images) != 1 {
		t.Fatalf("runtimes %v models %v images %v", refs(v.Runtimes), refs(v.Models), refs(v.Images))
	}
	sg := find(t, v.Runtimes, "runtime:sglang")
	if !slices.Equal(sg.Roles, []string{"decode", "frontend", "prefill", "worker"}) ||
		!slices.Equal(sg.Property("bomstream:runtime:tensorParallelSize"), []string{"2", "4"}) ||
		!slices.Equal(sg.Property("bomstream:runtime:wrappedBy"), []string{"dynamo"}) || sg.Version != "" {
		t.Errorf("sglang %+v", sg)
	}
	if m := v.Models[0]; !slices.Equal(m.Roles, []string{"decode", "prefill", "worker"}) || m.Revisions != nil ||
		!slices.Equal(m.Property("bomstream:model:unpinned"), []string{"true"}) {
		t.Errorf("model %+v", m)
	}
	dyn := find(t, v.Runtimes, "runtime:dynamo@0.9.0")
	if len(dyn.Evidence) != 5 || dyn.Evidence[2].Value != "kind DynamoGraphDeployment" || len(dyn.Locations) != 7 {
		t.Errorf("dynamo evidence %+v locations %v", dyn.Evidence, dyn.Locations)
	}

	v = mustRead(t, golden(t, "engines.yaml--Deployment-llamacpp-and-ollama.cdx.json"))
	if !slices.Equal(refs(v.Runtimes), []string{"runtime:llama.cpp", "runtime:ollama@0.6.5"}) ||
		!slices.Equal(refs(v.Images), []string{"container:docker.io/ollama/ollama:0.6.5", "container:ghcr.io/ggml-org/llama.cpp:server"}) ||
		!slices.Equal(refs(v.Models), []string{"model:path:/models/q5.gguf"}) {
		t.Errorf("runtimes %v images %v models %v", refs(v.Runtimes), refs(v.Images), refs(v.Models))
	}
	if o := find(t, v.Runtimes, "runtime:ollama@0.6.5"); o.Confidence != "inferred" || o.Roles != nil {
		t.Errorf("ollama %+v", o)
	}

	v = mustRead(t, golden(t, "stacks-operators.yaml--Model-kubeai-llama-lora.cdx.json"))
	if len(v.Runtimes) != 1 || len(v.Images) != 0 || !slices.Equal(refs(v.Models), []string{
		"model:huggingface:example-org/llama-3.1-8b-sql-lora",
		"model:huggingface:meta-llama/llama-3.1-8b-instruct",
		"model:s3:s3://kubeai-adapters-example/llama-3.1-8b/support-lora",
	}) {
		t.Errorf("runtimes %v models %v images %v", refs(v.Runtimes), refs(v.Models), refs(v.Images))
	}
	if m := v.Models[1]; m.Name != "meta-llama/Llama-3.1-8B-Instruct" || !slices.Equal(m.Locations, []string{"spec.url"}) {
		t.Errorf("model %+v", m)
	}
}

// edit decodes body, lets f change it, and encodes it again.
func edit(t *testing.T, body []byte, f func(doc map[string]any)) []byte {
	t.Helper()
	var doc map[string]any
	if err := json.Unmarshal(body, &doc); err != nil {
		t.Fatal(err)
	}
	f(doc)
	out, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// comp is the component of ref in doc, nil if none.
func comp(doc map[string]any, ref string) map[string]any {
	for _, c := range doc["components"].([]any) {
		if c := c.(map[string]any); c["bom-ref"] == ref {
			return c
		}
	}
	return nil
}

// setProp sets the values of the property name of c (a component).
func setProp(c map[string]any, name string, values ...string) {
	var ps []any
	for _, p := range c["properties"].([]any) {
		if p.(map[string]any)["name"] != name {
			ps = append(ps, p)
		}
	}
	for _, v := range values {
		ps = append(ps, map[string]any{"name": name, "value": v})
	}
	c["properties"] = ps
}

// deps is the dependency entry of ref in doc, nil if none.
func deps(doc map[string]any, ref string) map[string]any {
	for _, d := range doc["dependencies"].([]any) {
		if d := d.(map[string]any); d["ref"] == ref {
			return d
		}
	}
	return nil
}

// renameRef renames ref everywhere in doc's components and dependencies.
func renameRef(doc map[string]any, from, to string) {
	comp(doc, from)["bom-ref"] = to
	for _, d := range doc["dependencies"].([]any) {
		d := d.(map[string]any)
		if d["ref"] == from {
			d["ref"] = to
		}
		if on, ok := d["dependsOn"].([]any); ok {
			for i, r := range on {
				if r == from {
					on[i] = to
				}
			}
		}
	}
}

// removeRef removes ref from doc's components and dependencies.
func removeRef(doc map[string]any, ref string) {
	var cs []any
	for _, c := range doc["components"].([]any) {
		if c.(map[string]any)["bom-ref"] != ref {
			cs = append(cs, c)
		}
	}
	doc["components"] = cs
	var ds []any
	for _, d := range doc["dependencies"].([]any) {
		d := d.(map[string]any)
		if d["ref"] == ref {
			continue
		}
		if on, ok := d["dependsOn"].([]any); ok {
			d["dependsOn"] = slices.DeleteFunc(on, func(r any) bool { return r == ref })
		}
		ds = append(ds, d)
	}
	doc["dependencies"] = ds
}

// setDigest resolves the image c to the sha256 digest of hex.
func setDigest(c map[string]any, hex string) {
	setProp(c, "bomstream:image:digest", "sha256:"+hex)
	c["version"] = "sha256:" + hex
	c["purl"] = "pkg:oci/vllm-openai@sha256%3A" + hex + "?repository_url=docker.io/vllm/vllm-openai"
	c["hashes"] = []any{map[string]any{"alg": "SHA-256", "content": hex}}
}

const (
	base     = "stacks-runtimes.yaml--Deployment-dl-hf-cli-vllm.cdx.json"
	vllmImg  = "container:docker.io/vllm/vllm-openai:v0.8.5.post1"
	pyImg    = "container:docker.io/library/python:3.11-slim"
	qwen     = "model:huggingface:qwen/qwen2.5-1.5b-instruct"
	oldRev   = "8a2c1f5e9b7d3c4a6e0f1b2d3c4e5f6a7b8c9d0e"
	newRev   = "1111111111111111111111111111111111111111"
	oldRT    = "runtime:vllm@0.8.5.post1"
	newRT    = "runtime:vllm@0.9.0"
	extra    = "model:huggingface:org/extra"
	newHash  = "sha256:2222222222222222222222222222222222222222222222222222222222222222"
	digestA  = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	digestB  = "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
	qwenPURL = "pkg:huggingface/Qwen/Qwen2.5-1.5B-Instruct@"
)

// versions are an older and a newer version of the golden BOM base: the
// vLLM image resolved to digest A then B, and in the newer one the model
// at another revision, vLLM 0.9.0, a model added and the python image
// removed.
func versions(t *testing.T) (older, newer []byte) {
	body := golden(t, base)
	older = edit(t, body, func(doc map[string]any) { setDigest(comp(doc, vllmImg), digestA) })
	newer = edit(t, body, func(doc map[string]any) {
		setDigest(comp(doc, vllmImg), digestB)

		m := comp(doc, qwen)
		setProp(m, "bomstream:model:revision", newRev)
		m["version"], m["purl"] = newRev, qwenPURL+newRev

		rt := comp(doc, oldRT)
		rt["version"], rt["purl"] = "0.9.0", "pkg:pypi/vllm@0.9.0"
		renameRef(doc, oldRT, newRT)

		doc["components"] = append(doc["components"].([]any), map[string]any{
			"bom-ref": extra, "type": "machine-learning-model", "name": "org/extra",
			"properties": []any{map[string]any{"name": "bomstream:confidence", "value": "declared"}},
		})
		doc["dependencies"] = append(doc["dependencies"].([]any), map[string]any{"ref": extra})
		d := deps(doc, newRT)
		d["dependsOn"] = append(d["dependsOn"].([]any), extra)

		removeRef(doc, pyImg)
		setProp(doc["metadata"].(map[string]any)["component"].(map[string]any), "bomstream:inputHash", newHash)
	})
	return older, newer
}

func TestCompareEdits(t *testing.T) {
	ob, nb := versions(t)
	older, newer := mustRead(t, ob), mustRead(t, nb)
	d := bomview.Compare(older, newer)

	if got := refs(d.Added); !slices.Equal(got, []string{extra}) {
		t.Errorf("added %v", got)
	}
	if got := refs(d.Removed); !slices.Equal(got, []string{pyImg}) {
		t.Errorf("removed %v", got)
	}
	want := []bomview.Change{
		{Ref: vllmImg, Type: "container", Name: "docker.io/vllm/vllm-openai", Section: bomview.SectionImage, Fields: []bomview.FieldChange{
			{Field: "hash:SHA-256", Old: digestA, New: digestB},
			{Field: "property:bomstream:image:digest", Old: "sha256:" + digestA, New: "sha256:" + digestB},
			{Field: "purl", Old: "pkg:oci/vllm-openai@sha256%3A" + digestA + "?repository_url=docker.io/vllm/vllm-openai", New: "pkg:oci/vllm-openai@sha256%3A" + digestB + "?repository_url=docker.io/vllm/vllm-openai"},
			{Field: "version", Old: "sha256:" + digestA, New: "sha256:" + digestB},
		}},
		{Ref: qwen, Type: "machine-learning-model", Name: "Qwen/Qwen2.5-1.5B-Instruct", Section: bomview.SectionModel, Fields: []bomview.FieldChange{
			{Field: "property:bomstream:model:revision", Old: oldRev, New: newRev},
			{Field: "purl", Old: qwenPURL + oldRev, New: qwenPURL + newRev},
			{Field: "version", Old: oldRev, New: newRev},
		}},
		{Ref: newRT, Type: "application", Name: "vLLM", Section: bomview.SectionRuntime, Fields: []bomview.FieldChange{
			{Field: "dependsOn", Old: qwen, New: extra + ", " + qwen},
			{Field: "purl", Old: "pkg:pypi/vllm@0.8.5.post1", New: "pkg:pypi/vllm@0.9.0"},
			{Field: "ref", Old: oldRT, New: newRT},
			{Field: "version", Old: "0.8.5.post1", New: "0.9.0"},
		}},
	}
	if !reflect.DeepEqual(d.Changed, want) {
		t.Errorf("changed:\n got %+v\nwant %+v", d.Changed, want)
	}
	// The older version's input hash is the golden's, whatever the inputs
	// hash to today.
	var oldHash string
	edit(t, ob, func(doc map[string]any) {
		for _, p := range doc["metadata"].(map[string]any)["component"].(map[string]any)["properties"].([]any) {
			if p := p.(map[string]any); p["name"] == "bomstream:inputHash" {
				oldHash, _ = p["value"].(string)
			}
		}
	})
	if !strings.HasPrefix(oldHash, "sha256:") || oldHash == newHash {
		t.Fatalf("golden %s: input hash %q", base, oldHash)
	}
	wantWL := []bomview.FieldChange{
		{Field: "dependsOn", Old: pyImg + ", " + vllmImg + ", " + oldRT, New: vllmImg + ", " + newRT},
		{Field: "property:bomstream:inputHash", Old: oldHash, New: newHash},
	}
	if !reflect.DeepEqual(d.Workload, wantWL) {
		t.Errorf("workload:\n got %+v\nwant %+v", d.Workload, wantWL)
	}
	if d.Empty() {
		t.Error("Empty")
	}

	// The same edits compared the other way round.
	back := bomview.Compare(newer, older)
	if !slices.Equal(refs(back.Added), []string{pyImg}) || !slices.Equal(refs(back.Removed), []string{extra}) ||
		len(back.Changed) != 3 || back.Changed[2].Ref != oldRT {
		t.Errorf("backwards: %+v", back)
	}

	// Deterministic: the same views, the same diff, from fresh reads too.
	if again := bomview.Compare(mustRead(t, ob), mustRead(t, nb)); !reflect.DeepEqual(again, d) {
		t.Errorf("second Compare differs:\n%+v\n%+v", again, d)
	}
	if !bomview.Compare(newer, newer).Empty() || !bomview.Compare(older, older).Empty() {
		t.Error("a version compared with itself is not Empty")
	}
}

func TestComparePairing(t *testing.T) {
	body := golden(t, base)
	older := mustRead(t, body)

	t.Run("a new image tag is one change", func(t *testing.T) {
		const to = "container:docker.io/vllm/vllm-openai:v0.9.0"
		newer := mustRead(t, edit(t, body, func(doc map[string]any) {
			c := comp(doc, vllmImg)
			c["version"] = "v0.9.0"
			setProp(c, "bomstream:image:tag", "v0.9.0")
			renameRef(doc, vllmImg, to)
		}))
		d := bomview.Compare(older, newer)
		want := []bomview.Change{{Ref: to, Type: "container", Name: "docker.io/vllm/vllm-openai", Section: bomview.SectionImage, Fields: []bomview.FieldChange{
			{Field: "property:bomstream:image:tag", Old: "v0.8.5.post1", New: "v0.9.0"},
			{Field: "ref", Old: vllmImg, New: to},
			{Field: "version", Old: "v0.8.5.post1", New: "v0.9.0"},
		}}}
		if d.Added != nil || d.Removed != nil || d.Workload != nil || !reflect.DeepEqual(d.Changed, want) {
			t.Errorf("got %+v", d)
		}
	})

	t.Run("two candidates are not paired", func(t *testing.T) {
		// The vLLM image at two new tags: Compare cannot tell which one
		// the old tag became.
		newer := mustRead(t, edit(t, body, func(doc map[string]any) {
			c := comp(doc, vllmImg)
			twin := map[string]any{}
			maps.Copy(twin, c)
			twin["bom-ref"] = "container:docker.io/vllm/vllm-openai:v0.10.0"
			doc["components"] = append(doc["components"].([]any), twin)
			renameRef(doc, vllmImg, "container:docker.io/vllm/vllm-openai:v0.9.0")
		}))
		d := bomview.Compare(older, newer)
		if !slices.Equal(refs(d.Added), []string{"container:docker.io/vllm/vllm-openai:v0.10.0", "container:docker.io/vllm/vllm-openai:v0.9.0"}) ||
			!slices.Equal(refs(d.Removed), []string{vllmImg}) || d.Changed != nil {
			t.Errorf("added %v removed %v changed %+v", refs(d.Added), refs(d.Removed), d.Changed)
		}
		if len(d.Workload) != 1 || d.Workload[0].Field != "dependsOn" {
			t.Errorf("workload %+v", d.Workload)
		}
	})

	t.Run("another name is no pair", func(t *testing.T) {
		newer := mustRead(t, edit(t, body, func(doc map[string]any) {
			comp(doc, qwen)["name"] = "Qwen/Qwen3-8B"
			renameRef(doc, qwen, "model:huggingface:qwen/qwen3-8b")
		}))
		d := bomview.Compare(older, newer)
		if !slices.Equal(refs(d.Added), []string{"model:huggingface:qwen/qwen3-8b"}) || !slices.Equal(refs(d.Removed), []string{qwen}) {
			t.Errorf("added %v removed %v", refs(d.Added), refs(d.Removed))
		}
		// The runtime now depends on the new model.
		if len(d.Changed) != 1 || d.Changed[0].Ref != oldRT || len(d.Changed[0].Fields) != 1 || d.Changed[0].Fields[0].Field != "dependsOn" {
			t.Errorf("changed %+v", d.Changed)
		}
	})

	t.Run("roles evidence and locations", func(t *testing.T) {
		newer := mustRead(t, edit(t, body, func(doc map[string]any) {
			c := comp(doc, qwen)
			setProp(c, "bomstream:role", "prefill", "decode")
			ev := c["evidence"].(map[string]any)
			ev["occurrences"] = append(ev["occurrences"].([]any), map[string]any{"location": "spec.x"})
			m := ev["identity"].([]any)[0].(map[string]any)["methods"].([]any)[0].(map[string]any)
			m["confidence"] = 0.6
		}))
		d := bomview.Compare(older, newer)
		if len(d.Changed) != 1 {
			t.Fatalf("changed %+v", d.Changed)
		}
		var fields []string
		for _, f := range d.Changed[0].Fields {
			fields = append(fields, f.Field)
		}
		if !slices.Equal(fields, []string{"evidence", "locations", "roles"}) {
			t.Errorf("fields %+v", d.Changed[0].Fields)
		}
		if f := d.Changed[0].Fields[2]; f.Old != "" || f.New != "decode, prefill" {
			t.Errorf("roles %+v", f)
		}
		if f := d.Changed[0].Fields[0]; !strings.Contains(f.Old, "name: download huggingface-cli Qwen/Qwen2.5-1.5B-Instruct (manifest-analysis 1)") ||
			!strings.Contains(f.New, "name: download huggingface-cli Qwen/Qwen2.5-1.5B-Instruct (manifest-analysis 0.6)") {
			t.Errorf("evidence %+v", f)
		}
	})

	t.Run("an oci model pinned to a new digest is one change", func(t *testing.T) {
		const repo = "oci://quay.io/org/m:1.0"
		pinned := func(digest string) []byte {
			return edit(t, body, func(doc map[string]any) {
				c := comp(doc, qwen)
				c["name"], c["version"] = repo+"@sha256:"+digest, "sha256:"+digest
				delete(c, "purl")
				setProp(c, "bomstream:model:revision")
				setProp(c, "bomstream:model:digest", "sha256:"+digest)
				renameRef(doc, qwen, "model:oci:"+repo+"@sha256:"+digest)
			})
		}
		o, n := mustRead(t, pinned(digestA)), mustRead(t, pinned(digestB))
		if !slices.Equal(o.Models[0].Revisions, []string{"sha256:" + digestA}) {
			t.Errorf("revisions %v", o.Models[0].Revisions)
		}
		d := bomview.Compare(o, n)
		// The runtime's dependsOn is read through the pair: only the
		// model changed.
		if d.Added != nil || d.Removed != nil || d.Workload != nil || len(d.Changed) != 1 {
			t.Fatalf("got %+v", d)
		}
		var fields []string
		for _, f := range d.Changed[0].Fields {
			fields = append(fields, f.Field)
		}
		if want := []string{"name", "property:bomstream:model:digest", "ref", "version"}; !slices.Equal(fields, want) {
			t.Errorf("fields %v, want %v", fields, want)
		}
		if d.Changed[0].Ref != "model:oci:"+repo+"@sha256:"+digestB {
			t.Errorf("ref %s", d.Changed[0].Ref)
		}

		// A new tag is another model (a catalog repository's tags name
		// different models): no pair.
		retagged := mustRead(t, edit(t, pinned(digestB), func(doc map[string]any) {
			from := "model:oci:" + repo + "@sha256:" + digestB
			comp(doc, from)["name"] = "oci://quay.io/org/m:2.0@sha256:" + digestB
			renameRef(doc, from, "model:oci:oci://quay.io/org/m:2.0@sha256:"+digestB)
		}))
		if d := bomview.Compare(o, retagged); len(d.Added) != 1 || len(d.Removed) != 1 {
			t.Errorf("new tag: %+v", d)
		}
	})
}

func TestReadSpec17(t *testing.T) {
	body := edit(t, golden(t, base), func(doc map[string]any) {
		doc["specVersion"] = "1.7"
		doc["$schema"] = "http://cyclonedx.org/schema/bom-1.7.schema.json"
	})
	v := mustRead(t, body)
	if v.SpecVersion != "1.7" || len(v.Images) != 2 {
		t.Errorf("%+v", v)
	}
	// Only the spec version differs: nothing the diff shows.
	if d := bomview.Compare(mustRead(t, golden(t, base)), v); !d.Empty() {
		t.Errorf("1.6 -> 1.7: %+v", d)
	}
}

func TestReadErrors(t *testing.T) {
	good := golden(t, base)
	for _, tc := range []struct {
		name, body string
		want       string // in the error
		jsonErr    any    // the JSON error it wraps, if any
	}{
		{"malformed", `{"bomFormat": "CycloneDX", "components": [`, "bom: ", new(*json.SyntaxError)},
		{"not an object", `[1, 2]`, "bom: ", new(*json.UnmarshalTypeError)},
		{"not CycloneDX", `{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "x"}}`, `bom: bomFormat "": not a CycloneDX BOM`, nil},
		{"SPDX", `{"spdxVersion": "SPDX-2.3", "bomFormat": "SPDX"}`, `bom: bomFormat "SPDX": not a CycloneDX BOM`, nil},
		{"old spec", `{"bomFormat": "CycloneDX", "specVersion": "1.4"}`, `bom: specVersion "1.4": want 1.6 or 1.7`, nil},
		{"spec a number", `{"bomFormat": "CycloneDX", "specVersion": 1.6}`, "bom: specVersion: ", new(*json.UnmarshalTypeError)},
		{"components an object", `{"bomFormat": "CycloneDX", "specVersion": "1.6", "components": {}}`, "bom: components: ", new(*json.UnmarshalTypeError)},
		{"component name a number", string(edit(t, good, func(doc map[string]any) {
			doc["components"].([]any)[3].(map[string]any)["name"] = 5
		})), "bom: components[3]: ", new(*json.UnmarshalTypeError)},
		{"no bom-ref", string(edit(t, good, func(doc map[string]any) {
			delete(doc["components"].([]any)[1].(map[string]any), "bom-ref")
		})), "bom: components[1]: no bom-ref", nil},
		{"bom-ref twice", string(edit(t, good, func(doc map[string]any) {
			doc["components"].([]any)[2].(map[string]any)["bom-ref"] = qwen
		})), `bom: components[2]: bom-ref "` + qwen + `" is also components[1]'s`, nil},
		{"evidence", string(edit(t, good, func(doc map[string]any) {
			doc["components"].([]any)[0].(map[string]any)["evidence"].(map[string]any)["identity"] = "x"
		})), "bom: components[0]: evidence.identity: ", new(*json.UnmarshalTypeError)},
		{"workload", string(edit(t, good, func(doc map[string]any) {
			doc["metadata"].(map[string]any)["component"].(map[string]any)["properties"] = []any{1}
		})), "bom: metadata.component: ", new(*json.UnmarshalTypeError)},
		{"dependency", string(edit(t, good, func(doc map[string]any) {
			doc["dependencies"].([]any)[4].(map[string]any)["dependsOn"] = "x"
		})), "bom: dependencies[4]: ", new(*json.UnmarshalTypeError)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := bomview.Read([]byte(tc.body))
			if err == nil {
				t.Fatal("no error")
			}
			if !strings.HasPrefix(err.Error(), tc.want) {
				t.Errorf("error %q, want it to start with %q", err, tc.want)
			}
			if tc.jsonErr != nil && !errors.As(err, tc.jsonErr) {
				t.Errorf("error %q wraps no %T", err, tc.jsonErr)
			}
			if strings.Contains(tc.want, "CycloneDX BOM") && !errors.Is(err, bomview.ErrNotCycloneDX) {
				t.Errorf("error %q is not ErrNotCycloneDX", err)
			}
		})
	}
}

func TestEvidenceIdentityObject(t *testing.T) {
	// CycloneDX 1.5 wrote one identity object; read it as a list of one.
	body := `{"bomFormat":"CycloneDX","specVersion":"1.6","components":[{"bom-ref":"x","type":"library","name":"x",
		"evidence":{"identity":{"field":"name","confidence":0.3,"concludedValue":"x"}}}]}`
	v := mustRead(t, []byte(body))
	want := []bomview.Evidence{{Field: "name", Confidence: 0.3, Concluded: "x"}}
	if len(v.Others) != 1 || !reflect.DeepEqual(v.Others[0].Evidence, want) || v.Others[0].Section != bomview.SectionOther {
		t.Errorf("%+v", v.Others)
	}
	if got := want[0].String(); got != "name: (0.3) concluded x" {
		t.Errorf("String %q", got)
	}
}

func FuzzRead(f *testing.F) {
	// Small seeds: the fuzzer minimizes every new input it finds, in time
	// quadratic in its length; even from these, run it with
	// -fuzzminimizetime=100x, or it spends its time minimizing.
	f.Add([]byte(`{"bomFormat":"CycloneDX","specVersion":"1.6","serialNumber":"urn:uuid:1","metadata":{"timestamp":"t",` +
		`"component":{"bom-ref":"workload","type":"application","name":"w","properties":[{"name":"bomstream:role","value":"a"}]}},` +
		`"components":[{"bom-ref":"runtime:vllm@1","type":"application","name":"vLLM","version":"1",` +
		`"properties":[{"name":"bomstream:confidence","value":"declared"}],"evidence":{"identity":[{"field":"version","confidence":0.6,` +
		`"concludedValue":"1","methods":[{"technique":"manifest-analysis","confidence":0.6,"value":"tag v1"}]}],"occurrences":[{"location":"l"}]}},` +
		`{"bom-ref":"model:huggingface:o/m","type":"machine-learning-model","name":"o/m","properties":[{"name":"bomstream:model:revision","value":"r"}]},` +
		`{"bom-ref":"container:i:1","type":"container","name":"i","hashes":[{"alg":"SHA-256","content":"ab"}],` +
		`"properties":[{"name":"bomstream:image:digest","value":"sha256:ab"}]}],` +
		`"dependencies":[{"ref":"workload","dependsOn":["runtime:vllm@1","container:i:1"]},{"ref":"runtime:vllm@1","dependsOn":["model:huggingface:o/m"]}]}`))
	f.Add([]byte(`{"bomFormat":"CycloneDX","specVersion":"1.6","components":[{"bom-ref":"runtime:","evidence":{"identity":{}}}],"dependencies":[{"ref":"a","dependsOn":["a","a"]}]}`))
	f.Add([]byte(`null`))
	f.Fuzz(func(t *testing.T, body []byte) {
		v, err := bomview.Read(body)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "bom: ") {
				t.Errorf("error %q", err)
			}
			return
		}
		d := bomview.Compare(v, v)
		if !d.Empty() {
			t.Errorf("Compare with itself: %+v", d)
		}
		if !reflect.DeepEqual(bomview.Compare(v, bomview.View{}), bomview.Compare(v, bomview.View{})) {
			t.Error("Compare is not deterministic")
		}
	})
}
