package transformer

import (
	"testing"

	"github.com/bomstream/bomstream/schemas"
)

// The runtime carries the version as published and the variant as a
// property; the purl and bom-ref name the version.
func TestRuntimeVariant(t *testing.T) {
	_, d := render(t, deploy("sgl", schemas.Container{Name: "s", Image: "lmsysorg/sglang:v0.4.6.post1-cu124",
		Command: []string{"python3", "-m", "sglang.launch_server"}, Args: []string{"--model-path", "org/m"}}))
	c := mustRuntime(t, d, "sglang", "0.4.6.post1", "declared")
	if c.prop("runtime:variant") != "cu124" || c.PURL != "pkg:pypi/sglang@0.4.6.post1" {
		t.Errorf("variant %q purl %q", c.prop("runtime:variant"), c.PURL)
	}
	_, d = render(t, deploy("tgi", schemas.Container{Name: "t", Image: "ghcr.io/huggingface/text-generation-inference:2.4.0-rocm",
		Env: []schemas.EnvVar{{Name: "MODEL_ID", Value: "org/m"}}}))
	if c := mustRuntime(t, d, "tgi", "2.4.0", "inferred"); c.prop("runtime:variant") != "rocm" {
		t.Errorf("tgi variant %q", c.prop("runtime:variant"))
	}
}
