package web_test

import (
	"encoding/json"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestPagesAnswer: what each page answers to good and bad requests, over
// plain HTTP: status codes that say what is wrong, the headers that keep
// pages self-contained, no script anywhere, and the raw CycloneDX of each
// version a timeline links to.
func TestPagesAnswer(t *testing.T) {
	dir := corpus(t)
	base := "http://" + serveWeb(t, dir)
	waitFindings(t, base)
	get := func(path string) (int, string, http.Header) {
		t.Helper()
		return fetch(t, base+path)
	}
	demoPath := "/workloads/default/" + demoNS + "/Deployment/" + demoName
	for _, c := range []struct {
		path, want string
		code       int
	}{
		{"/", "Workloads 1–100 of", 200},
		{"/?page=2&sort=-changed", "Workloads 101–200 of", 200},
		{"/?page=999999", "Page 102 of 102", 200}, // past the last page: the last one
		{"/?sort=colour", "sort &#34;colour&#34;: not a column", 400},
		{"/?page=-1", "page &#34;-1&#34;: not a page number", 400},
		{"/?runtime=vllm%3C%3C1", "runtime", 400},
		{"/?digest=abc", "digest", 400},
		{"/?state=any", "Workloads 1–100 of", 200},
		{demoPath, "Timeline", 200},
		{demoPath + "?version=424242", "no version", 404},
		{demoPath + "?from=1&to=x", "to &#34;x&#34;: not a change sequence", 200},
		{"/workloads/default/nowhere/Deployment/none", "not in the inventory", 404},
		{"/findings?severity=dire", "severity", 400},
		{"/findings?state=resolved", "Findings", 200},
		{"/findings?page=x", "page", 400},
		{"/fleet", "Workloads by runtime and version", 200},
		{"/login", "Sign in", 200},
	} {
		code, body, h := get(c.path)
		if code != c.code || !strings.Contains(body, c.want) {
			t.Errorf("GET %s: %d, want %d and %q in:\n%.600s", c.path, code, c.code, c.want, body)
		}
		if strings.Contains(strings.ToLower(body), "<script") {
			t.Errorf("GET %s carries a script", c.path)
		}
		if csp := h.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'none'") {
			t.Errorf("GET %s: Content-Security-Policy %q", c.path, csp)
		}
	}

	// With open findings only, as find --findings: in the namespace of the
	// demo, the workload with findings and not the clean one.
	_, with, _ := get("/?findings=true&namespace=" + demoNS)
	_, without, _ := get("/?namespace=" + demoNS)
	if !strings.Contains(with, `name="findings" value="true" checked`) || strings.Contains(with, "<td>0</td></tr>") ||
		!strings.Contains(with, demoName) || strings.Contains(with, "clean-demo") {
		t.Errorf("findings=true lists a workload without findings, or forgets the filter:\n%s", with)
	}
	if n, m := totalOf(t, with), totalOf(t, without); n != 1 || m != 2 {
		t.Errorf("findings=true lists %d workloads of %d, want 1 of 2", n, m)
	}

	// The raw BOM of each BOM version of the timeline: the first has the
	// first revision, the last the second.
	var detail struct {
		Versions []struct {
			ChangeSeq uint64 `json:"changeSeq"`
			Tombstone string `json:"tombstone"`
		} `json:"versions"`
	}
	_, body, _ := get("/api/v1" + demoPath)
	if err := json.Unmarshal([]byte(body), &detail); err != nil || len(detail.Versions) != 4 {
		t.Fatalf("detail of %s: %v %s", demoName, err, body)
	}
	_, page, _ := get(demoPath)
	for i, want := range map[int]string{0: revA, 1: revB, 3: revB} {
		link := "/api/v1" + demoPath + "/bom?version=" + strconvU(detail.Versions[i].ChangeSeq)
		if !strings.Contains(page, strings.ReplaceAll(link, "&", "&amp;")) {
			t.Errorf("the timeline does not link %s", link)
		}
		code, bom, h := get(link)
		if code != 200 || !strings.Contains(bom, want) || h.Get("Content-Type") != "application/vnd.cyclonedx+json" {
			t.Errorf("%s: %d %s, want revision %s", link, code, h.Get("Content-Type"), want)
		}
	}
	if code, body, _ := get("/api/v1" + demoPath + "/bom?version=" + strconvU(detail.Versions[2].ChangeSeq)); code != 404 || !strings.Contains(body, "deleted") {
		t.Errorf("the BOM of the deletion: %d %s", code, body)
	}
	// Where the file sink holds the current version, as its ledger says.
	if !strings.Contains(page, "latest file, exported") || !strings.Contains(page, "boms/default/"+demoNS+"/Deployment/"+demoName+"/latest.cdx.json") {
		t.Errorf("the workload page does not say where the file sink holds it")
	}
}

var totalRE = regexp.MustCompile(`Workloads 1–[0-9]+ of ([0-9]+)`)

// totalOf reads the number of workloads an inventory page counts.
func totalOf(t *testing.T, page string) int {
	t.Helper()
	m := totalRE.FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("no count in the page:\n%.400s", page)
	}
	n, _ := strconv.Atoi(m[1])
	return n
}
