package imageref

import (
	"errors"
	"strings"
	"testing"
)

func TestParseImage(t *testing.T) {
	for _, tc := range []struct {
		ref                      string
		registry, repo, tag, dig string
	}{
		{"nginx", "docker.io", "library/nginx", "", ""},
		{"nginx:1.15", "docker.io", "library/nginx", "1.15", ""},
		{"docker.io/redis:6.0.5", "docker.io", "library/redis", "6.0.5", ""},
		{"vllm/vllm-openai:v0.8.5", "docker.io", "vllm/vllm-openai", "v0.8.5", ""},
		{"nvcr.io/nvidia/ai-dynamo/vllm-runtime:1.3.1", "nvcr.io", "nvidia/ai-dynamo/vllm-runtime", "1.3.1", ""},
		{"localhost:5000/a/b:t", "localhost:5000", "a/b", "t", ""},
		{"ghcr.io/x/y@sha256:" + strings.Repeat("ab", 32), "ghcr.io", "x/y", "", "sha256:" + strings.Repeat("ab", 32)},
		{"llamacpp-worker:latest", "docker.io", "library/llamacpp-worker", "latest", ""},
		// As docker reads it: a first component with upper case is a registry host.
		{"UPPER/case", "UPPER", "case", "", ""},
		{"index.docker.io/vllm/vllm-openai:v0.9.0", "docker.io", "vllm/vllm-openai", "v0.9.0", ""},
		{"[::1]:5000/m/vllm:1", "[::1]:5000", "m/vllm", "1", ""},
	} {
		img, err := ParseImage(tc.ref)
		if err != nil {
			t.Errorf("%s: %v", tc.ref, err)
			continue
		}
		if img.Registry != tc.registry || img.Repository != tc.repo || img.Tag != tc.tag || img.Digest != tc.dig {
			t.Errorf("%s: got %+v", tc.ref, img)
		}
	}
	for _, bad := range []string{"", "  ", "${VERSION}", "nvcr.io/nvidia/ai-dynamo/vllm-runtime:${VERSION}", "<image>", "REPLACE_MODEL_SERVER_IMAGE",
		"a b", "x@sha256:zz", "Upper", "repo:", ":tag", "a//b", "-lead", "x:" + strings.Repeat("t", 200),
		// Found by FuzzParseImage: its first segment has a dot, so it names a
		// registry, but no valid one; the reference library left it empty.
		"0.0_0/0", "a.b_c/d:1", "x_y.z/w"} {
		if img, err := ParseImage(bad); err == nil || !errors.Is(err, ErrUnresolvedImage) {
			t.Errorf("%q parsed as %+v (err %v)", bad, img, err)
		}
	}
}

func TestVersion(t *testing.T) {
	for in, want := range map[string]string{
		"v0.8.5": "0.8.5", "0.8.0": "0.8.0", "1.12": "1.12", "23.10-py3": "23.10", "24.07-trtllm-python-py3": "24.07",
		"v0.19.1": "0.19.1", "0.8.5rc1": "0.8.5rc1", "latest": "", "main": "", "my-tag": "", "${VERSION}": "",
		"2025-05-05-v1": "", "2024.05.01": "", "3": "", "": "", "1..2": "", "1.": "", "replace": "",
	} {
		if got := Version(in); got != want {
			t.Errorf("Version(%q) = %q, want %q", in, got, want)
		}
	}
}
