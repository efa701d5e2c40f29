package schemas

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestWorkloadValidate(t *testing.T) {
	ok := Workload{Cluster: "prod-1", Namespace: "ml", APIVersion: "apps/v1", Kind: "Deployment", Name: "chat.v2", UID: "0f3c-99"}
	if err := ok.Validate(); err != nil {
		t.Fatalf("valid identity: %v", err)
	}
	for _, w := range []Workload{{Namespace: ""}, {APIVersion: "v1", Kind: "Node"}} {
		v := ok
		v.Namespace = w.Namespace
		if w.APIVersion != "" {
			v.APIVersion, v.Kind = w.APIVersion, w.Kind
		}
		if err := v.Validate(); err != nil {
			t.Errorf("%+v: %v", v, err)
		}
	}
	bad := map[string]func(*Workload){
		"cluster with a dot":     func(w *Workload) { w.Cluster = "a.b" },
		"empty cluster":          func(w *Workload) { w.Cluster = "" },
		"uid with a wildcard":    func(w *Workload) { w.UID = "a*" },
		"uid with a dot":         func(w *Workload) { w.UID = "a.b" },
		"namespace upper case":   func(w *Workload) { w.Namespace = "ML" },
		"namespace path":         func(w *Workload) { w.Namespace = "../etc" },
		"kind with a slash":      func(w *Workload) { w.Kind = "Deploy/ment" },
		"empty kind":             func(w *Workload) { w.Kind = "" },
		"apiVersion with space":  func(w *Workload) { w.APIVersion = "apps /v1" },
		"apiVersion three parts": func(w *Workload) { w.APIVersion = "a/b/c" },
		"name with a slash":      func(w *Workload) { w.Name = "a/b" },
		"name dot dot":           func(w *Workload) { w.Name = ".." },
		"name with a newline":    func(w *Workload) { w.Name = "a\nb" },
		"name NUL":               func(w *Workload) { w.Name = "a\x00" },
		"empty name":             func(w *Workload) { w.Name = "" },
		"long name":              func(w *Workload) { w.Name = strings.Repeat("a", 254) },
	}
	for what, mutate := range bad {
		w := ok
		mutate(&w)
		err := w.Validate()
		if !errors.Is(err, ErrInvalidWorkload) {
			t.Errorf("%s: Validate() = %v, want ErrInvalidWorkload", what, err)
		}
	}
}

func TestNewObservedValidatesIdentity(t *testing.T) {
	in := sampleInputs()
	in.Workload.Name = "../../etc"
	if _, err := NewObserved("test", time.Unix(0, 0), in); !errors.Is(err, ErrInvalidWorkload) {
		t.Fatalf("NewObserved with a path as name: %v, want ErrInvalidWorkload", err)
	}
}
