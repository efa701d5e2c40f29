package transformer

import (
	"strings"
	"testing"

	"github.com/bomstream/bomstream/schemas"
)

// Defects found by the unit tests of the model sources, each kept as the
// test that showed it.

// The model's path is the one the server loads, not the downloader's:
// the two may mount the volume at different places.
func TestLinkedPathIsTheServers(t *testing.T) {
	in := podOf(emptyDirs("data"),
		vllmServer("/models/qwen", mnt("data", "/models")),
		downloader("python:3.12", []string{"huggingface-cli", "download", "Qwen/Qwen3-0.6B", "--local-dir", "/work/qwen"}, nil, mnt("data", "/work")))
	_, d := render(t, in)
	m := onlyModel(t, d)
	if m.Name != "Qwen/Qwen3-0.6B" || m.prop("model:path") != "/models/qwen" {
		t.Errorf("model %s path %q, want Qwen/Qwen3-0.6B at /models/qwen", m.Name, m.prop("model:path"))
	}
	// A download no server path is linked to keeps where it went.
	in = podOf(emptyDirs("data"), vllmServer("/models/other", mnt("data", "/models")),
		downloader("python:3.12", []string{"hf", "download", "org/x", "--local-dir", "/work/x"}, nil, mnt("data", "/work")))
	_, d = render(t, in)
	if m, ok := d.model("org/x"); !ok || m.prop("model:path") != "/work/x" {
		t.Errorf("unlinked download path %q, want /work/x", m.prop("model:path"))
	}
}

// A download and the server in one script (one locator) are linked.
func TestDownloadAndServerInOneScript(t *testing.T) {
	for name, script := range map[string]string{
		"hf":  "hf download org/x --local-dir /m && vllm serve /m",
		"git": "git clone https://huggingface.co/BAAI/bge-m3 /m && cd /m && git checkout deadbeef && vllm serve /m",
	} {
		t.Run(name, func(t *testing.T) {
			in := podOf(nil, schemas.Container{Name: "s", Locator: serverLoc, Image: "vllm/vllm-openai:v0.9.2", Command: []string{"sh", "-c", script}})
			_, d := render(t, in)
			m := onlyModel(t, d)
			if strings.HasPrefix(m.Name, "/") || m.prop("model:path") != "/m" {
				t.Errorf("model %s path %q, want the source at /m", m.Name, m.prop("model:path"))
			}
			if name == "git" && m.prop("model:revision") != "deadbeef" {
				t.Errorf("revision %q", m.prop("model:revision"))
			}
		})
	}
}

// An adapter held in an image (a KAITO adapter) is marked as an adapter.
func TestImageAdapterMarked(t *testing.T) {
	_, d := render(t, fieldsOnly("Workspace", fld("kaitoPreset", "falcon-7b", "inference.preset.name"),
		fld("loraAdapterImage", "myregistry.azurecr.io/adapters/x:0.1", "inference.adapters[0].source.image")))
	for _, m := range modelsOf(d) {
		if strings.HasPrefix(m.Name, "oci://") && m.prop("model:adapter") != "lora" {
			t.Errorf("%s: adapter property %q", m.Name, m.prop("model:adapter"))
		}
	}
}

// An OCI reference with a digest and no path keeps its repository; a
// preset name outside the catalog is no Hugging Face id.
func TestOCIDigestAndUnknownPreset(t *testing.T) {
	dg := "sha256:" + strings.Repeat("cd", 32)
	id, kind, _ := classifyModel("oci://busybox@"+dg, false)
	if id != "oci://busybox@"+dg || kind != "oci" {
		t.Errorf("classify = %q %q", id, kind)
	}
	_, d := render(t, fieldsOnly("Workspace", fld("kaitoPreset", "my-custom-llm", "inference.preset.name")))
	for _, m := range modelsOf(d) {
		if m.Name == "my-custom-llm" && m.PURL != "" {
			t.Errorf("unknown preset purl %q", m.PURL)
		}
	}
}
