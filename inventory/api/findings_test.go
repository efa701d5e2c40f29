package api_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/bomstream/bomstream/inventory"
	"github.com/bomstream/bomstream/inventory/api"
	"github.com/bomstream/bomstream/schemas"
)

// notLoaded is a findings source that has not read FINDINGS yet.
type notLoaded struct{}

func (notLoaded) Loaded() bool                 { return false }
func (notLoaded) OpenCount(string, string) int { return 0 }
func (notLoaded) Open(context.Context, []schemas.Workload) ([][]schemas.FindingEvent, error) {
	return nil, nil
}

// findings=true is refused with what is wrong: a value that is not a
// boolean, a server that keeps no findings, findings not read yet (503,
// to ask again); findings=false is no filter.
func TestFindingsFilterRefusals(t *testing.T) {
	plain, err := api.New(api.Config{}, inventory.New(), nil)
	if err != nil {
		t.Fatal(err)
	}
	loading, err := api.New(api.Config{}, inventory.New(), nil)
	if err != nil {
		t.Fatal(err)
	}
	loading.FilterFindings(notLoaded{})
	for _, c := range []struct {
		s     *api.Server
		query string
		code  int
		says  string
	}{
		{loading, "findings=yes", http.StatusBadRequest, `findings "yes": not true or false`},
		{loading, "findings=true&findings=false", http.StatusBadRequest, "give it once"},
		{plain, "findings=true", http.StatusBadRequest, "this server keeps no policy findings"},
		{loading, "findings=true", http.StatusServiceUnavailable, "FINDINGS is still being read"},
		{loading, "findings=false", http.StatusOK, `"items":[]`},
		{loading, "findngs=true", http.StatusBadRequest, "unknown field \"findngs\" (known: at, changed-since, cluster, digest, findings, image"},
	} {
		code, body := get(t, "http://127.0.0.1:"+serve(t, c.s)+"/api/v1/workloads?"+c.query, nil)
		body = strings.ReplaceAll(body, `\"`, `"`)
		if code != c.code || !strings.Contains(body, c.says) {
			t.Errorf("?%s: %d %s; want %d saying %q", c.query, code, body, c.code, c.says)
		}
	}
}

// ParseQuery reads what the server reads: the inventory's fields and
// findings, with the field at fault named.
func TestParseQueryWithFindings(t *testing.T) {
	q, on, err := api.ParseQuery(map[string][]string{"runtime": {"vllm<0.9"}, "findings": {"true"}}, time.Now(), nil)
	if err != nil || !on || len(q.Runtimes) != 1 {
		t.Errorf("runtime and findings: %+v %v %v", q, on, err)
	}
	if _, on, err := api.ParseQuery(map[string][]string{"findings": {"false"}}, time.Now(), nil); err != nil || on {
		t.Errorf("findings=false: %v %v", on, err)
	}
	_, _, err = api.ParseQuery(map[string][]string{"runtime": {"vllm<<1"}, "findings": {"maybe"}}, time.Now(), nil)
	if err == nil || !strings.Contains(err.Error(), `runtime "vllm<<1"`) || !strings.Contains(err.Error(), `findings "maybe": not true or false`) {
		t.Errorf("two bad fields: %v", err)
	}
}
