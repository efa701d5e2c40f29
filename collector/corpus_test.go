package collector

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bomstream/bomstream/collector/manifest"
	"github.com/bomstream/bomstream/collector/manifest/manifesttest"
	"github.com/bomstream/bomstream/schemas"
)

// summary writes the components as "Name[role,role]" separated by spaces.
func summary(in *schemas.Inputs) string {
	var parts []string
	for _, c := range in.Components {
		parts = append(parts, c.Name+"["+strings.Join(c.Roles, ",")+"]")
	}
	return strings.Join(parts, " ")
}

func TestUpstreamCorpus(t *testing.T) {
	dir := manifesttest.Corpus(t)
	objs, err := manifest.ReadPath(dir)
	if err != nil {
		t.Fatalf("read corpus: %v", err)
	}
	files := map[string]bool{}
	n := newNormalizer(t, Config{})
	got := map[string]string{}
	for _, o := range objs {
		rel, _ := filepath.Rel(dir, o.File)
		files[rel] = true
		in, err := n.Normalize(o.Obj, "file:"+rel)
		switch {
		case errors.Is(err, ErrNotWorkload), errors.Is(err, ErrUnknownKind):
			got[rel+"#"+o.Obj["kind"].(string)] = "-"
			continue
		case err != nil:
			t.Errorf("%s:%d: %v", rel, o.Line, err)
			continue
		}
		if _, err := schemas.InputHash(in); err != nil {
			t.Errorf("%s:%d: %v", rel, o.Line, err)
		}
		got[rel+"#"+in.Workload.Kind] = summary(in)
	}
	if len(files) != 45 {
		t.Errorf("read %d manifest files, want the 45 of INDEX.md", len(files))
	}
	// Components and roles as INDEX.md describes them (v1alpha1 services in
	// sorted key order; the roles are the structural ones, not guesses from
	// names or flags).
	want := map[string]string{
		"dynamo/examples/backends/vllm/deploy/agg.yaml#DynamoGraphDeployment":                                           "Frontend[frontend] worker[worker]",
		"dynamo/examples/backends/vllm/deploy/disagg.yaml#DynamoGraphDeployment":                                        "Frontend[frontend] VllmDecodeWorker[worker,decode] VllmPrefillWorker[worker,prefill]",
		"dynamo/examples/backends/vllm/deploy/disagg-multinode.yaml#DynamoGraphDeployment":                              "Frontend[frontend] decode[worker] prefill[worker]",
		"dynamo/examples/backends/vllm/deploy/v1beta1/agg.yaml#DynamoGraphDeployment":                                   "Frontend[frontend] VllmDecodeWorker[worker]",
		"dynamo/examples/backends/sglang/deploy/agg.yaml#DynamoGraphDeployment":                                         "Frontend[frontend] decode[worker]",
		"dynamo/examples/backends/sglang/deploy/disagg.yaml#DynamoGraphDeployment":                                      "Frontend[frontend] decode[worker,decode] prefill[worker,prefill]",
		"dynamo/examples/backends/sglang/deploy/v1beta1/disagg.yaml#DynamoGraphDeployment":                              "Frontend[frontend] decode[decode] prefill[prefill]",
		"dynamo/examples/backends/trtllm/deploy/agg.yaml#DynamoGraphDeployment":                                         "Frontend[frontend] TRTLLMWorker[worker]",
		"dynamo/examples/backends/trtllm/deploy/disagg.yaml#DynamoGraphDeployment":                                      "Frontend[frontend] decode[worker,decode] prefill[worker,prefill]",
		"dynamo/recipes/qwen3-32b/vllm/agg-round-robin/deploy.yaml#DynamoGraphDeployment":                               "Frontend[frontend] VllmDecodeWorker[worker,decode]",
		"dynamo/recipes/qwen3-32b/model-cache/model-download.yaml#Job":                                                  "model-download[]",
		"dynamo/docs/kubernetes/dcd-reference.mdx--minimal-example.yaml#DynamoComponentDeployment":                      "my-worker[worker]",
		"kserve/docs/samples/storage/hf/hf_isvc.yaml#InferenceService":                                                  "predictor[predictor]",
		"kserve/docs/samples/fluid/fluid-isvc.yaml#InferenceService":                                                    "predictor[predictor]",
		"kserve/docs/samples/v1beta1/sklearn/v1/sklearn.yaml#InferenceService":                                          "predictor[predictor]",
		"kserve/config/runtimes/kserve-vllmserver.yaml#ClusterServingRuntime":                                           "-",
		"kserve/docs/samples/llmisvc/single-node-gpu/llm-inference-service-pd-qwen2-7b-gpu.yaml#LLMInferenceService":    "main[decode] prefill[prefill]",
		"kserve-website/docs/modelserving/v1beta1/llm/huggingface/text_generation/vllm_runtime.yaml#InferenceService":   "predictor[predictor]",
		"kserve-website/docs/modelserving/v1beta1/llm/huggingface/text_generation/python_runtime.yaml#InferenceService": "predictor[predictor]",
		"kserve-website/docs/modelserving/v1beta1/triton/huggingface/triton_runtime.yaml#InferenceService":              "predictor[predictor] transformer[transformer]",
		"lws/docs/examples/vllm/GPU/lws.yaml#LeaderWorkerSet":                                                           "leader[leader] worker[worker]",
		"lws/docs/examples/sglang/lws.yaml#LeaderWorkerSet":                                                             "leader[leader] worker[worker]",
		"lws/docs/examples/tensorrt-llm/lws.yaml#LeaderWorkerSet":                                                       "leader[leader] worker[worker]",
		"lws/docs/examples/llamacpp/k8s/lws.yaml#LeaderWorkerSet":                                                       "leader[leader] worker[worker]",
		"llm-d/guides/pd-disaggregation/modelserver/gpu/vllm/base/disaggregatedset.yaml#DisaggregatedSet":               "prefill[prefill] decode[decode]",
		"k8s-nim-operator/config/samples/nim/caching/hf/nimcache.yaml#NIMCache":                                         "cache[cache]",
		"k8s-nim-operator/config/samples/nim/serving/standalone/no-precaching/multi-llm-hf.yaml#NIMService":             "service[service]",
		"production-stack/operator/config/samples/production-stack_v1alpha1_vllmruntime.yaml#VLLMRuntime":               "vllm[]",
		"sglang/docker/k8s-sglang-service.yaml#RuntimeClass":                                                            "-",
		"kubernetes-website/content/en/examples/application/guestbook/redis-leader-deployment.yaml#Deployment":          "redis-leader[]",
	}
	for k, w := range want {
		if g, ok := got[k]; !ok {
			t.Errorf("%s: not found in the corpus", k)
		} else if g != w {
			t.Errorf("%s: components %q, want %q", k, g, w)
		}
	}
}
