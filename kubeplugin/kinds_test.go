package kubeplugin

import (
	"strings"
	"testing"
)

func TestParseRef(t *testing.T) {
	for in, want := range map[string]string{
		"deploy/llama": "Deployment llama", "Deployments/llama": "Deployment llama", "sts/db": "StatefulSet db",
		"lws/ds-r1": "LeaderWorkerSet ds-r1", "isvc/granite": "InferenceService granite", "ksvc/x": "Service x",
		"NIMService/nim": "NIMService nim", "MyKind/a": "MyKind a",
	} {
		k, n, err := parseRef(in)
		if err != nil || k+" "+n != want {
			t.Errorf("parseRef(%q) = %s %s, %v; want %s", in, k, n, err, want)
		}
	}
	for _, bad := range []string{"llama", "deploy/", "/llama", "deploy/a/b"} {
		if _, _, err := parseRef(bad); err == nil || !strings.Contains(err.Error(), bad) {
			t.Errorf("parseRef(%q): %v", bad, err)
		}
	}
}
