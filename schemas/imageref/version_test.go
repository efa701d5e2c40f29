package imageref

import "testing"

// TestParseVersionTags reads the tag shapes the engines publish on their
// registries (Docker Hub, GHCR, NGC, quay): the version is the upstream
// release string as published, the rest a variant, never the version.
func TestParseVersionTags(t *testing.T) {
	for _, tc := range []struct{ tag, version, variant string }{
		// vLLM (vllm/vllm-openai, vllm/vllm-openai-rocm, vllm/vllm-tpu)
		{"v0.8.5", "0.8.5", ""},
		{"v0.10.1.1", "0.10.1.1", ""},
		{"v0.6.3.post1", "0.6.3.post1", ""},
		{"v0.9.0-arm64", "0.9.0", "arm64"},
		{"v0.11.0-x86_64", "0.11.0", "x86_64"},
		{"v0.10.2rc1", "0.10.2rc1", ""},
		{"nightly-2f9e1b3c", "", ""},
		// SGLang (lmsysorg/sglang)
		{"v0.4.6.post1", "0.4.6.post1", ""},
		{"v0.4.6.post1-cu124", "0.4.6.post1", "cu124"},
		{"v0.4.1.post7-cu124-srt", "0.4.1.post7", "cu124-srt"},
		{"v0.5.2-cu126", "0.5.2", "cu126"},
		{"v0.5.0rc2-cu126", "0.5.0rc2", "cu126"},
		{"v0.4.9.post2-rocm630-mi30x", "0.4.9.post2", "rocm630-mi30x"},
		{"v0.4.3-cu125-gb200", "0.4.3", "cu125-gb200"},
		{"latest", "", ""},
		{"dev", "", ""},
		// TGI (ghcr.io/huggingface/text-generation-inference)
		{"3.3.4", "3.3.4", ""},
		{"2.4.0-rocm", "2.4.0", "rocm"},
		{"3.0.1-intel-xpu", "3.0.1", "intel-xpu"},
		{"2.3.1-intel-cpu", "2.3.1", "intel-cpu"},
		{"sha-7e72b7d", "", ""},
		{"latest-intel-cpu", "", ""},
		// TEI (ghcr.io/huggingface/text-embeddings-inference)
		{"1.6", "1.6", ""},
		{"1.6-cpu", "1.6", "cpu"},
		{"cpu-1.6", "1.6", "cpu"},
		{"turing-1.5", "1.5", "turing"},
		{"89-1.5", "1.5", "89"},
		{"hopper-1.7", "1.7", "hopper"},
		// Triton (nvcr.io/nvidia/tritonserver)
		{"24.08-py3", "24.08", "py3"},
		{"24.08-trtllm-python-py3", "24.08", "trtllm-python-py3"},
		{"24.07-vllm-python-py3", "24.07", "vllm-python-py3"},
		{"24.08-py3-min", "24.08", "py3-min"},
		{"25.01-py3-igpu", "25.01", "py3-igpu"},
		// TensorRT-LLM (nvcr.io/nvidia/tensorrt-llm/release)
		{"0.19.0", "0.19.0", ""},
		{"1.0.0rc4", "1.0.0rc4", ""},
		{"1.1.0rc2.post1", "1.1.0rc2.post1", ""},
		// Ollama, LMDeploy, llama.cpp, Ray, KServe, NIM, Dynamo
		{"0.6.5", "0.6.5", ""},
		{"0.6.5-rocm", "0.6.5", "rocm"},
		{"0.7.3-arm64", "0.7.3", "arm64"},
		{"v0.7.3-cu12", "0.7.3", "cu12"},
		{"v0.9.0-cu12.8", "0.9.0", "cu12.8"},
		{"latest-cu12", "", ""},
		{"server-cuda", "", ""},
		{"2.40.0-py310-gpu", "2.40.0", "py310-gpu"},
		{"2.9.0-py39-cu121", "2.9.0", "py39-cu121"},
		{"v0.15.0-gpu", "0.15.0", "gpu"},
		{"1.12.0", "1.12.0", ""},
		{"1.12", "1.12", ""},
		{"1.3.1", "1.3.1", ""},
		{"my-tag", "", ""},
		{"${VERSION}", "", ""},
		// Build metadata and pre-releases, as version fields carry them.
		{"2.4.0+cu121", "2.4.0", "cu121"},
		{"1.2.3-cpu+20240501", "1.2.3", "cpu-20240501"},
		{"1.0.0-rc.1", "1.0.0-rc.1", ""},
		{"2.0.0-beta2-cuda", "2.0.0-beta2", "cuda"},
		{"0.8.5rc1", "0.8.5rc1", ""},
		// Dates and other non-versions.
		{"2025-05-05-v1", "", ""},
		{"2024.05.01", "", ""},
		{"3", "", ""},
		{"1..2", "", ""},
		{"1.", "", ""},
	} {
		v, variant := ParseVersion(tc.tag)
		if v != tc.version || variant != tc.variant {
			t.Errorf("ParseVersion(%q) = %q, %q; want %q, %q", tc.tag, v, variant, tc.version, tc.variant)
		}
	}
}
