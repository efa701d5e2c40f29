package kube

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Only the data of a ConfigMap that an object in scope reads is kept: one
// no one reads is dropped as it arrives, one whose last reader goes is
// forgotten, and a GET never replaces the copy the watch delivered.
func TestConfigMapDataKeptOnlyWhileRead(t *testing.T) {
	c := newConfigMaps()
	cm := func(name, model string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ml", Name: name}, Data: map[string]string{"MODEL_ID": model}}
	}
	model := func(key string) string {
		obj, ok := c.get(key)
		if !ok {
			return ""
		}
		return obj["data"].(map[string]any)["MODEL_ID"].(string)
	}
	c.observe(cm("a", "org/one"), true, true)
	if _, ok := c.get("ml/a"); ok {
		t.Fatal("kept the data of a ConfigMap no one reads")
	}
	c.setReads("uid-1", []string{"ml/a"})
	c.setReads("uid-2", []string{"ml/a", "ml/b"})
	if got := c.missing([]string{"ml/a", "ml/b"}); len(got) != 2 {
		t.Errorf("missing = %v", got)
	}
	c.observe(cm("a", "org/one"), false, true)
	if _, ok := c.get("ml/a"); ok {
		t.Error("kept the data of a ConfigMap out of scope")
	}
	c.observe(cm("a", "org/one"), true, true)
	c.observe(cm("a", "org/stale"), true, false)
	if got := model("ml/a"); got != "org/one" {
		t.Errorf("a GET replaced the watch's copy: %q", got)
	}
	c.observe(cm("a", "org/two"), true, true)
	if got := model("ml/a"); got != "org/two" {
		t.Errorf("the watch's update was not kept: %q", got)
	}
	c.setReads("uid-1", nil)
	if got := model("ml/a"); got != "org/two" {
		t.Error("dropped a ConfigMap another object still reads")
	}
	c.setReads("uid-2", []string{"ml/b"})
	if _, ok := c.get("ml/a"); ok {
		t.Error("kept the data of a ConfigMap its last reader stopped reading")
	}
	if r := c.readersOf("ml/b"); len(r) != 1 || r[0] != "uid-2" {
		t.Errorf("readers of ml/b = %v", r)
	}
	c.setReads("uid-2", nil)
	if len(c.readers) != 0 || len(c.reads) != 0 || len(c.data) != 0 {
		t.Errorf("left behind: readers %v reads %v data %v", c.readers, c.reads, c.data)
	}
}
