package transformer

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"

	cdx "github.com/CycloneDX/cyclonedx-go"

	"github.com/bomstream/bomstream/collector/manifest/manifesttest"
	"github.com/bomstream/bomstream/schemas"
)

// cdxEncode is what the cyclonedx-go encoder writes for bom: the bytes
// appendBOM must reproduce.
func cdxEncode(t testing.TB, bom *cdx.BOM) ([]byte, error) {
	t.Helper()
	var buf bytes.Buffer
	err := cdx.NewBOMEncoder(&buf, cdx.BOMFileFormatJSON).SetPretty(false).SetEscapeHTML(false).Encode(bom)
	return buf.Bytes(), err
}

// nasty are strings that JSON encoders escape differently: HTML characters
// (escaped below the cdx MarshalJSON methods only), U+2028/U+2029, invalid
// UTF-8, control characters, quotes and backslashes.
var nasty = []string{"<a&b>", "\u2028x\u2029", "\x01\x7f", "bad\xff\xfeutf8", `quote"back\slash`, "é日本", "\b\f\t", "a b", "$(X)", "REDACTED", "1.2.3"}

// nastyInputs puts s into every string of the fixtures that reaches a BOM.
func nastyInputs(s string) []*schemas.Inputs {
	a := dynamoDisagg()
	a.Workload.Name += s
	a.Workload.Namespace += s
	a.Workload.Cluster += s
	a.Workload.UID += s
	a.Source += s
	a.Components[1].Containers[0].Name += s
	a.Components[1].Containers[0].Locator += s
	a.Components[1].Containers[0].Args[1] += s
	a.Components[2].Fields = append(a.Components[2].Fields, schemas.Field{Name: "runtimeVersion", Value: "1.2" + s, Locator: "x" + s})
	b := lwsVLLM()
	b.Components[0].Containers[0].Image = "vllm/vllm-openai:" + s
	b.Components[1].Containers[0].Image = "vllm/vllm-openai" + s
	b.Components[0].Containers[0].Command[2] += " --model m" + s + " --revision r" + s
	c := deploy("d"+s, schemas.Container{Name: "c" + s, Image: "reg.io/x/vllm-openai:v0.1" + s,
		Command: []string{"vllm", "serve", "org/m" + s, "--gpu-memory-utilization", "0.9" + s, "--tensor-parallel-size", s},
		Env:     []schemas.EnvVar{{Name: "HF_HUB_OFFLINE", Value: s}, {Name: "VLLM_USE_V1", Value: "1" + s}, {Name: "MODEL_ID", Value: "x/" + s}}})
	d := deploy("e", schemas.Container{Name: "c", Image: s, Args: []string{"serve", s}})
	e := &schemas.Inputs{Workload: wl("InferenceService", "i"+s), Components: []schemas.Component{{Name: "predictor", Locator: "spec.predictor", Roles: []string{"predictor", s},
		Labels: map[string]string{"role": s},
		Fields: []schemas.Field{{Name: "modelFormat", Value: "huggingface" + s, Locator: "l" + s}, {Name: "runtimeVersion", Value: "23.10-py3" + s, Locator: "v"},
			{Name: "storageUri", Value: "hf://meta/" + s, Locator: "s"}, {Name: "hfModelName", Value: s, Locator: "h"}}}}}
	return []*schemas.Inputs{a, b, c, d, e}
}

// testInputs are the fixtures, the own manifests, the upstream corpus when
// present and the nasty variants.
func testInputs(t *testing.T) []*schemas.Inputs {
	t.Helper()
	ins := []*schemas.Inputs{dynamoDisagg(), lwsVLLM()}
	for _, x := range renderTree(t, filepath.Join("testdata", "manifests")) {
		ins = append(ins, x.inputs)
	}
	if root, ok := manifesttest.Find(); ok {
		for _, x := range renderTree(t, root) {
			ins = append(ins, x.inputs)
		}
	}
	for _, s := range nasty {
		ins = append(ins, nastyInputs(s)...)
	}
	return ins
}

func TestEncodeMatchesCycloneDX(t *testing.T) {
	n := 0
	for _, version := range []string{"test", "<v&1>", "é\u2028", `"q"`} {
		r, err := NewRenderer(Config{Version: version})
		if err != nil {
			t.Fatal(err)
		}
		for _, in := range testInputs(t) {
			ev, err := schemas.NewObserved("bomstream://dev/collector", eventTime, in)
			if err != nil {
				continue
			}
			sc := &scratch{}
			res, _, bom, err := r.prepare(ev, sc)
			if err != nil || bom == nil {
				continue
			}
			fast, ok := appendBOM(nil, bom)
			if !ok {
				t.Fatalf("%s: appendBOM refused a BOM that build made", res.Workload)
			}
			want, err := cdxEncode(t, bom)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(fast, want) {
				t.Fatalf("%s: appendBOM differs from the cdx encoder\n got %s\nwant %s", res.Workload, fast, want)
			}
			got, err := r.Render(ev)
			if err != nil || !bytes.Equal(got.BOM, want) {
				t.Fatalf("%s: Render differs from the cdx encoder (%v)", res.Workload, err)
			}
			n++
		}
	}
	if n < 100 {
		t.Errorf("only %d BOMs compared", n)
	}
}

// TestEncodeFallback: a BOM with fields appendBOM does not write goes to the
// cdx encoder, with its bytes (and its errors).
func TestEncodeFallback(t *testing.T) {
	base := func() *cdx.BOM {
		in := dynamoDisagg()
		ev := event(t, in)
		_, _, bom, err := newRenderer(t).prepare(ev, &scratch{})
		if err != nil || bom == nil {
			t.Fatal(err)
		}
		return bom
	}
	tiny := float32(1e-7)
	line := 3
	for name, change := range map[string]func(*cdx.BOM){
		"bom properties":      func(b *cdx.BOM) { b.Properties = &[]cdx.Property{{Name: "x", Value: "<y>"}} },
		"metadata authors":    func(b *cdx.BOM) { b.Metadata.Authors = &[]cdx.OrganizationalContact{{Name: "a"}} },
		"component desc":      func(b *cdx.BOM) { (*b.Components)[0].Description = "d" },
		"metadata comp scope": func(b *cdx.BOM) { b.Metadata.Component.Scope = cdx.ScopeRequired },
		"tools services":      func(b *cdx.BOM) { b.Metadata.Tools.Services = &[]cdx.Service{{Name: "s"}} },
		"legacy tools":        func(b *cdx.BOM) { b.Metadata.Tools.Tools = &[]cdx.Tool{{Name: "t"}} },
		"single identity":     func(b *cdx.BOM) { (*b.Components)[0].Evidence.Identity.Identity = &cdx.EvidenceIdentity{Field: "name"} },
		"identity tools": func(b *cdx.BOM) {
			(*(*b.Components)[0].Evidence.Identity.Identities)[0].Tools = &[]cdx.BOMReference{"x"}
		},
		"tiny confidence": func(b *cdx.BOM) { (*(*b.Components)[0].Evidence.Identity.Identities)[0].Confidence = &tiny },
		"occurrence line": func(b *cdx.BOM) { (*(*b.Components)[0].Evidence.Occurrences)[0].Line = &line },
		"callstack":       func(b *cdx.BOM) { (*b.Components)[0].Evidence.Callstack = &cdx.Callstack{} },
		"provides":        func(b *cdx.BOM) { (*b.Dependencies)[0].Provides = &[]string{"x"} },
		"old spec":        func(b *cdx.BOM) { b.SpecVersion = cdx.SpecVersion1_1 },
	} {
		bom := base()
		change(bom)
		if _, ok := appendBOM(nil, bom); ok {
			t.Errorf("%s: appendBOM wrote a BOM it does not cover", name)
		}
		want, wantErr := cdxEncode(t, bom)
		got, err := (&scratch{}).encode(bom)
		if (err != nil) != (wantErr != nil) || err == nil && !bytes.Equal(got, want) {
			t.Errorf("%s: encode = %q, %v; want %q, %v", name, got, err, want, wantErr)
		}
	}
	// Empty and nil lists are written as the cdx encoder writes them.
	bom := base()
	empty := []cdx.Property{}
	bom.Metadata.Component.Properties = &empty
	var none []string
	(*bom.Dependencies)[0].Dependencies = &none
	got, ok := appendBOM(nil, bom)
	want, _ := cdxEncode(t, bom)
	if !ok || !bytes.Equal(got, want) {
		t.Errorf("empty lists: %v\n got %s\nwant %s", ok, got, want)
	}
}

// TestPlainJSON checks the byte table against encoding/json, both modes.
func TestPlainJSON(t *testing.T) {
	for c := 0; c < 256; c++ {
		s := "ab" + string([]byte{byte(c)}) + "cd"
		for _, html := range []bool{false, true} {
			var buf bytes.Buffer
			enc := json.NewEncoder(&buf)
			enc.SetEscapeHTML(html)
			if err := enc.Encode(s); err != nil {
				t.Fatal(err)
			}
			plain := buf.String() == `"`+s+`"`+"\n"
			if plainJSON(s, html) != plain {
				t.Errorf("byte %#x html=%v: plainJSON %v, encoding/json copies it: %v", c, html, !plain, plain)
			}
			if got := string(appendStr(nil, s, html)); got != strings.TrimSuffix(buf.String(), "\n") {
				t.Errorf("byte %#x html=%v: appendStr %q, want %q", c, html, got, buf.String())
			}
		}
	}
}

// TestRendererReuse: a Renderer reuses scratch memory from render to render;
// whatever came before, every render equals a fresh Renderer's, sequentially
// and concurrently.
func TestRendererReuse(t *testing.T) {
	ins := testInputs(t)
	var evs []schemas.WorkloadChange
	var want []Result
	for _, in := range ins {
		ev, err := schemas.NewObserved("bomstream://dev/collector", eventTime, in)
		if err != nil {
			continue
		}
		res, err := newRenderer(t).Render(ev)
		if err != nil {
			t.Fatal(err)
		}
		evs = append(evs, ev)
		want = append(want, res)
	}
	r := newRenderer(t)
	check := func(i int) error {
		got, err := r.Render(evs[i])
		if err != nil {
			return err
		}
		if !bytes.Equal(got.BOM, want[i].BOM) || got.BomHash != want[i].BomHash || !reflect.DeepEqual(got.Summary, want[i].Summary) || got.Skipped != want[i].Skipped {
			t.Errorf("render %d (%s) differs after reuse", i, want[i].Workload)
		}
		return nil
	}
	for pass := 0; pass < 2; pass++ {
		for i := range evs {
			if err := check(i); err != nil {
				t.Fatal(err)
			}
		}
		for i := len(evs) - 1; i >= 0; i-- {
			if err := check(i); err != nil {
				t.Fatal(err)
			}
		}
	}
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for k := 0; k < 3*len(evs); k++ {
				if err := check((k*7 + g*13) % len(evs)); err != nil {
					t.Error(err)
					return
				}
			}
		}(g)
	}
	wg.Wait()
}

// FuzzEncode puts a fuzzed string into every field of the fixtures that
// reaches a BOM and compares appendBOM with the cdx encoder.
func FuzzEncode(f *testing.F) {
	for _, s := range nasty {
		f.Add(s)
	}
	r, err := NewRenderer(Config{Version: "fuzz"})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, in := range nastyInputs(s) {
			ev, err := schemas.NewObserved("bomstream://dev/collector", eventTime, in)
			if err != nil {
				continue
			}
			sc := &scratch{}
			_, _, bom, err := r.prepare(ev, sc)
			if err != nil || bom == nil {
				continue
			}
			fast, ok := appendBOM(nil, bom)
			want, err := cdxEncode(t, bom)
			if !ok || err != nil || !bytes.Equal(fast, want) {
				t.Fatalf("%q: appendBOM %v %v\n got %s\nwant %s", s, ok, err, fast, want)
			}
		}
	})
}
