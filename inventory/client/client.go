package client

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/bomstream/bomstream/inventory"
	"github.com/bomstream/bomstream/inventory/api"
	"github.com/bomstream/bomstream/schemas"
)

// Client asks one inventory API. It is safe for concurrent use.
type Client struct {
	// Base is the API's root, to which /api/v1/... is appended:
	// http://host:port or https://host:port, or the API server's service
	// proxy URL (.../api/v1/namespaces/NS/services/http:SVC:PORT/proxy,
	// https:SVC:PORT for an API that serves TLS).
	Base string
	// HTTP sends the requests: for an API reached directly, a client that
	// trusts its CA (https); through the service proxy, the kubeconfig's.
	HTTP *http.Client
	// Token, when set, is sent as X-Bomstream-Token.
	Token string
	// Via names the way to the API in errors, e.g. "service
	// bomstream/bomstream-api through the API server's proxy".
	Via string
}

// TokenHeader carries the API's token (inventory/api accepts it as well
// as Authorization: Bearer).
const TokenHeader = "X-Bomstream-Token"

// Find lists the workloads the query fields select (the names of
// inventory.Fields, as `bomstream find` flags, and api.FindingsField),
// reading every page. Open findings (findings=true) come back in each
// entry's notes as []schemas.FindingEvent, as `bomstream find --findings`
// holds them.
func (c *Client) Find(ctx context.Context, fields map[string][]string) ([]inventory.Entry, error) {
	var out []inventory.Entry
	next := ""
	for {
		q := url.Values{"limit": {strconv.Itoa(api.MaxLimit)}}
		maps.Copy(q, fields)
		if next != "" {
			q.Set("continue", next)
		}
		var page wirePage
		if err := c.getJSON(ctx, "/api/v1/workloads", q, &page); err != nil {
			return nil, err
		}
		for i := range page.Items {
			e, err := page.Items[i].entry()
			if err != nil {
				return nil, fmt.Errorf("GET /api/v1/workloads via %s: read answer: %s: %w", c.Via, e.Key(), err)
			}
			out = append(out, e)
		}
		if next = page.Continue; next == "" {
			return out, nil
		}
	}
}

// wirePage is api.Page as read: each entry's notes kept raw, to be read
// into their types (the open findings as schemas.FindingEvent, as
// `bomstream find --findings` holds them), not as generic maps.
type wirePage struct {
	Items    []wireEntry `json:"items"`
	Continue string      `json:"continue,omitempty"`
}

type wireEntry struct {
	inventory.Entry
	Notes map[string]json.RawMessage `json:"notes,omitempty"`
}

// entry is the item with its notes read: findings as FindingEvents, any
// other note as JSON values.
func (it *wireEntry) entry() (inventory.Entry, error) {
	e := it.Entry
	if len(it.Notes) == 0 {
		return e, nil
	}
	e.Notes = make(map[string]any, len(it.Notes))
	for k, raw := range it.Notes {
		var err error
		if k == api.NoteFindings {
			var fs []schemas.FindingEvent
			err = json.Unmarshal(raw, &fs)
			e.Notes[k] = fs
		} else {
			var v any
			err = json.Unmarshal(raw, &v)
			e.Notes[k] = v
		}
		if err != nil {
			return e, fmt.Errorf("note %s: %w", k, err)
		}
	}
	return e, nil
}

// Workload is one workload with every version, as of at ("" is now).
func (c *Client) Workload(ctx context.Context, cluster, namespace, kind, name, at string) (api.Detail, error) {
	var d api.Detail
	err := c.getJSON(ctx, workloadPath(cluster, namespace, kind, name), atQuery(at), &d)
	return d, err
}

// BOM is the CycloneDX BOM in effect at at ("" is now), as stored.
func (c *Client) BOM(ctx context.Context, cluster, namespace, kind, name, at string) ([]byte, error) {
	return c.get(ctx, workloadPath(cluster, namespace, kind, name)+"/bom", atQuery(at))
}

func workloadPath(cluster, namespace, kind, name string) string {
	if namespace == "" {
		namespace = "-"
	}
	return "/api/v1/workloads/" + url.PathEscape(cluster) + "/" + url.PathEscape(namespace) + "/" + url.PathEscape(kind) + "/" + url.PathEscape(name)
}

func atQuery(at string) url.Values {
	if at == "" {
		return nil
	}
	return url.Values{"at": {at}}
}

func (c *Client) getJSON(ctx context.Context, path string, q url.Values, v any) error {
	b, err := c.get(ctx, path, q)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("GET %s via %s: read answer: %w", path, c.Via, err)
	}
	return nil
}

// get sends one GET and returns the body of a 200; any other answer is an
// error with what the API (or the service proxy) said.
func (c *Client) get(ctx context.Context, path string, q url.Values) ([]byte, error) {
	u := strings.TrimSuffix(c.Base, "/") + path
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, fmt.Errorf("GET %s via %s: %w", path, c.Via, err)
	}
	if c.Token != "" {
		req.Header.Set(TokenHeader, c.Token)
	}
	hc := c.HTTP
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("GET %s via %s: %w", path, c.Via, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("GET %s via %s: read answer: %w", path, c.Via, err)
	}
	if resp.StatusCode == http.StatusOK {
		return b, nil
	}
	err = fmt.Errorf("%s: %s", resp.Status, said(b))
	if resp.StatusCode == http.StatusUnauthorized && c.Token == "" {
		err = fmt.Errorf("%w (the API wants its token: give --token-file)", err)
	}
	return nil, fmt.Errorf("GET %s via %s: %w", path, c.Via, err)
}

// said is the message of an error answer: the API's {"error": ...}, a
// Kubernetes Status's message (from the service proxy), or the start of
// the body.
func said(b []byte) string {
	var e struct {
		Error   string `json:"error"`
		Kind    string `json:"kind"`
		Message string `json:"message"`
	}
	if json.Unmarshal(b, &e) == nil {
		switch {
		case e.Error != "":
			return e.Error
		case e.Kind == "Status" && e.Message != "":
			return e.Message
		}
	}
	s := strings.TrimSpace(string(b))
	if len(s) > 300 {
		s = s[:300] + "..."
	}
	if s == "" {
		return "no message"
	}
	return s
}
