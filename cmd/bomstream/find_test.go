package main

import (
	"context"
	"encoding/json"
	"io"
	"maps"
	"net/http"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/bomstream/bomstream/inventory"
	"github.com/bomstream/bomstream/inventory/api"
	stored "github.com/bomstream/bomstream/inventory/findings"
	"github.com/bomstream/bomstream/schemas"
)

// findCases are queries as find flags and as API parameters, with the
// workloads of testdata/inventory each selects.
var findCases = []struct {
	flags  []string
	params url.Values
	want   []string
}{
	{nil, nil, []string{"new-vllm", "old-vllm", "sgl", "latest-vllm", "tgi"}},
	{[]string{"--runtime", "vllm<0.8.5"}, url.Values{"runtime": {"vllm<0.8.5"}}, []string{"old-vllm"}},
	{[]string{"--runtime", "vllm"}, url.Values{"runtime": {"vllm"}}, []string{"new-vllm", "old-vllm", "latest-vllm"}},
	{[]string{"--runtime", "sglang>=0.4,<0.5", "--runtime", "vllm>=0.9"}, url.Values{"runtime": {"sglang>=0.4,<0.5", "vllm>=0.9"}}, []string{"new-vllm", "sgl"}},
	{[]string{"--model", "meta-llama/*", "--unpinned"}, url.Values{"model": {"meta-llama/*"}, "unpinned": {"true"}}, []string{"old-vllm"}},
	{[]string{"--inferred-only"}, url.Values{"inferred-only": {"true"}}, []string{"tgi"}},
	{[]string{"-n", "team", "--image", "vllm/vllm-openai"}, url.Values{"namespace": {"team"}, "image": {"vllm/vllm-openai"}}, []string{"latest-vllm"}},
	{[]string{"--cluster", "default", "--kind", "Deployment", "--changed-since", "1h"}, url.Values{"cluster": {"default"}, "kind": {"Deployment"}, "changed-since": {"1h"}}, []string{"new-vllm", "old-vllm", "sgl", "latest-vllm", "tgi"}},
	{[]string{"--cluster", "other"}, url.Values{"cluster": {"other"}}, nil},
	{[]string{"--at", "2001-01-01"}, url.Values{"at": {"2001-01-01"}}, nil},
}

func entryNames(t *testing.T, js string) ([]string, []inventory.Entry) {
	t.Helper()
	var es []inventory.Entry
	if err := json.Unmarshal([]byte(js), &es); err != nil {
		t.Fatalf("find -o json: %v\n%s", err, js)
	}
	var names []string
	for _, e := range es {
		names = append(names, e.Name)
	}
	return names, es
}

// find over the local data directory, on its own and through the running
// owner, and the API of that owner, all give the same answers.
func TestFindAndAPI(t *testing.T) {
	dir := t.TempDir()
	data, boms := filepath.Join(dir, "data"), filepath.Join(dir, "boms")
	m := filepath.Join(dir, "m")
	copyManifests(t, "testdata/inventory", m)
	c := newCLI(t)
	c.mustRun("run", "--manifests", m, "--once", "--data-dir", data, "--sink-dir", boms)
	alone := map[int]string{}
	for i, tc := range findCases {
		r := c.mustRun(append([]string{"find", "--data-dir", data, "-o", "json"}, tc.flags...)...)
		if got, _ := entryNames(t, r.stdout); !slices.Equal(got, tc.want) {
			t.Errorf("find %v = %v, want %v", tc.flags, got, tc.want)
		}
		alone[i] = r.stdout
	}
	table := c.mustRun("find", "--data-dir", data, "--runtime", "vllm<0.8.5").stdout
	mustContain(t, "table", table, "old-vllm", "vllm@0.8.4 (declared)", "meta-llama/Llama-3.1-70B-Instruct", "1 workloads")
	csv := c.mustRun("find", "--data-dir", data, "-o", "csv", "--inferred-only").stdout
	mustContain(t, "csv", csv, "cluster,namespace,kind,name,uid,state,runtimes", "default,team,Deployment,tgi,")

	// The owner runs and serves the API; find works through it.
	addr, stop := startServing(t, "run", "--manifests", m, "--data-dir", data, "--sink-dir", boms, "--api-listen", "127.0.0.1:0")
	defer stop()
	for i, tc := range findCases {
		r := c.mustRun(append([]string{"find", "--data-dir", data, "-o", "json"}, tc.flags...)...)
		_, viaOwner := entryNames(t, r.stdout)
		_, before := entryNames(t, alone[i])
		if !sameEntries(viaOwner, before) {
			t.Errorf("find %v through the owner differs:\n%s\nalone:\n%s", tc.flags, r.stdout, alone[i])
		}
		var items []inventory.Entry
		next := ""
		for range 10 {
			p := url.Values{"limit": {"2"}}
			maps.Copy(p, tc.params)
			if next != "" {
				p.Set("continue", next)
			}
			var pg api.Page
			getJSON(t, "http://"+addr+"/api/v1/workloads?"+p.Encode(), "", http.StatusOK, &pg)
			items = append(items, pg.Items...)
			if next = pg.Continue; next == "" {
				break
			}
		}
		if !sameEntries(items, before) {
			t.Errorf("API %v differs from find %v:\n%+v\n%+v", tc.params, tc.flags, items, before)
		}
	}
	var bad map[string]string
	getJSON(t, "http://"+addr+"/api/v1/workloads?runtime=vllm%3C%3C1&colour=red", "", http.StatusBadRequest, &bad)
	mustContain(t, "bad query", bad["error"], `unknown field "colour"`, `runtime "vllm<<1"`)
	var d api.Detail
	getJSON(t, "http://"+addr+"/api/v1/workloads/default/ml/Deployment/old-vllm", "", http.StatusOK, &d)
	if d.Workload.Name != "old-vllm" || len(d.Versions) != 1 || d.Versions[0].Runtimes[0].Version != "0.8.4" {
		t.Errorf("detail %+v", d)
	}
	var bom struct{ BOMFormat string }
	getJSON(t, "http://"+addr+"/api/v1/workloads/default/ml/Deployment/old-vllm/bom", "", http.StatusOK, &bom)
	if bom.BOMFormat != "CycloneDX" {
		t.Errorf("bom %+v", bom)
	}
	getJSON(t, "http://"+addr+"/api/v1/workloads/default/ml/Deployment/nope", "", http.StatusNotFound, &bad)

	// /api/v1/findings answers what `findings list` answers, page by page.
	listed := c.mustRun("findings", "list", "--data-dir", data, "--state", "all", "-o", "json").stdout
	var want, got []schemas.FindingEvent
	if err := json.Unmarshal([]byte(listed), &want); err != nil || len(want) == 0 {
		t.Fatalf("findings list: %v\n%s", err, listed)
	}
	for page, n := "", 0; n < 100; n++ {
		var fp stored.Page
		getJSON(t, "http://"+addr+"/api/v1/findings?state=all&limit=3&page="+page, "", http.StatusOK, &fp)
		got = append(got, fp.Items...)
		if page = fp.Next; page == "" {
			break
		}
	}
	if a, b := mustJSON(t, got), mustJSON(t, want); a != b {
		t.Errorf("/api/v1/findings differs from findings list:\n%s\n%s", a, b)
	}
	getJSON(t, "http://"+addr+"/api/v1/findings?colour=red", "", http.StatusBadRequest, &bad)
	mustContain(t, "bad findings query", bad["error"], `query parameter "colour" is unknown`)
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// Bad queries name the part at fault.
func TestFindBadQueries(t *testing.T) {
	c := newCLI(t)
	data := t.TempDir()
	for _, tc := range []struct {
		args  []string
		names []string
	}{
		{[]string{"--runtime", "vllm<<0.8"}, []string{"runtime", `"vllm<<0.8"`, `constraint "<<0.8"`}},
		{[]string{"--runtime", "vllm>=0.4,<banana"}, []string{"runtime", `"banana"`}},
		{[]string{"--at", "yesterday"}, []string{"at", `"yesterday"`}},
		{[]string{"--changed-since", "2026-02-30"}, []string{"changed-since", `"2026-02-30"`}},
		{[]string{"--digest", "xyz"}, []string{"digest", `"xyz"`}},
		{[]string{"--colour", "red"}, []string{"unknown flag: --colour"}},
		{[]string{"-o", "yaml"}, []string{"--output", `"yaml"`}},
	} {
		r := c.run(append([]string{"find", "--data-dir", data}, tc.args...)...)
		if r.err == nil {
			t.Errorf("find %v: no error", tc.args)
			continue
		}
		mustContain(t, strings.Join(tc.args, " "), r.err.Error(), tc.names...)
	}
}

// Beyond loopback the API needs a token, and refuses a request without it.
func TestAPITokenBeyondLoopback(t *testing.T) {
	c := newCLI(t)
	data := filepath.Join(t.TempDir(), "data")
	r := c.run("sink", "--data-dir", data, "--api-listen", "0.0.0.0:0")
	if r.err == nil {
		t.Fatal("an unguarded API beyond loopback was served")
	}
	mustContain(t, "unguarded", r.err.Error(), "api.listen", "0.0.0.0:0", "not a loopback address")
	tokenFile := filepath.Join(t.TempDir(), "token")
	writeFile(t, tokenFile, "s3cret-token\n")
	addr, stop := startServing(t, "sink", "--data-dir", data, "--api-listen", "0.0.0.0:0", "--api-token-file", tokenFile)
	defer stop()
	u := "http://" + strings.Replace(addr, "0.0.0.0", "127.0.0.1", 1) + "/api/v1/workloads"
	var body map[string]any
	getJSON(t, u, "", http.StatusUnauthorized, &body)
	getJSON(t, u, "wrong", http.StatusUnauthorized, &body)
	getJSON(t, u, "s3cret-token", http.StatusOK, &body)
	if strings.Contains(strings.Join(stop(), ""), "s3cret") {
		t.Error("the token reached the output")
	}
}

// startServing runs a command that serves the API until stop, which
// returns what it printed.
func startServing(t *testing.T, args ...string) (addr string, stop func() []string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	ch := make(chan string, 1)
	var out, errb syncBuffer
	c := newCLI(t)
	e := c.env(&out, &errb)
	e.apiAddr = ch
	done := make(chan error, 1)
	go func() { done <- run(ctx, args, e) }()
	select {
	case addr = <-ch:
	case err := <-done:
		cancel()
		t.Fatalf("%v: %v\n%s", args, err, tail(errb.String(), 3000))
	}
	stopped := false
	return addr, func() []string {
		if !stopped {
			stopped = true
			cancel()
			if err := <-done; err != nil && ctx.Err() == nil {
				t.Errorf("%v: %v", args, err)
			}
		}
		return []string{out.String(), errb.String()}
	}
}

func getJSON(t *testing.T, u, token string, code int, v any) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, u, nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != code {
		t.Fatalf("GET %s: %d, want %d: %s", u, resp.StatusCode, code, b)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("GET %s: %v: %s", u, err, b)
	}
}

// sameEntries compares what two answers say (JSON round trips).
func sameEntries(a, b []inventory.Entry) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	if len(a) == 0 && len(b) == 0 {
		return true
	}
	return string(ja) == string(jb)
}
