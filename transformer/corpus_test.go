package transformer

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/bomstream/bomstream/collector"
	"github.com/bomstream/bomstream/collector/files"
	"github.com/bomstream/bomstream/collector/manifest/manifesttest"
	"github.com/bomstream/bomstream/schemas"
	sigsyaml "sigs.k8s.io/yaml"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/golden")

// rendered is one workload of a manifest file, rendered.
type rendered struct {
	rel    string // file path relative to its root, slash-separated
	inputs *schemas.Inputs
	res    Result
}

// renderTree normalizes every workload of every YAML file under root with the
// collector's manifest source (so that links between the documents of a
// file are followed, as the pipeline follows them) and renders it. Objects
// that are not workloads are left out.
func renderTree(t *testing.T, root string) []rendered {
	t.Helper()
	n, err := collector.NewNormalizer(collector.Config{Cluster: "dev", DefaultNamespace: "default"})
	if err != nil {
		t.Fatal(err)
	}
	r := newRenderer(t)
	var paths []string
	err = filepath.WalkDir(root, func(p string, de os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !de.IsDir() && (strings.HasSuffix(p, ".yaml") || strings.HasSuffix(p, ".yml")) {
			paths = append(paths, p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(paths)
	var out []rendered
	for _, f := range paths {
		rel, _ := filepath.Rel(root, f)
		rel = filepath.ToSlash(rel)
		loaded := files.Load(root, f, n)
		if loaded.Err != nil {
			t.Errorf("load %s: %v", rel, loaded.Err)
		}
		for _, ev := range loaded.Events {
			in := ev.Data.Inputs
			res, err := r.Render(event(t, in))
			if err != nil {
				t.Errorf("render %s %s/%s: %v", rel, in.Workload.Kind, in.Workload.Name, err)
				continue
			}
			out = append(out, rendered{rel: rel, inputs: in, res: res})
		}
	}
	return out
}

// validateBOMs validates every BOM against the CycloneDX schema.
func validateBOMs(t *testing.T, rs []rendered) {
	t.Helper()
	v := bomValidator(t)
	for _, x := range rs {
		if x.res.BOM == nil {
			continue
		}
		if err := v.ValidateBOM(x.res.BOM); err != nil {
			w := x.inputs.Workload
			t.Errorf("%s %s/%s: %v", x.rel, w.Kind, w.Name, err)
		}
	}
}

// checkGoldens validates every BOM and compares it, indented, with
// testdata/golden/<prefix><rel>--<kind>-<name>.cdx.json (-update rewrites).
// Goldens come from the project's own manifests only, so that a plain
// clone regenerates every one of them.
func checkGoldens(t *testing.T, prefix string, rs []rendered) {
	t.Helper()
	validateBOMs(t, rs)
	for _, x := range rs {
		if x.res.BOM == nil {
			continue
		}
		w := x.inputs.Workload
		var pretty bytes.Buffer
		if err := json.Indent(&pretty, x.res.BOM, "", "  "); err != nil {
			t.Fatal(err)
		}
		pretty.WriteByte('\n')
		golden := filepath.Join("testdata", "golden", filepath.FromSlash(prefix+x.rel)+"--"+w.Kind+"-"+w.Name+".cdx.json")
		if *update {
			if err := os.MkdirAll(filepath.Dir(golden), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(golden, pretty.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(golden)
		if err != nil {
			t.Errorf("%s (run with -update to create): %v", golden, err)
			continue
		}
		if !bytes.Equal(want, pretty.Bytes()) {
			t.Errorf("%s differs from the rendered BOM (run with -update after review)", golden)
		}
	}
}

// indexRow is what INDEX.md says about one manifest, checked against the BOM.
type indexRow struct {
	row      int
	file     string // relative to the corpus root
	kind     string
	runtimes []RuntimeSummary // exact set; nil means none
	models   []string         // exact set
	revision string           // pinned revision of the first model
	roles    []string         // must all be present
	skipped  bool             // no BOM at all
	note     string           // where bomstream and INDEX.md disagree, and why
}

func rs(triples ...string) []RuntimeSummary {
	var out []RuntimeSummary
	for i := 0; i+2 < len(triples); i += 3 {
		out = append(out, RuntimeSummary{Name: triples[i], Version: triples[i+1], Confidence: triples[i+2]})
	}
	return out
}

const (
	decl = "declared"
	infr = "inferred"
)

var indexRows = []indexRow{
	{row: 1, file: "dynamo/examples/backends/vllm/deploy/agg.yaml", kind: "DynamoGraphDeployment", runtimes: rs("dynamo", "", decl, "vllm", "", decl), models: []string{"Qwen/Qwen3-0.6B"}, roles: []string{"frontend", "worker"}},
	{row: 2, file: "dynamo/examples/backends/vllm/deploy/disagg.yaml", kind: "DynamoGraphDeployment", runtimes: rs("dynamo", "", decl, "vllm", "", decl), models: []string{"Qwen/Qwen3-0.6B"}, roles: []string{"frontend", "worker", "decode", "prefill"}},
	{row: 3, file: "dynamo/examples/backends/vllm/deploy/disagg-multinode.yaml", kind: "DynamoGraphDeployment", runtimes: rs("dynamo", "", decl, "vllm", "", decl), models: []string{"Qwen/Qwen3-0.6B"}, roles: []string{"frontend", "worker", "prefill"},
		note: "decode is known only from the service key; like INDEX, no decode role is claimed"},
	{row: 4, file: "dynamo/examples/backends/vllm/deploy/v1beta1/agg.yaml", kind: "DynamoGraphDeployment", runtimes: rs("dynamo", "1.3.1", decl, "vllm", "", decl), models: []string{"Qwen/Qwen3-0.6B"}, roles: []string{"frontend", "worker"}},
	{row: 5, file: "dynamo/examples/backends/sglang/deploy/agg.yaml", kind: "DynamoGraphDeployment", runtimes: rs("dynamo", "0.8.0", decl, "sglang", "", decl), models: []string{"Qwen/Qwen3-0.6B"}, roles: []string{"frontend", "worker"}},
	{row: 6, file: "dynamo/examples/backends/sglang/deploy/disagg.yaml", kind: "DynamoGraphDeployment", runtimes: rs("dynamo", "1.3.1", decl, "sglang", "", decl), models: []string{"Qwen/Qwen3-0.6B"}, roles: []string{"frontend", "decode", "prefill"}},
	{row: 7, file: "dynamo/examples/backends/sglang/deploy/v1beta1/disagg.yaml", kind: "DynamoGraphDeployment", runtimes: rs("dynamo", "1.3.1", decl, "sglang", "", decl), models: []string{"Qwen/Qwen3-0.6B"}, roles: []string{"frontend", "decode", "prefill"}},
	{row: 8, file: "dynamo/examples/backends/trtllm/deploy/agg.yaml", kind: "DynamoGraphDeployment", runtimes: rs("dynamo", "0.8.0", decl, "tensorrt-llm", "", decl), models: []string{"Qwen/Qwen3-0.6B"}, roles: []string{"frontend", "worker"}},
	{row: 9, file: "dynamo/examples/backends/trtllm/deploy/disagg.yaml", kind: "DynamoGraphDeployment", runtimes: rs("dynamo", "1.3.1", decl, "tensorrt-llm", "", decl), models: []string{"Qwen/Qwen3-0.6B"}, roles: []string{"frontend", "decode", "prefill"}},
	{row: 10, file: "dynamo/recipes/qwen3-32b/vllm/agg-round-robin/deploy.yaml", kind: "DynamoGraphDeployment", runtimes: rs("dynamo", "1.3.1", decl, "vllm", "", decl), models: []string{"Qwen/Qwen3-32B"}, roles: []string{"frontend", "worker", "decode"}},
	{row: 11, file: "dynamo/recipes/qwen3-32b/model-cache/model-download.yaml", kind: "Job", models: []string{"Qwen/Qwen3-32B"}, revision: "9216db5781bf21249d130ec9da846c4624c16137"},
	{row: 12, file: "dynamo/docs/kubernetes/dcd-reference.mdx--minimal-example.yaml", kind: "DynamoComponentDeployment", runtimes: rs("dynamo", "0.6.0", decl, "vllm", "", decl), roles: []string{"worker"}},
	{row: 13, file: "kserve/docs/samples/storage/hf/hf_isvc.yaml", kind: "InferenceService", runtimes: rs("kserve-huggingfaceserver", "", decl), models: []string{"meta-llama/Llama-2-7b-chat-hf"}, roles: []string{"predictor"}},
	{row: 14, file: "kserve/docs/samples/fluid/fluid-isvc.yaml", kind: "InferenceService", runtimes: rs("kserve-huggingfaceserver", "", decl, "vllm", "", infr), models: []string{"pvc://s3-data/llama-31-8b-instruct"}, roles: []string{"predictor"}},
	{row: 15, file: "kserve/config/runtimes/kserve-vllmserver.yaml", kind: "ClusterServingRuntime", skipped: true,
		note: "a runtime template, not a workload: the collector reports ErrNotWorkload (and the renderer skips the kind)"},
	{row: 16, file: "kserve/docs/samples/llmisvc/single-node-gpu/llm-inference-service-pd-qwen2-7b-gpu.yaml", kind: "LLMInferenceService", runtimes: rs("vllm", "", infr), models: []string{"Qwen/Qwen2.5-7B-Instruct"}, roles: []string{"decode", "prefill"}},
	{row: 17, file: "kserve/docs/samples/v1beta1/sklearn/v1/sklearn.yaml", kind: "InferenceService", models: []string{"gs://kfserving-examples/models/sklearn/1.0/model"}, roles: []string{"predictor"},
		note: "no LLM runtime; the sklearn model URI is still listed, so a BOM exists"},
	{row: 18, file: "kserve-website/docs/modelserving/v1beta1/llm/huggingface/text_generation/vllm_runtime.yaml", kind: "InferenceService", runtimes: rs("kserve-huggingfaceserver", "", decl, "vllm", "", infr), models: []string{"meta-llama/meta-llama-3-8b-instruct"}, roles: []string{"predictor"}},
	{row: 19, file: "kserve-website/docs/modelserving/v1beta1/llm/huggingface/text_generation/python_runtime.yaml", kind: "InferenceService", runtimes: rs("kserve-huggingfaceserver", "", decl), models: []string{"meta-llama/meta-llama-3-8b-instruct"}, roles: []string{"predictor"}},
	{row: 20, file: "kserve-website/docs/modelserving/v1beta1/triton/huggingface/triton_runtime.yaml", kind: "InferenceService", runtimes: rs("kserve-huggingfaceserver", "0.13.0", infr, "triton", "23.10", decl), models: []string{"gs://kfserving-examples/models/triton/huggingface/model_repository", "bert-base-uncased"}, roles: []string{"predictor", "transformer"},
		note: "the transformer's huggingfaceserver is known from its image only, hence inferred"},
	{row: 21, file: "lws/docs/examples/vllm/GPU/lws.yaml", kind: "LeaderWorkerSet", runtimes: rs("vllm", "0.8.5", decl), models: []string{"meta-llama/Llama-3.1-405B-Instruct"}, roles: []string{"leader", "worker"}},
	{row: 22, file: "lws/docs/examples/sglang/lws.yaml", kind: "LeaderWorkerSet", runtimes: rs("sglang", "", decl), models: []string{"meta-llama/Meta-Llama-3.1-8B-Instruct"}, roles: []string{"leader", "worker"}},
	{row: 23, file: "lws/docs/examples/tensorrt-llm/lws.yaml", kind: "LeaderWorkerSet", runtimes: rs("tensorrt-llm", "", infr, "triton", "", infr), roles: []string{"leader", "worker"}},
	{row: 24, file: "lws/docs/examples/llamacpp/k8s/lws.yaml", kind: "LeaderWorkerSet", runtimes: rs("llama.cpp", "", infr), models: []string{"llama3-8b-instruct-bartowski-q5km"}, roles: []string{"leader", "worker"},
		note: "the GGUF model is baked into the leader image, named after it (models.images rule): a name, not a Hugging Face id"},
	{row: 25, file: "k8s-nim-operator/config/samples/nim/serving/standalone/basic/llm.yaml", kind: "NIMService", runtimes: rs("nim", "1.12.0", decl, "tensorrt-llm", "", decl), models: []string{"meta/llama-3.2-1b-instruct"}, roles: []string{"service"},
		note: "the tensorrt_llm engine is a field of the NIMCache the NIMService names (spec.storage.nimCache.name), followed as a link"},
	{row: 25, file: "k8s-nim-operator/config/samples/nim/serving/standalone/basic/llm.yaml", kind: "NIMCache", models: []string{"meta/llama-3.2-1b-instruct"}, roles: []string{"cache"}},
	{row: 26, file: "k8s-nim-operator/config/samples/nim/caching/hf/nimcache.yaml", kind: "NIMCache", models: []string{"meta-llama/Llama-3.2-1B-Instruct"}, roles: []string{"cache"}},
	{row: 27, file: "k8s-nim-operator/config/samples/nim/serving/standalone/no-precaching/multi-llm-hf.yaml", kind: "NIMService", runtimes: rs("nim", "1.12", decl), models: []string{"meta-llama/Llama-3.2-1B-Instruct"}, roles: []string{"service"}},
	{row: 28, file: "k8s-nim-operator/config/samples/nim/serving/advanced/multi-node/multi-node-nimservice.yaml", kind: "NIMService", runtimes: rs("nim", "1.7.3", decl, "sglang", "", decl), models: []string{"deepseek-ai/deepseek-r1"}, roles: []string{"service"}},
	{row: 28, file: "k8s-nim-operator/config/samples/nim/serving/advanced/multi-node/multi-node-nimservice.yaml", kind: "NIMCache", models: []string{"deepseek-ai/deepseek-r1"}, roles: []string{"cache"}},
	{row: 29, file: "production-stack/src/gateway_inference_extension/configs/vllm/gpu-deployment.yaml", kind: "Deployment", runtimes: rs("vllm", "", decl), models: []string{"meta-llama/Llama-3.2-1B-Instruct", "AvaLovelace/LegoGPT"},
		note: "the LoRA adapter is listed in the ConfigMap the pod mounts, followed as a link: the adapter is a model (bomstream:model:adapter)"},
	{row: 30, file: "production-stack/examples/disaggregated_prefill_orchestrated/prefill-deploy.yaml", kind: "Deployment", runtimes: rs("vllm", "", decl), models: []string{"/var/mdl/YOUR-MODEL-PATH"},
		note: "INDEX says inferred; `python -m vllm.entrypoints.openai.api_server` is an explicit launch command, which INDEX's own convention (and row 21) calls declared. The prefill role comes from names and labels only, so it is not claimed"},
	{row: 31, file: "production-stack/operator/config/samples/production-stack_v1alpha1_vllmruntime.yaml", kind: "VLLMRuntime", runtimes: rs("vllm", "", decl), models: []string{"meta-llama/Llama-3.1-8B-Instruct"}},
	{row: 32, file: "vllm/examples/online_serving/prometheus_grafana/k8s-monitoring/vllm-deployment.yaml", kind: "Deployment", runtimes: rs("vllm", "", decl), models: []string{"Qwen/Qwen3-235B-A22B"}},
	{row: 33, file: "gateway-api-inference-extension/config/manifests/vllm/gpu-deployment.yaml", kind: "Deployment", runtimes: rs("vllm", "0.18.1", decl), models: []string{"Qwen/Qwen3-32B", "ttt421/nec119-small-segment-lora"},
		note: "INDEX names the LoRA adapter the init container clones from the Hub (git clone https://huggingface.co/ttt421/...): a model, fetched into /adapters"},
	{row: 34, file: "gateway-api-inference-extension/config/manifests/sglang/gpu-deployment.yaml", kind: "Deployment", runtimes: rs("sglang", "", decl), models: []string{"Qwen/Qwen3-32B"}},
	{row: 35, file: "gateway-api-inference-extension/config/manifests/vllm/sim-deployment.yaml", kind: "Deployment", models: []string{"Qwen/Qwen3-32B"},
		note: "a simulator: no runtime, the workload carries bomstream:simulator and the model bomstream:model:simulatedBy"},
	{row: 36, file: "llm-d/guides/optimized-baseline/modelserver/gpu/vllm/vllm-deployment.yaml", kind: "Deployment", runtimes: rs("vllm", "0.19.1", decl), models: []string{"Qwen/Qwen3-32B"}, roles: []string{"decode"}},
	{row: 37, file: "llm-d/guides/optimized-baseline/modelserver/gpu/vllm/base/patch-vllm.yaml", kind: "Deployment", runtimes: rs("vllm", "", decl), models: []string{"Qwen/Qwen3.5-4B"}},
	{row: 38, file: "llm-d/guides/optimized-baseline/modelserver/gpu/sglang/base/patch-sglang.yaml", kind: "Deployment", runtimes: rs("sglang", "", decl), models: []string{"Qwen/Qwen3-32B"}},
	{row: 39, file: "llm-d/guides/pd-disaggregation/modelserver/gpu/vllm/base/disaggregatedset.yaml", kind: "DisaggregatedSet", runtimes: rs("vllm", "", decl), models: []string{"openai/gpt-oss-120b"}, roles: []string{"prefill", "decode"}},
	{row: 40, file: "sglang/docker/k8s-sglang-service.yaml", kind: "Deployment", runtimes: rs("sglang", "", decl), models: []string{"meta-llama/Meta-Llama-3.1-8B-Instruct"}},
	{row: 41, file: "sglang/docker/k8s-sglang-distributed-sts.yaml", kind: "StatefulSet", runtimes: rs("sglang", "", decl), models: []string{"/llm-folder"}},
	{row: 42, file: "Google-Cloud-Containers/examples/gke/tgi-deployment/config/deployment.yaml", kind: "Deployment", runtimes: rs("tgi", "2.0", infr), models: []string{"meta-llama/Meta-Llama-3-8B-Instruct"}},
	{row: 43, file: "ollama/examples/kubernetes/gpu.yaml", kind: "Deployment", runtimes: rs("ollama", "", infr)},
	{row: 44, file: "kubernetes-website/content/en/examples/application/deployment.yaml", kind: "Deployment", skipped: true},
	{row: 45, file: "kubernetes-website/content/en/examples/application/guestbook/redis-leader-deployment.yaml", kind: "Deployment", skipped: true},
}

func TestCorpusUpstream(t *testing.T) {
	root := manifesttest.Corpus(t)
	out := renderTree(t, root)
	// The upstream corpus is read in place and not committed: its BOMs are
	// held to INDEX.md below and to the schema, not to goldens a clone
	// without it could not regenerate.
	validateBOMs(t, out)

	byFile := map[string][]rendered{}
	for _, x := range out {
		byFile[x.rel+"#"+x.inputs.Workload.Kind] = append(byFile[x.rel+"#"+x.inputs.Workload.Kind], x)
	}
	rows := map[int]bool{}
	for _, row := range indexRows {
		rows[row.row] = true
		xs := byFile[row.file+"#"+row.kind]
		if row.skipped {
			for _, x := range xs {
				if x.res.BOM != nil {
					t.Errorf("row %d: a BOM for %s", row.row, x.inputs.Workload.Name)
				}
			}
			continue
		}
		if len(xs) != 1 {
			t.Errorf("row %d: %d workloads of kind %s in %s", row.row, len(xs), row.kind, row.file)
			continue
		}
		checkRow(t, row, xs[0].res)
	}
	if len(rows) != 45 {
		t.Errorf("the table covers %d of the 45 INDEX rows", len(rows))
	}
}

func checkRow(t *testing.T, row indexRow, res Result) {
	t.Helper()
	if res.BOM == nil {
		t.Errorf("row %d (%s): skipped: %s", row.row, row.file, res.Skipped)
		return
	}
	if !reflect.DeepEqual(res.Summary.Runtimes, row.runtimes) {
		t.Errorf("row %d (%s): runtimes %+v, want %+v", row.row, row.file, res.Summary.Runtimes, row.runtimes)
	}
	got := slices.Clone(res.Summary.Models)
	want := slices.Clone(row.models)
	sort.Strings(got)
	sort.Strings(want)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("row %d (%s): models %q, want %q", row.row, row.file, got, want)
	}
	for _, role := range row.roles {
		if !slices.Contains(res.Summary.Roles, role) {
			t.Errorf("row %d (%s): roles %v lack %s", row.row, row.file, res.Summary.Roles, role)
		}
	}
	for _, r := range res.Summary.Runtimes {
		if r.Name == "vllm" && regexp.MustCompile(`llm-d-inference-sim`).Match(res.BOM) {
			t.Errorf("row %d: a simulator reported as vllm", row.row)
		}
	}
	var doc bomDoc
	if err := json.Unmarshal(res.BOM, &doc); err != nil {
		t.Fatal(err)
	}
	for _, m := range doc.byType("machine-learning-model") {
		revs := m.props("model:revision")
		if row.revision != "" {
			if !slices.Contains(revs, row.revision) || !strings.HasSuffix(m.PURL, "@"+row.revision) {
				t.Errorf("row %d: model %s revisions %v purl %s, want %s", row.row, m.Name, revs, m.PURL, row.revision)
			}
		} else if len(revs) != 0 || m.prop("model:unpinned") != "true" {
			t.Errorf("row %d: model %s should be unpinned: %v", row.row, m.Name, m.Properties)
		}
	}
}

// expected is one row of testdata/expected/*.yaml: what bomstream must find
// in one object of testdata/manifests.
type expected struct {
	File     string   `json:"file"`
	Kind     string   `json:"kind"`
	Name     string   `json:"name"`
	Runtimes []string `json:"runtimes"` // name@version/confidence, exact set
	Models   []string `json:"models"`   // exact set
	Revision string   `json:"revision"` // pinned revision of every model
	Roles    []string `json:"roles"`    // must all be present
	Skipped  bool     `json:"skipped"`  // no BOM
	Note     string   `json:"note"`
}

// loadExpected reads every table of testdata/expected, keyed by
// file#kind#name.
func loadExpected(t *testing.T) map[string]expected {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("testdata", "expected", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no expectation tables: %v", err)
	}
	out := map[string]expected{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var rows []expected
		if err := sigsyaml.UnmarshalStrict(b, &rows); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		for _, r := range rows {
			k := r.File + "#" + r.Kind + "#" + r.Name
			if _, dup := out[k]; dup {
				t.Errorf("%s: %s listed twice", f, k)
			}
			out[k] = r
		}
	}
	return out
}

// row turns an expectation into the indexRow checkRow reads.
func (e expected) row(t *testing.T) indexRow {
	t.Helper()
	r := indexRow{file: e.File + " " + e.Kind + "/" + e.Name, kind: e.Kind, models: e.Models, revision: e.Revision, roles: e.Roles, skipped: e.Skipped}
	for _, s := range e.Runtimes {
		nv, conf, ok1 := strings.Cut(s, "/")
		name, version, ok2 := strings.Cut(nv, "@")
		if !ok1 || !ok2 {
			t.Fatalf("%s %s: runtime %q is not name@version/confidence", e.File, e.Name, s)
		}
		r.runtimes = append(r.runtimes, RuntimeSummary{Name: name, Version: version, Confidence: conf})
	}
	if len(r.models) == 0 {
		r.models = nil
	}
	return r
}

// TestCorpusOwn renders the project's own corpus (testdata/manifests,
// written in the shapes upstream docs show) and holds every object to its
// row in testdata/expected: a workload with no row, or a row whose
// workload was not rendered, fails.
func TestCorpusOwn(t *testing.T) {
	out := renderTree(t, filepath.Join("testdata", "manifests"))
	checkGoldens(t, "manifests/", out)
	want := loadExpected(t)
	seen := map[string]bool{}
	for _, x := range out {
		w := x.inputs.Workload
		k := x.rel + "#" + w.Kind + "#" + w.Name
		e, ok := want[k]
		if !ok {
			t.Errorf("no expectation for %s (add it to testdata/expected/%s)", k, x.rel)
			continue
		}
		seen[k] = true
		row := e.row(t)
		if row.skipped {
			if x.res.BOM != nil {
				t.Errorf("%s: rendered a BOM (%s)", k, x.res.Summary.Runtimes)
			}
			continue
		}
		checkRow(t, row, x.res)
	}
	for k, e := range want {
		if !seen[k] && !e.Skipped {
			t.Errorf("%s: expected a BOM, not rendered", k)
		}
	}
	if len(want) < 70 {
		t.Errorf("the own corpus has %d rows", len(want))
	}
	// Settings and flags that only these manifests exercise.
	for _, x := range out {
		if x.res.BOM == nil {
			continue
		}
		var doc bomDoc
		json.Unmarshal(x.res.BOM, &doc)
		switch x.inputs.Workload.Name {
		case "vllm-serve":
			c, _ := doc.runtime("vllm")
			for k, v := range map[string]string{"tensorParallelSize": "4", "pipelineParallelSize": "2", "quantization": "awq", "maxModelLen": "16384", "servedModelName": "model-a", "loraAdapters": "adapter-1=/adapters/one"} {
				if c.prop("runtime:"+k) != v {
					t.Errorf("vllm-serve %s = %q, want %q", k, c.prop("runtime:"+k), v)
				}
			}
			if bytes.Contains(x.res.BOM, []byte("sk-should-never-appear")) {
				t.Error("an api key reached the BOM")
			}
		case "dgd-sglang":
			c, _ := doc.runtime("sglang")
			if got := c.props("runtime:tensorParallelSize"); !reflect.DeepEqual(got, []string{"2", "4"}) {
				t.Errorf("dgd-sglang tp %v", got)
			}
		case "vllmruntime":
			c, _ := doc.runtime("vllm")
			if c.prop("runtime:tensorParallelSize") != "2" {
				t.Errorf("vllmruntime tp %v", c.Properties)
			}
		case "simulator":
			if doc.Metadata.Component.prop("simulator") != "llm-d-inference-sim" {
				t.Error("simulator not flagged")
			}
		case "patch":
			if doc.Metadata.Component.prop("image:unknown") == "" {
				t.Error("image-less container not noted")
			}
		}
	}
}
