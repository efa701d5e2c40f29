package transformer

import (
	"strings"
	"testing"

	"github.com/bomstream/bomstream/schemas/imageref"
)

// The package URL of an image names its last path segment, its
// repository and tag, and its digest.
func TestImagePURL(t *testing.T) {
	for _, tc := range []struct{ ref, purl string }{
		{"nginx", "pkg:oci/nginx?repository_url=docker.io/library/nginx"},
		{"nginx:1.15", "pkg:oci/nginx?repository_url=docker.io/library/nginx&tag=1.15"},
		{"vllm/vllm-openai:v0.8.5", "pkg:oci/vllm-openai?repository_url=docker.io/vllm/vllm-openai&tag=v0.8.5"},
		{"localhost:5000/a/b:t", "pkg:oci/b?repository_url=localhost:5000/a/b&tag=t"},
		{"ghcr.io/x/y@sha256:" + strings.Repeat("ab", 32), "pkg:oci/y@sha256%3A" + strings.Repeat("ab", 32) + "?repository_url=ghcr.io/x/y"},
	} {
		img, err := imageref.ParseImage(tc.ref)
		if err != nil {
			t.Errorf("%s: %v", tc.ref, err)
			continue
		}
		if got := imagePURL(img, ""); got != tc.purl {
			t.Errorf("%s: purl %s, want %s", tc.ref, got, tc.purl)
		}
	}
}
