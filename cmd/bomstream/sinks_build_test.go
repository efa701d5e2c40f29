package main

import (
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/bomstream/bomstream/sinks/registry"
)

// The default build links every sink type; -tags nocloudsinks links only
// the file and stdout sinks, and none of the cloud clients.
func TestNoCloudSinksBuild(t *testing.T) {
	want := slices.Sorted(slices.Values(append(registry.CloudTypes(), registry.Local().Types()...)))
	if got := registry.Builtin().Types(); !slices.Equal(got, want) {
		t.Errorf("default build: sink types %v, want the cloud sinks and file and stdout: %v", got, want)
	}
	deps := func(tags string) []string {
		out, err := exec.Command("go", "list", "-deps", "-tags", tags, ".").CombinedOutput()
		if err != nil {
			t.Fatalf("go list -tags %q: %v\n%s", tags, err, out)
		}
		return strings.Fields(string(out))
	}
	heavy := []string{"cloud.google.com/go/storage", "google.golang.org/grpc", "github.com/DependencyTrack/client-go", "oras.land/oras-go/v2/registry/remote",
		"github.com/bomstream/bomstream/sinks/gcs", "github.com/bomstream/bomstream/sinks/dtrack", "github.com/bomstream/bomstream/sinks/oci"}
	full, lean := deps(""), deps("nocloudsinks")
	for _, p := range heavy {
		if !slices.Contains(full, p) {
			t.Errorf("the default build does not link %s", p)
		}
		if slices.Contains(lean, p) {
			t.Errorf("-tags nocloudsinks links %s", p)
		}
	}
	for _, p := range []string{"github.com/bomstream/bomstream/sinks/file", "github.com/bomstream/bomstream/collector/kube", "github.com/bomstream/bomstream/transformer"} {
		if !slices.Contains(lean, p) {
			t.Errorf("-tags nocloudsinks does not link %s", p)
		}
	}
}
