package transformer

import (
	"regexp"
	"strings"
	"testing"
)

// requiredLiteral gives a text only when every match contains it: a head
// without it is skipped, so a wrong literal would lose a launch.
func TestRequiredLiteral(t *testing.T) {
	for src, want := range map[string]string{
		`^(\S*/)?vllm serve( |$)`:                              "vllm serve",
		`^(\S*/)?python[0-9.]* -m vllm( |$)`:                   " -m vllm",
		`^text-generation-launcher`:                            "text-generation-launcher",
		`^(\S*/)?(vllm|sglang) x`:                              " x",
		`^(\S*/)?(vllm|sglang)`:                                "",
		`^(\S*/)?vllm|^torchserve`:                             "",
		`(?i)^vllm`:                                            "",
		`^(\S*/)?(?i)vllm`:                                     "",
		`^(\S*/)?kaggle models (instances )?download`:          "kaggle models ",
		`(^|/| )[a-z0-9_-]*(serve|server)[a-z0-9_-]*\.py( |$)`: ".py",
	} {
		if got := requiredLiteral(regexp.MustCompile(src)); got != want {
			t.Errorf("%s: %q, want %q", src, got, want)
		}
	}
	// Every pattern of the embedded rules: each match of a head the rules
	// launch contains the pattern's literal.
	r := newRenderer(t).rules
	heads := []string{"/usr/local/bin/vllm serve m", "python3 -m vllm.entrypoints.openai.api_server --model m",
		"python3 -m sglang.launch_server --model-path m", "text-generation-launcher --model-id m", "torchserve --start",
		"huggingface-cli download org/m", "kaggle models instances versions download x", "tritonserver --model-repository=/m"}
	for _, k := range r.serving.heads {
		for _, h := range append(heads, "python serve.py --port 1", "sleep infinity", "uvicorn app:app") {
			if k.re.MatchString(h) && !strings.Contains(h, k.lit) {
				t.Errorf("%s: %s matches %q without %q", k.name, k.re, h, k.lit)
			}
		}
	}
	for _, rt := range r.runtimes {
		for _, set := range [][]pattern{rt.commands, rt.argsOnly, rt.clients} {
			for _, p := range set {
				for _, h := range heads {
					if m := p.re.FindString(h); m != "" && !strings.Contains(h, p.lit) {
						t.Errorf("%s: %s matches %q without %q", rt.Name, p.re, h, p.lit)
					}
				}
			}
		}
	}
}
