package web_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
)

// planted is what every stand-in credential of the planted-credentials
// corpus (cmd/bomstream/testdata/secrets-corpus) holds.
var planted = regexp.MustCompile(`plantedSecret[0-9]{2}`)

// TestNoSecretInAnyPage reads every page and API answer about the
// corpus's workloads (all but the generated ones, which hold no
// credential): the inventory's pages, each workload's page with every
// version and the diff of each change, its API detail and BOM of each
// version, the findings and the fleet. None may carry a planted
// credential.
func TestNoSecretInAnyPage(t *testing.T) {
	dir := corpus(t)
	base := "http://" + serveWeb(t, dir)
	waitFindings(t, base)
	read := func(path string) string {
		t.Helper()
		code, b, _ := fetch(t, base+path)
		if code != http.StatusOK {
			t.Fatalf("GET %s: %d %s", path, code, b)
		}
		if m := planted.FindString(b); m != "" {
			t.Errorf("GET %s shows the planted credential %s", path, m)
		}
		return b
	}
	pages := 0
	for _, p := range []string{"/fleet", "/findings?state=all", "/api/v1/findings?state=all&limit=1000", "/api/v1/status",
		"/?state=all", "/?state=all&namespace=secrets"} {
		read(p)
		pages++
	}
	var list struct {
		Items []struct{ Cluster, Namespace, Kind, Name string }
	}
	if err := json.Unmarshal([]byte(read("/api/v1/workloads?state=all&limit=5000&namespace=secrets")), &list); err != nil {
		t.Fatal(err)
	}
	secrets := len(list.Items)
	all := read("/api/v1/workloads?state=all&limit=5000&" + url.Values{"namespace": corpusNamespaces(t, base)}.Encode())
	if err := json.Unmarshal([]byte(all), &list); err != nil {
		t.Fatal(err)
	}
	if secrets < 10 || len(list.Items) < 100 {
		t.Fatalf("the corpus gave %d workloads, %d of the planted corpus: too few to tell", len(list.Items), secrets)
	}
	for _, w := range list.Items {
		ns := w.Namespace
		if ns == "" {
			ns = "-"
		}
		path := "/workloads/" + url.PathEscape(w.Cluster) + "/" + url.PathEscape(ns) + "/" + url.PathEscape(w.Kind) + "/" + url.PathEscape(w.Name)
		var detail struct {
			Versions []struct {
				ChangeSeq uint64 `json:"changeSeq"`
				Tombstone string `json:"tombstone"`
			} `json:"versions"`
		}
		if err := json.Unmarshal([]byte(read("/api/v1"+path)), &detail); err != nil {
			t.Fatal(err)
		}
		page := read(path)
		pages += 2
		for _, v := range detail.Versions {
			seq := strconvU(v.ChangeSeq)
			read(path + "?version=" + seq)
			pages++
			if v.Tombstone == "" {
				read("/api/v1" + path + "/bom?version=" + seq)
				pages++
			}
		}
		for _, m := range diffLinks.FindAllStringSubmatch(page, -1) {
			read(path + "?" + strings.ReplaceAll(m[1], "&amp;", "&"))
			pages++
		}
	}
	t.Logf("%d pages and answers read, about %d workloads (%d of the planted corpus): no planted credential", pages, len(list.Items), secrets)
}

var diffLinks = regexp.MustCompile(`href="[^"?]*\?(from=[0-9]+&amp;to=[0-9]+)#diff"`)

// corpusNamespaces are the namespaces of every workload but the generated
// ones (team-NN).
func corpusNamespaces(t *testing.T, base string) []string {
	t.Helper()
	seen := map[string]bool{}
	var out []string
	var cont string
	for {
		var page struct {
			Items    []struct{ Namespace string }
			Continue string
		}
		r, err := http.Get(base + "/api/v1/workloads?state=all&limit=5000" + cont)
		if err != nil {
			t.Fatal(err)
		}
		err = json.NewDecoder(r.Body).Decode(&page)
		r.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range page.Items {
			if !strings.HasPrefix(it.Namespace, "team-") && !seen[it.Namespace] {
				seen[it.Namespace] = true
				out = append(out, it.Namespace)
			}
		}
		if page.Continue == "" {
			return out
		}
		cont = "&continue=" + page.Continue
	}
}

func strconvU(n uint64) string {
	b, _ := json.Marshal(n)
	return string(b)
}
