package transformer

import (
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/bomstream/bomstream/schemas/cmdline"
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

// FuzzParseArgsMemo: cmdline.ParseArgsWith taking its scripts from a
// Renderer's memo gives what it gives alone, the first time and the next.
func FuzzParseArgsMemo(f *testing.F) {
	f.Add("sh", "-c", "bash /x.sh leader --ray_cluster_size=$(N); python3 -m vllm.entrypoints.openai.api_server --port 8080 -- --x", "--model=a")
	f.Add("vllm", "serve", "org/m", "--tensor-parallel-size")
	f.Add("", "serve", "--flag", "-1")
	r := newRenderer(f).rules
	opt := cmdline.ParseOptions{Env: map[string]string{"N": "2"}, Booleans: map[string]bool{"--enforce-eager": true}}
	memo := opt
	memo.Scripts = r.shell
	f.Fuzz(func(t *testing.T, a, b, c, d string) {
		var command, args []string
		if a != "" {
			command = []string{a, b}
		}
		args = []string{c, d}
		for range 2 {
			got := cmdline.ParseArgsWith(command, args, memo)
			want := cmdline.ParseArgsWith(command, args, opt)
			if !sameInvocations(got, want) {
				t.Fatalf("parseArgs(%q, %q) = %+v, want %+v", command, args, got, want)
			}
		}
	})
}

// sameInvocations compares invocations, an empty list equal to a nil one.
func sameInvocations(a, b []cmdline.Invocation) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		x, y := a[i], b[i]
		if x.Program != y.Program || x.ProgramSrc != y.ProgramSrc || x.Shell != y.Shell ||
			len(x.Words)+len(y.Words) > 0 && !reflect.DeepEqual(x.Words, y.Words) ||
			len(x.Flags)+len(y.Flags) > 0 && !reflect.DeepEqual(x.Flags, y.Flags) ||
			len(x.Positionals)+len(y.Positionals) > 0 && !reflect.DeepEqual(x.Positionals, y.Positionals) {
			return false
		}
	}
	return true
}
