package transformer

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/bomstream/bomstream/schemas/imageref"
)

func FuzzParseImage(f *testing.F) {
	for _, s := range []string{
		"nginx", "nginx:1.15", "docker.io/redis:6.0.5", "vllm/vllm-openai:v0.8.5", "lmsysorg/sglang:latest",
		"nvcr.io/nvidia/ai-dynamo/vllm-runtime:${VERSION}", "nvcr.io/nim/meta/llama-3.2-1b-instruct:1.12.0",
		"us-docker.pkg.dev/deeplearning-platform-release/gcr.io/huggingface-text-generation-inference-cu121.2-0.ubuntu2204:latest",
		"<image>", "REPLACE_MODEL_SERVER_IMAGE", "vllmserver:replace", "", "localhost:5000/a/b:t",
		"ghcr.io/x/y@sha256:" + strings.Repeat("ab", 32), "docker-pullable://x@sha256:" + strings.Repeat("0", 64),
		"a:b:c", "a@b@c", "/", "::", "a/../b",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, ref string) {
		img, err := imageref.ParseImage(ref)
		if err != nil {
			return
		}
		if img.Registry == "" || img.Repository == "" {
			t.Fatalf("%q parsed without registry or repository: %+v", ref, img)
		}
		// A parsed reference round-trips through its normalized form.
		again, err := imageref.ParseImage(img.String())
		if err != nil || again.Name() != img.Name() || again.Tag != img.Tag || again.Digest != img.Digest {
			t.Fatalf("%q -> %q -> %+v, %v", ref, img.String(), again, err)
		}
		p := imagePURL(img, "")
		if !strings.HasPrefix(p, "pkg:oci/") || strings.ContainsAny(p, " \n\"") || !utf8.ValidString(p) {
			t.Fatalf("bad purl %q for %q", p, ref)
		}
	})
}

func FuzzParseArgs(f *testing.F) {
	seeds := []struct{ cmd, args string }{
		{"vllm\x00serve", "Qwen/Qwen3-32B\x00--tp=4\x00--enforce-eager"},
		{"", "serve\x00Qwen/Qwen3-235B-A22B"},
		{"sh\x00-c", "bash run.sh leader --ray_cluster_size=$(LWS_GROUP_SIZE); python3 -m vllm.entrypoints.openai.api_server --model m --tensor-parallel-size 8"},
		{"/bin/bash\x00-exc", "set -x\npython -m vllm.entrypoints.openai.api_server \\\n --model ${MODEL_ID} 2>&1 | tee log"},
		{"python3\x00-m\x00dynamo.vllm", "--model\x00Qwen/Qwen3-0.6B\x00--is-decode-worker"},
		{"sh\x00-c", "echo 'unterminated"},
		{"sh\x00-c", "a $(b ${c \"d; `e"},
		{"", "--kv-transfer-config\x00{\"kv_role\":\"kv_producer\"}"},
	}
	for _, s := range seeds {
		f.Add(s.cmd, s.args)
	}
	split := func(s string) []string {
		if s == "" {
			return nil
		}
		return strings.Split(s, "\x00")
	}
	f.Fuzz(func(t *testing.T, cmd, args string) {
		c, a := split(cmd), split(args)
		invs := ParseArgsWith(c, a, ParseOptions{Env: map[string]string{"MODEL_ID": "org/m", "X": "$(X)"}, Booleans: map[string]bool{"--enforce-eager": true}})
		n := len(c) + len(a)
		for _, inv := range invs {
			for _, w := range inv.Words {
				if w.Src < 0 || w.Src >= n {
					t.Fatalf("word %q has src %d of %d", w.Text, w.Src, n)
				}
			}
			for _, fl := range inv.Flags {
				if !strings.HasPrefix(fl.Name, "-") || fl.Src < 0 || fl.Src >= n {
					t.Fatalf("bad flag %+v", fl)
				}
			}
		}
	})
}
