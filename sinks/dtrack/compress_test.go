package dtrack_test

import (
	"crypto/sha256"
	"fmt"
	"os"
	"testing"

	"github.com/bomstream/bomstream/schemas"
	"github.com/bomstream/bomstream/sinks"
	"github.com/bomstream/bomstream/sinks/dtrack"
	"github.com/bomstream/bomstream/sinks/dtrack/dtracktest"
)

// bigBOM is an AI-BOM of w of about size bytes: the serving runtime, a
// model, and as many images (each with its own digest, as the workers of
// a large Dynamo graph) as it takes.
func bigBOM(t testing.TB, w schemas.Workload, changeSeq uint64, size int) sinks.BOM {
	t.Helper()
	parts := []part{runtimePart("vllm", "0.8.4"), model("meta-llama/Llama-3.1-70B-Instruct", "0e9e39f")}
	img := func(i int) part {
		d := sha256.Sum256([]byte(fmt.Sprint(i)))
		repo := fmt.Sprintf("registry.example.com/dynamo/worker-%d", i)
		return part{Type: "container", Name: repo, Version: fmt.Sprintf("sha256:%x", d),
			Purl: fmt.Sprintf("pkg:oci/worker-%d@sha256%%3A%x?repository_url=%s", i, d, repo)}
	}
	one := len(aiBOM(t, w, changeSeq, img(0)).Body) - len(aiBOM(t, w, changeSeq).Body)
	for i := 0; len(parts) < size/one; i++ {
		parts = append(parts, img(i))
	}
	return aiBOM(t, w, changeSeq, parts...)
}

// TestLargeBOMGzipOnlyWhereTheServerReadsIt: a 500 KB BOM goes to 5.1 as
// a gzip-compressed multipart part, to 5.0 (and 4.x) plain, with PUT;
// each imports exactly the BOM's bytes. The bytes each upload put on the
// wire (request bodies, as the double read them) are logged:
//
//	go test ./sinks/dtrack/ -run TestLargeBOMGzipOnlyWhereTheServerReadsIt -v
func TestLargeBOMGzipOnlyWhereTheServerReadsIt(t *testing.T) {
	if os.Getenv(lineEnv) != "" {
		return // it names its lines itself; TestSuiteOnEveryLine's runs skip it
	}
	w := workload("dynamo", "graph")
	b := bigBOM(t, w, 7, 500_000)
	if n := len(b.Body); n < 500_000 || n > 520_000 {
		t.Fatalf("the BOM has %d bytes, want about 500 KB", n)
	}
	for _, line := range []string{dtracktest.Line50, dtracktest.Line51, dtracktest.Line413} {
		t.Run(line, func(t *testing.T) {
			dt := newDouble(t, dtracktest.Options{Version: line})
			s := newSink(t, dt, allPerms, nil)
			if err := s.Export(ctx, b); err != nil {
				t.Fatal(err)
			}
			p := mustProject(t, dt, projectName(w))
			if p.BomHash != b.BomHash {
				t.Fatalf("imported bomHash %s, want %s", p.BomHash, b.BomHash)
			}
			assertComponents(t, p, b)
			puts, posts := dt.Calls("PUT /api/v1/bom"), dt.Calls("POST /api/v1/bom")
			put, post := dt.BytesIn("PUT /api/v1/bom"), dt.BytesIn("POST /api/v1/bom")
			t.Logf("Dependency-Track %s: a %d-byte BOM took %d bytes on the wire (PUT %d: %d bytes, POST %d: %d bytes)",
				line, len(b.Body), put+post, puts, put, posts, post)
			if line == dtracktest.Line51 {
				if puts != 0 || posts != 1 || post*4 > int64(len(b.Body)) {
					t.Errorf("5.1: %d PUT, %d POST of %d bytes; want one gzip POST under a quarter of the BOM", puts, posts, post)
				}
				return
			}
			if posts != 0 || puts != 1 || put < int64(len(b.Body))*4/3 {
				t.Errorf("%s: %d PUT of %d bytes, %d POST; want one plain PUT (base64, 4/3 of the BOM)", line, puts, put, posts)
			}
		})
	}
}

// TestCompressAbove: on 5.1 a BOM of exactly compressAbove bytes goes
// plain, one byte more goes compressed; -1 never compresses.
func TestCompressAbove(t *testing.T) {
	if os.Getenv(lineEnv) != "" {
		return // it names its line itself
	}
	dt := newDouble(t, dtracktest.Options{Version: dtracktest.Line51})
	at := bigBOM(t, workload("ml", "at"), 1, 20_000)
	over := bigBOM(t, workload("ml", "over"), 2, 20_000)
	for _, c := range []struct {
		b          sinks.BOM
		above      int64
		compressed bool
	}{
		{at, int64(len(at.Body)), false},
		{over, int64(len(over.Body)) - 1, true},
		{bigBOM(t, workload("ml", "never"), 3, 200_000), -1, false},
		{bigBOM(t, workload("ml", "default"), 4, dtrack.DefaultCompressAbove+1000), 0, true},
	} {
		s := newSink(t, dt, allPerms, func(cfg *dtrack.Config) { cfg.CompressAbove = c.above })
		posts := dt.Calls("POST /api/v1/bom")
		if err := s.Export(ctx, c.b); err != nil {
			t.Fatal(err)
		}
		if got := dt.Calls("POST /api/v1/bom") > posts; got != c.compressed {
			t.Errorf("%d bytes with compressAbove %d: compressed %v, want %v", len(c.b.Body), c.above, got, c.compressed)
		}
		if p := mustProject(t, dt, projectName(c.b.Workload)); p.BomHash != c.b.BomHash {
			t.Errorf("%s: imported %s, want %s", c.b.Workload, p.BomHash, c.b.BomHash)
		}
	}
}
