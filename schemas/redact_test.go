package schemas

import (
	"strings"
	"testing"
)

func TestRedactText(t *testing.T) {
	hf := "hf_" + strings.Repeat("aB3", 12)
	for _, tc := range []struct{ name, in, want string }{
		{"plain", "render ml/Deployment/chat: no serving runtime", "render ml/Deployment/chat: no serving runtime"},
		{"engine flags kept", `--tokenizer org/tok --max-num-batched-tokens 8192 --kv-transfer-config '{"kv_role":"kv_both"}'`,
			`--tokenizer org/tok --max-num-batched-tokens 8192 --kv-transfer-config '{"kv_role":"kv_both"}'`},
		{"hf token", "token " + hf + " rejected", "token REDACTED rejected"},
		// An hf_ token glued to the word before it takes the whole word:
		// "hf_000000000000" + "REDACTED" would be a token again (FuzzRedactText).
		{"hf token inside a word", "x hf_000000000000hf_00000000000000000000 y", "x REDACTED y"},
		{"hf token after an AWS-like prefix", "AKIA00000000" + hf, "REDACTED"},
		{"openai key", "auth failed for sk-proj-abcdefghijklmnop1234", "auth failed for REDACTED"},
		{"github and gitlab", "ghp_abcdefghijklmnopqrstuv12 glpat-abcdefghijklmnopqrst", "REDACTED REDACTED"},
		{"aws key id", "AKIAABCDEFGHIJKLMNOP used", "REDACTED used"},
		{"nvapi", "NGC key nvapi-abcdefghijklmnopqrstuvwx", "NGC key REDACTED"},
		{"jwt", "jwt eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.sig_nature-1", "jwt REDACTED"},
		{"private key", "key: -----BEGIN RSA PRIVATE KEY-----\nMIIE\n-----END RSA PRIVATE KEY----- end", "key: REDACTED end"},
		{"url userinfo", "dial postgres://admin:s3cr3t@db:5432/app failed", "dial postgres://REDACTED@db:5432/app failed"},
		{"url user only", "clone https://x-token-abc@github.com/o/r.git", "clone https://REDACTED@github.com/o/r.git"},
		{"url query", "GET https://example.com/m?a=1&access_token=zz&X-Amz-Signature=q: 403", "GET https://example.com/m 403"},
		{"url revision kept", "hf://org/m?revision=abc123&token=zz", "hf://org/m?revision=abc123"},
		{"url fragment", "https://h/cb#access_token=abc", "https://h/cb"},
		{"bearer", `curl -H "Authorization: Bearer abc.def-ghi" http://x`, `curl -H "Authorization: REDACTED" http://x`},
		{"basic", "Basic dXNlcjpwYXNzd29yZA==", "Basic REDACTED"},
		{"api key header", "X-Api-Key: k-123 456", "X-Api-Key: REDACTED"},
		{"header in quotes", `-H 'X-Auth-Token: abc' -H "Accept: json"`, `-H 'X-Auth-Token: REDACTED' -H "Accept: json"`},
		{"cookie", "Cookie: session=abc; theme=dark", "Cookie: REDACTED"},
		{"flag equals", "exec serve --password=hunter2 --port=80", "exec serve --password=REDACTED --port=80"},
		{"flag space", "serve --db-password hunter2 --port 80", "serve --db-password REDACTED --port 80"},
		{"flag space quoted", `serve --client-secret "a b" --x`, `serve --client-secret "REDACTED" --x`},
		{"assignment", "export HF_TOKEN=abc; AWS_SECRET_ACCESS_KEY='q w' run", "export HF_TOKEN=REDACTED; AWS_SECRET_ACCESS_KEY='REDACTED' run"},
		{"json", `{"api_key": "abc", "model": "org/m", "password":"p"}`, `{"api_key": "REDACTED", "model": "org/m", "password":"REDACTED"}`},
		{"yaml", "password: hunter2\nuser: bob", "password: REDACTED\nuser: bob"},
		{"flag before flag", "--auth --port 1", "--auth --port 1"},
		{"max tokens kept", `{"max_tokens": 100}`, `{"max_tokens": 100}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := RedactText(tc.in)
			if got != tc.want {
				t.Errorf("RedactText(%q)\n = %q\nwant %q", tc.in, got, tc.want)
			}
			if again := RedactText(got); again != got {
				t.Errorf("not idempotent: %q -> %q", got, again)
			}
		})
	}
}

func TestSecretName(t *testing.T) {
	for name, want := range map[string]bool{
		"--hf-token": true, "HF_TOKEN": true, "--api-key": true, "NGC_API_KEY": true, "--apikey": true,
		"AWS_SECRET_ACCESS_KEY": true, "--password": true, "--db-passwd": true, "--auth": true, "hfToken": true,
		"X-Api-Key": true, "Authorization": true, "Cookie": true,
		"--tokenizer": false, "--max-tokens": false, "--model": false, "--authority": false, "--key-size": false, "kv_role": false,
	} {
		if got := SecretName(name); got != want {
			t.Errorf("SecretName(%q) = %v, want %v", name, got, want)
		}
	}
}

func TestRedactURL(t *testing.T) {
	for in, want := range map[string]string{
		"https://huggingface.co/org/m":                         "https://huggingface.co/org/m",
		"s3://bucket/m?X-Amz-Credential=a&X-Amz-Signature=b":   "s3://bucket/m",
		"https://u:p@h/x?ref=main#frag":                        "https://REDACTED@h/x?ref=main#frag",
		"https://h/x?ref=" + "hf_" + strings.Repeat("a", 30):   "https://h/x",
		"redis://:pw@cache:6379/0":                             "redis://REDACTED@cache:6379/0",
		"not a url":                                            "not a url",
		"oci://registry/repo@sha256:" + strings.Repeat("0", 8): "oci://registry/repo@sha256:" + strings.Repeat("0", 8),
	} {
		if got := RedactURL(in); got != want {
			t.Errorf("RedactURL(%q) = %q, want %q", in, got, want)
		}
	}
}

func FuzzRedactText(f *testing.F) {
	for _, s := range []string{
		"", "a", "token=x", "https://u:p@h/p?q=1#f=2", "Authorization: Bearer x", `{"password":"`, "--secret 'unterminated",
		"hf_" + strings.Repeat("x", 30), "-----BEGIN PRIVATE KEY-----", "x: y: z", "===", "::::",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := RedactText(s)
		if again := RedactText(got); again != got {
			t.Fatalf("not idempotent: %q -> %q -> %q", s, got, again)
		}
	})
}
