package collector

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/bomstream/bomstream/schemas"
)

func TestRollUp(t *testing.T) {
	n, err := NewNormalizer(Config{Cluster: "c"})
	if err != nil {
		t.Fatal(err)
	}
	ctrl := func(apiVersion, kind, uid string) *OwnerRef {
		return &OwnerRef{APIVersion: apiVersion, Kind: kind, Name: "n-" + uid, UID: uid}
	}
	objs := map[string]Object{
		"dgd":  {APIVersion: "nvidia.com/v1beta1", Kind: "DynamoGraphDeployment", UID: "dgd"},
		"pcs":  {APIVersion: "grove.io/v1alpha1", Kind: "PodCliqueSet", UID: "pcs", Owner: ctrl("nvidia.com/v1beta1", "DynamoGraphDeployment", "dgd")},
		"pcsg": {APIVersion: "grove.io/v1alpha1", Kind: "PodCliqueScalingGroup", UID: "pcsg", Owner: ctrl("grove.io/v1alpha1", "PodCliqueSet", "pcs")},
		"pclq": {APIVersion: "grove.io/v1alpha1", Kind: "PodClique", UID: "pclq", Owner: ctrl("grove.io/v1alpha1", "PodCliqueScalingGroup", "pcsg")},
		"pod":  {APIVersion: "v1", Kind: "Pod", UID: "pod", Owner: ctrl("grove.io/v1alpha1", "PodClique", "pclq")},
		"dep":  {APIVersion: "apps/v1", Kind: "Deployment", UID: "dep"},
		"rs":   {APIVersion: "apps/v1", Kind: "ReplicaSet", UID: "rs", Owner: ctrl("apps/v1", "Deployment", "dep")},
		"p2":   {APIVersion: "v1", Kind: "Pod", UID: "p2", Owner: ctrl("apps/v1", "ReplicaSet", "rs")},
		"odd":  {APIVersion: "v1", Kind: "Pod", UID: "odd", Owner: ctrl("example.com/v9", "Widget", "w")},
		"lost": {APIVersion: "v1", Kind: "Pod", UID: "lost", Owner: ctrl("apps/v1", "ReplicaSet", "nope")},
		"c1":   {APIVersion: "apps/v1", Kind: "ReplicaSet", UID: "c1", Owner: ctrl("apps/v1", "ReplicaSet", "c2")},
		"c2":   {APIVersion: "apps/v1", Kind: "ReplicaSet", UID: "c2", Owner: ctrl("apps/v1", "ReplicaSet", "c1")},
	}
	lookup := func(uid string) (Object, bool) { o, ok := objs[uid]; return o, ok }
	for uid, want := range map[string]string{"pod": "dgd", "pclq": "dgd", "p2": "dep", "rs": "dep", "dep": "dep", "odd": "w"} {
		top, err := n.RollUp(objs[uid], lookup)
		if err != nil || top.UID != want {
			t.Errorf("RollUp(%s) = %s, %v; want %s", uid, top.UID, err, want)
		}
	}
	if top, _ := n.RollUp(objs["odd"], lookup); !top.Generic || top.Kind != "Widget" || top.APIVersion != "example.com/v9" || top.Name != "n-w" {
		t.Errorf("RollUp(odd) = %+v, want the generic Widget its owner reference names", top)
	}
	if top, _ := n.RollUp(objs["p2"], lookup); top.Generic {
		t.Errorf("RollUp(p2) = %+v: a known kind is never generic", top)
	}
	if _, err := n.RollUp(objs["lost"], lookup); !errors.Is(err, ErrOwnerUnseen) {
		t.Errorf("RollUp(lost) error = %v, want ErrOwnerUnseen", err)
	}
	if _, err := n.RollUp(objs["c1"], lookup); !errors.Is(err, ErrOwnerCycle) {
		t.Errorf("RollUp(cycle) error = %v, want ErrOwnerCycle", err)
	}
}

func TestDigests(t *testing.T) {
	h := func(c byte) string { return "sha256:" + strings.Repeat(string(c), 64) }
	in := &schemas.Inputs{Components: []schemas.Component{{Containers: []schemas.Container{
		{Name: "vllm", Locator: "spec.template.spec.containers[0]", Image: "vllm/vllm-openai:v1"},
		{Name: "side", Locator: "spec.template.spec.containers[1]", Image: "busybox:1"},
	}}}}
	for _, id := range []string{"docker-pullable://vllm/vllm-openai@" + h('a'), "docker.io/vllm/vllm-openai@" + h('a')} {
		if d, ok := DigestOf(id); !ok || d != h('a') {
			t.Errorf("DigestOf(%q) = %q, %v", id, d, ok)
		}
	}
	for _, id := range []string{"", h('a'), "repo@sha256:short", "repo@" + strings.ToUpper(h('a'))} {
		if _, ok := DigestOf(id); ok {
			t.Errorf("DigestOf(%q) resolved", id)
		}
	}
	rep := []PodImage{
		{Container: "vllm", Image: "vllm/vllm-openai:v1", ImageID: "docker.io/vllm/vllm-openai@" + h('a')},
		{Container: "vllm", Image: "vllm/vllm-openai:v1", ImageID: "docker.io/vllm/vllm-openai@" + h('a')}, // a second pod
		{Container: "side", Image: "busybox:1", ImageID: ""},                                               // not started yet
		{Container: "istio", Image: "istio/proxy:1", ImageID: "istio/proxy@" + h('c')},                     // injected
	}
	got := Digests(in, rep, nil)
	want := "[{istio/proxy:1 " + h('c') + " } {vllm/vllm-openai:v1 " + h('a') + " spec.template.spec.containers[0]}]"
	if fmt.Sprint(got) != want {
		t.Errorf("Digests = %v\nwant %v", got, want)
	}
	// No pod reports anything: the last published set is kept for images the
	// workload still names.
	retained := append(got, schemas.ImageDigest{Image: "old:1", Digest: h('d')})
	if kept := Digests(in, nil, retained); fmt.Sprint(kept) != "[{vllm/vllm-openai:v1 "+h('a')+" spec.template.spec.containers[0]}]" {
		t.Errorf("retained = %v", kept)
	}
	// A new digest reported for the image replaces the retained one.
	rep2 := []PodImage{{Container: "vllm", Image: "vllm/vllm-openai:v1", ImageID: "x@" + h('b')}}
	if got := Digests(in, rep2, retained); len(got) != 1 || got[0].Digest != h('b') {
		t.Errorf("new digest: %v", got)
	}
}
