package gcs

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bomstream/bomstream/sinks"
	"github.com/bomstream/bomstream/sinks/gcs/gcstest"
	"github.com/bomstream/bomstream/sinks/sinktest"
)

var _ sinks.Locator = (*Sink)(nil)

// Locate names the objects Export wrote, under the default and a custom
// path template: the version's, and latest.cdx.json for the current
// version only.
func TestLocate(t *testing.T) {
	srv := gcstest.Start(t, "boms")
	for name, extra := range map[string]map[string]any{
		"default": nil,
		"per uid": {"pathTemplate": "{prefix}/by-uid/{uid}/bom-{bomHash}.json"},
	} {
		t.Run(name, func(t *testing.T) {
			s := newSink(t, srv, "locate-"+strings.ReplaceAll(name, " ", "-"), extra)
			w := sinktest.Workload("chat")
			old, cur := sinktest.NewBOM(w, 1), sinktest.NewBOM(w, 2)
			for _, b := range []sinks.BOM{old, cur} {
				if err := s.Export(context.Background(), b); err != nil {
					t.Fatal(err)
				}
			}
			stored := map[string][]byte{}
			for _, o := range srv.Objects(t, "") {
				stored["gs://"+srv.Bucket+"/"+o.Name] = o.Content
			}
			for _, c := range []struct {
				b      sinks.BOM
				latest bool
				what   []string
			}{
				{old, false, []string{"object"}},
				{cur, true, []string{"object", "latest object"}},
			} {
				locs := s.Locate(sinktest.Version(c.b, c.latest))
				if len(locs) != len(c.what) {
					t.Fatalf("change %d: %+v, want %v", c.b.ChangeSeq, locs, c.what)
				}
				for i, l := range locs {
					if l.What != c.what[i] || l.Type != "gcs" || l.Sink != "gcs-test" || l.URL != "" {
						t.Errorf("change %d: %+v, want a %s with no link (the endpoint is not Google's)", c.b.ChangeSeq, l, c.what[i])
					}
					if got, ok := stored[l.Where]; !ok || !bytes.Equal(got, c.b.Body) {
						t.Errorf("change %d: %s %s: stored %v, or with other bytes", c.b.ChangeSeq, l.What, l.Where, ok)
					}
				}
			}
			if locs := s.Locate(sinks.Version{Workload: w, ChangeSeq: 3, Latest: true}); locs != nil {
				t.Errorf("a tombstone: %+v, want none", locs)
			}
		})
	}
}

// With Google's endpoint, each location links to the object's page in the
// Cloud console.
func TestLocateConsoleLink(t *testing.T) {
	s := newSinkRaw(t, map[string]any{"bucket": "ml-boms", "prefix": "prod", "anonymous": true})
	b := sinktest.NewBOM(sinktest.Workload("chat"), 1)
	hex := strings.TrimPrefix(b.BomHash, "sha256:")
	locs := s.Locate(sinktest.Version(b, true))
	want := []struct{ where, url string }{
		{"gs://ml-boms/prod/dev/ml/Deployment/chat/" + hex + ".cdx.json",
			"https://console.cloud.google.com/storage/browser/_details/ml-boms/prod/dev/ml/Deployment/chat/" + hex + ".cdx.json"},
		{"gs://ml-boms/prod/dev/ml/Deployment/chat/latest.cdx.json",
			"https://console.cloud.google.com/storage/browser/_details/ml-boms/prod/dev/ml/Deployment/chat/latest.cdx.json"},
	}
	if len(locs) != len(want) {
		t.Fatalf("locations %+v", locs)
	}
	for i, l := range locs {
		if l.Where != want[i].where || l.URL != want[i].url {
			t.Errorf("got %s %s, want %s %s", l.Where, l.URL, want[i].where, want[i].url)
		}
	}
}

// No location carries the credentials, nor where they are kept.
func TestLocateCarriesNoCredential(t *testing.T) {
	file := filepath.Join(t.TempDir(), "user.json")
	creds := `{"type":"authorized_user","client_id":"id-s3cr3t","client_secret":"s3cr3t-client","refresh_token":"s3cr3t-refresh"}`
	if err := os.WriteFile(file, []byte(creds), 0o600); err != nil {
		t.Fatal(err)
	}
	s := newSinkRaw(t, map[string]any{"bucket": "ml-boms", "credentialsFile": file})
	locs := s.Locate(sinktest.Version(sinktest.NewBOM(sinktest.Workload("chat"), 1), true))
	if len(locs) != 2 {
		t.Fatalf("locations %+v", locs)
	}
	for _, l := range locs {
		if text := fmt.Sprintf("%+v", l); strings.Contains(text, "s3cr3t") || strings.Contains(text, file) {
			t.Errorf("a location carries the credentials or their file: %s", text)
		}
	}
}
