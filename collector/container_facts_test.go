package collector

import (
	"path/filepath"
	"reflect"
	"testing"

	"github.com/bomstream/bomstream/collector/manifest"
	"github.com/bomstream/bomstream/collector/manifest/manifesttest"
	"github.com/bomstream/bomstream/schemas"
)

// A container's serving facts: its declared ports, the paths and ports of
// its HTTP probes, and its accelerators (extended resources of requests and
// limits, never cpu, memory, storage or hugepages; resource claims; the
// pod's nodeSelector keys that name an accelerator, on main containers).
// Quantities and label values are not inputs.
func TestContainerServingFacts(t *testing.T) {
	n := newNormalizer(t, Config{AcceleratorLabels: []string{"example.com/accelerator"}})
	doc := func(gpus, product string) map[string]any {
		return parseObj(t, `
apiVersion: apps/v1
kind: Deployment
metadata: {name: vllm, namespace: ml}
spec:
  replicas: 3
  template:
    spec:
      nodeSelector:
        cloud.google.com/gke-accelerator: `+product+`
        example.com/accelerator: "yes"
        kubernetes.io/os: linux
      containers:
      - name: vllm
        image: vllm/vllm-openai:v0.10.1
        ports:
        - {name: http, containerPort: 8000}
        - {containerPort: "9090"}
        - {containerPort: "{{ .Values.port }}"}
        readinessProbe: {httpGet: {path: /v1/models, port: http}}
        livenessProbe: {httpGet: {path: /health, port: 8000}}
        startupProbe: {tcpSocket: {port: 8000}}
        resources:
          limits: {nvidia.com/gpu: `+gpus+`, cpu: "8", memory: 32Gi, hugepages-2Mi: 1Gi, ephemeral-storage: 10Gi}
          requests: {rdma/ib: "1", amd.com/gpu: "0"}
          claims: [{name: gpu-claim}]
      initContainers:
      - name: fetch
        image: amazon/aws-cli:2.17.0
        resources: {limits: {example.com/fpga: 1}}
`)
	}
	in := normalizeWith(t, n, doc("2", "nvidia-l4"), nil)
	c := in.Components[0].Containers[0]
	if want := []schemas.Port{{Name: "http", Port: 8000}, {Port: 9090}}; !reflect.DeepEqual(c.Ports, want) {
		t.Errorf("ports %+v, want %+v", c.Ports, want)
	}
	if want := []schemas.Probe{{Kind: "readiness", Path: "/v1/models", Port: "http"}, {Kind: "liveness", Path: "/health", Port: "8000"}}; !reflect.DeepEqual(c.Probes, want) {
		t.Errorf("probes %+v, want %+v", c.Probes, want)
	}
	want := []string{"claim:gpu-claim", "node:cloud.google.com/gke-accelerator", "node:example.com/accelerator", "nvidia.com/gpu", "rdma/ib"}
	if !reflect.DeepEqual(c.Accelerators, want) {
		t.Errorf("accelerators %v, want %v", c.Accelerators, want)
	}
	if init := in.Components[0].Containers[1]; !reflect.DeepEqual(init.Accelerators, []string{"example.com/fpga"}) {
		t.Errorf("init container accelerators %v (the node's are the main containers')", init.Accelerators)
	}
	if h := inputHash(t, normalizeWith(t, n, doc("8", "nvidia-h100-80gb"), nil)); h != inputHash(t, in) {
		t.Error("more GPUs of another model moved the input hash")
	}
}

// Operators' short forms, read through the profiles: a Dynamo service's
// resources.limits.gpu (nvidia.com/gpu) and custom resources, a
// NIMService's spec.resources, a VLLMRuntime's gpu of gpuType.
func TestAcceleratorsThroughProfiles(t *testing.T) {
	n := newNormalizer(t, Config{})
	objs, err := manifest.ReadPath(filepath.Join(manifesttest.Corpus(t), "dynamo/recipes/qwen3-32b/vllm/agg-round-robin/deploy.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	dgd := normalizeWith(t, n, objs[0].Obj, nil)
	seen := 0
	for _, comp := range dgd.Components {
		main := comp.Containers[0]
		switch {
		case comp.Name == "Frontend":
			if main.Accelerators != nil {
				t.Errorf("%s: accelerators %v", comp.Name, main.Accelerators)
			}
		default:
			seen++
			if !reflect.DeepEqual(main.Accelerators, []string{"nvidia.com/gpu", "rdma/ib"}) {
				t.Errorf("%s: accelerators %v", comp.Name, main.Accelerators)
			}
		}
	}
	if seen == 0 {
		t.Error("no worker in the Dynamo graph")
	}
	nim := normalizeWith(t, n, parseObj(t, `
apiVersion: apps.nvidia.com/v1alpha1
kind: NIMService
metadata: {name: llama, namespace: nim}
spec:
  image: {repository: nvcr.io/nim/meta/llama-3.1-8b-instruct, tag: "1.3.3"}
  nodeSelector: {nvidia.com/gpu.product: NVIDIA-A100-SXM4-80GB}
  resources: {limits: {nvidia.com/gpu: 1}}
`), nil)
	if got := nim.Components[0].Containers[0].Accelerators; !reflect.DeepEqual(got, []string{"node:nvidia.com/gpu.product", "nvidia.com/gpu"}) {
		t.Errorf("NIMService accelerators %v", got)
	}
	vr := normalizeWith(t, n, parseObj(t, `
apiVersion: production-stack.vllm.ai/v1alpha1
kind: VLLMRuntime
metadata: {name: r, namespace: ml}
spec:
  model: {modelURL: meta-llama/Llama-3.1-8B-Instruct}
  deploymentConfig:
    image: {registry: docker.io, name: "lmcache/vllm-openai:2025-05-27-v1"}
    resources: {cpu: "5", gpu: "1", gpuType: amd.com/gpu}
`), nil)
	if got := vr.Components[0].Containers[0].Accelerators; !reflect.DeepEqual(got, []string{"amd.com/gpu"}) {
		t.Errorf("VLLMRuntime accelerators %v", got)
	}
}

// A profile's accelerator short form is checked when it is loaded.
func TestAcceleratorSpecChecked(t *testing.T) {
	for _, bad := range [][]acceleratorSpec{
		{{Path: "resources.limits.gpu"}},
		{{Name: "nvidia.com/gpu"}},
		{{Keys: "resources.limits.custom", Name: "x"}},
		{{Path: "a..b", Name: "x"}},
	} {
		if _, err := compileAccelerators(bad); err == nil {
			t.Errorf("%+v: no error", bad)
		}
	}
}
