package collector

import (
	"reflect"
	"strings"
	"testing"
)

func TestScrubArgs(t *testing.T) {
	hf := "hf_" + strings.Repeat("aB3", 10)
	for _, tc := range []struct {
		name     string
		in, want []string
	}{
		{"separate value", []string{"--api-key", "sk-123", "--port", "8000"}, []string{"--api-key", "REDACTED", "--port", "8000"}},
		{"equals value", []string{"--hf-token=" + hf}, []string{"--hf-token=REDACTED"}},
		{"underscore and camel", []string{"--hf_token", "x1", "--apiKey=y2", "--clientSecret", "z3"}, []string{"--hf_token", "REDACTED", "--apiKey=REDACTED", "--clientSecret", "REDACTED"}},
		{"boolean flag before flag", []string{"--disable-auth", "--port", "1"}, []string{"--disable-auth", "--port", "1"}},
		{"password and credential", []string{"-password", "p", "--credentials-file=/c"}, []string{"-password", "REDACTED", "--credentials-file=REDACTED"}},
		{"engine config kept", []string{"--tokenizer", "org/tok", "--max-num-batched-tokens", "8192", "--skip-tokenizer-init", "--model", "org/m"},
			[]string{"--tokenizer", "org/tok", "--max-num-batched-tokens", "8192", "--skip-tokenizer-init", "--model", "org/m"}},
		{"bare hf token", []string{"download", hf}, []string{"download", "REDACTED"}},
		{"shell string", []string{"sh", "-c", "serve --model org/m --token abc123 --port 1 && curl -H 'Authorization: Bearer eyJabc.def' http://x"},
			[]string{"sh", "-c", "serve --model org/m --token REDACTED --port 1 && curl -H 'Authorization: Bearer REDACTED' http://x"}},
		{"shell assignment", []string{"bash", "-c", "export HF_TOKEN=abc; AWS_SECRET_ACCESS_KEY='q w' run --api-key=\"k 1\""},
			[]string{"bash", "-c", "export HF_TOKEN=REDACTED; AWS_SECRET_ACCESS_KEY=REDACTED run --api-key=REDACTED"}},
		{"url password and query", []string{"--redis", "redis://user:pa55@host:6379", "--url=https://x/y?a=1&access_token=zz"},
			[]string{"--redis", "redis://REDACTED@host:6379", "--url=https://x/y?a=1&access_token=REDACTED"}},
		{"last flag without value", []string{"serve", "--token"}, []string{"serve", "--token"}},
		{"nothing secret", []string{"python3", "-m", "vllm.entrypoints.openai.api_server", "--hf-overrides={\"a\": 1}"},
			[]string{"python3", "-m", "vllm.entrypoints.openai.api_server", "--hf-overrides={\"a\": 1}"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := ScrubArgs(tc.in); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("ScrubArgs(%q)\n = %q\nwant %q", tc.in, got, tc.want)
			}
		})
	}
	if ScrubArgs(nil) != nil {
		t.Error("ScrubArgs(nil) != nil")
	}
}

func TestScrubString(t *testing.T) {
	for in, want := range map[string]string{
		"plain org/model":                      "plain org/model",
		"token: hf_" + strings.Repeat("x", 20): "token: REDACTED",
		"hf_short":                             "hf_short",
		"bearer abc":                           "bearer REDACTED",
		"--kv_transfer_config '{\"kv_role\":\"kv_consumer\"}'": "--kv_transfer_config '{\"kv_role\":\"kv_consumer\"}'",
	} {
		if got := ScrubString(in); got != want {
			t.Errorf("ScrubString(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestSecretName(t *testing.T) {
	for name, want := range map[string]bool{
		"--hf-token": true, "HF_TOKEN": true, "--api-key": true, "NGC_API_KEY": true, "--apikey": true,
		"AWS_SECRET_ACCESS_KEY": true, "--password": true, "--db-passwd": true, "--auth": true, "hfToken": true,
		"--tokenizer": false, "--max-tokens": false, "--model": false, "--authority": false, "--key-size": false,
	} {
		if got := secretName(name); got != want {
			t.Errorf("secretName(%q) = %v, want %v", name, got, want)
		}
	}
}
