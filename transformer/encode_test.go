package transformer

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	cdx "github.com/CycloneDX/cyclonedx-go"

	"github.com/bomstream/bomstream/collector/manifest/manifesttest"
	"github.com/bomstream/bomstream/schemas"
	"github.com/bomstream/bomstream/schemas/validate"
)

// cdxEncode is what cyclonedx-go's encoder writes for bom: the oracle
// appendBOM must reproduce, byte for byte.
func cdxEncode(t testing.TB, bom *cdx.BOM) ([]byte, error) {
	t.Helper()
	var buf bytes.Buffer
	err := cdx.NewBOMEncoder(&buf, cdx.BOMFileFormatJSON).SetPretty(false).SetEscapeHTML(false).Encode(bom)
	return buf.Bytes(), err
}

// buildBOM is the cdx.BOM Render encodes for ev, built with a state of its
// own (nil when ev is skipped); shrunk lists at most one method and
// occurrence per evidence and only the first model, with notes, as a BOM
// shrunk to its limit does.
func buildBOM(t testing.TB, r *Renderer, ev schemas.WorkloadChange, shrunk bool) *cdx.BOM {
	t.Helper()
	_, bi, d, err := r.prepare(ev)
	if err != nil {
		t.Fatalf("%s: %v", ev.Data.Workload, err)
	}
	if d == nil {
		return nil
	}
	b := (&renderState{}).builder(r, bi, d)
	if shrunk {
		b.evidenceCap, b.notes = 1, []string{"evidence: <cut> & \"noted\""}
		b.listed = map[string]bool{}
		if d.models.len() > 0 {
			b.listed[d.models.entries[0].key] = true
		}
	}
	return b.build()
}

// checkFastEncode encodes bom with appendBOM and with cyclonedx-go's
// encoder, and fails unless appendBOM takes it and writes the same bytes.
// It returns those bytes.
func checkFastEncode(t testing.TB, name string, bom *cdx.BOM) []byte {
	t.Helper()
	want, err := cdxEncode(t, bom)
	if err != nil {
		t.Fatalf("%s: cyclonedx-go: %v", name, err)
	}
	fast, ok := appendBOM(nil, bom)
	if !ok {
		t.Fatalf("%s: appendBOM refused a BOM that build made", name)
	}
	if !bytes.Equal(fast, want) {
		t.Fatalf("%s: appendBOM differs from cyclonedx-go's encoder\n got %s\nwant %s", name, fast, want)
	}
	return want
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

// TestEncodeGoldens: the BOM of every golden (the own manifests), and of
// the upstream corpus when it is here, encodes to the same bytes with
// appendBOM and with cyclonedx-go's encoder, and Render wrote those bytes;
// so do the BOMs shrunk to a limit.
func TestEncodeGoldens(t *testing.T) {
	trees := map[string]string{"manifests": filepath.Join("testdata", "manifests")}
	if root, ok := manifesttest.Find(); ok {
		trees["upstream"] = root
	}
	r := newRenderer(t)
	for prefix, root := range trees {
		n := 0
		for _, x := range renderTree(t, root) {
			if x.res.BOM == nil {
				continue
			}
			name := x.rel + " " + x.inputs.Workload.String()
			ev := event(t, x.inputs)
			if want := checkFastEncode(t, name, buildBOM(t, r, ev, false)); !bytes.Equal(x.res.BOM, want) {
				t.Fatalf("%s: Render wrote other bytes than cyclonedx-go's encoder", name)
			}
			checkFastEncode(t, name+" shrunk", buildBOM(t, r, ev, true))
			n++
		}
		if prefix != "manifests" {
			continue // no goldens: the upstream corpus is not committed
		}
		goldens := 0
		err := filepath.WalkDir(filepath.Join("testdata", "golden", prefix), func(p string, de os.DirEntry, err error) error {
			if err == nil && !de.IsDir() && strings.HasSuffix(p, ".cdx.json") {
				goldens++
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		if n != goldens {
			t.Errorf("%s: %d BOMs compared, %d goldens", prefix, n, goldens)
		}
	}
}

// TestEncodeMatchesCycloneDX: every BOM of the test inputs, with strings
// that JSON encoders escape differently (in the tool version too), full
// and shrunk, encodes to the same bytes both ways, and Render writes them.
func TestEncodeMatchesCycloneDX(t *testing.T) {
	n := 0
	for _, version := range []string{"test", "<v&1>", "é\u2028", `"q"\`} {
		r, err := NewRenderer(Config{Version: version})
		if err != nil {
			t.Fatal(err)
		}
		for _, in := range testInputs(t) {
			ev, err := schemas.NewObserved("bomstream://dev/collector", eventTime, in)
			if err != nil {
				continue
			}
			bom := buildBOM(t, r, ev, false)
			if bom == nil {
				continue
			}
			name := in.Workload.String()
			want := checkFastEncode(t, name, bom)
			checkFastEncode(t, name+" shrunk", buildBOM(t, r, ev, true))
			if got, err := r.Render(ev); err != nil || !bytes.Equal(got.BOM, want) {
				t.Fatalf("%s: Render differs from cyclonedx-go's encoder (%v)", name, err)
			}
			n++
		}
	}
	if n < 400 {
		t.Errorf("only %d BOMs compared", n)
	}
}

// TestEncodeFallback: a BOM holding what appendBOM does not write goes to
// cyclonedx-go's encoder, with its bytes (and its errors).
func TestEncodeFallback(t *testing.T) {
	r := newRenderer(t)
	base := func() *cdx.BOM { return buildBOM(t, r, event(t, dynamoDisagg()), false) }
	tiny, huge, nan := float32(1e-7), float32(1e22), float32(0)
	nan /= nan
	line := 3
	for name, change := range map[string]func(*cdx.BOM){
		"bom properties":      func(b *cdx.BOM) { b.Properties = &[]cdx.Property{{Name: "x", Value: "<y>"}} },
		"metadata authors":    func(b *cdx.BOM) { b.Metadata.Authors = &[]cdx.OrganizationalContact{{Name: "a"}} },
		"component desc":      func(b *cdx.BOM) { (*b.Components)[0].Description = "d" },
		"metadata comp scope": func(b *cdx.BOM) { b.Metadata.Component.Scope = cdx.ScopeRequired },
		"tools services": func(b *cdx.BOM) {
			b.Metadata.Tools = &cdx.ToolsChoice{Components: b.Metadata.Tools.Components, Services: &[]cdx.Service{{Name: "s"}}}
		},
		"legacy tools":    func(b *cdx.BOM) { b.Metadata.Tools = &cdx.ToolsChoice{Tools: &[]cdx.Tool{{Name: "t"}}} },
		"single identity": func(b *cdx.BOM) { (*b.Components)[0].Evidence.Identity.Identity = &cdx.EvidenceIdentity{Field: "name"} },
		"identity tools": func(b *cdx.BOM) {
			(*(*b.Components)[0].Evidence.Identity.Identities)[0].Tools = &[]cdx.BOMReference{"x"}
		},
		"tiny confidence": func(b *cdx.BOM) { (*(*b.Components)[0].Evidence.Identity.Identities)[0].Confidence = &tiny },
		"huge confidence": func(b *cdx.BOM) { (*(*b.Components)[0].Evidence.Identity.Identities)[0].Confidence = &huge },
		"NaN confidence":  func(b *cdx.BOM) { (*(*b.Components)[0].Evidence.Identity.Identities)[0].Confidence = &nan },
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
		got, err := encode(make([]byte, 0, 64), bom)
		if (err != nil) != (wantErr != nil) || err == nil && !bytes.Equal(got, want) {
			t.Errorf("%s: encode = %q, %v; want %q, %v", name, got, err, want, wantErr)
		}
	}
	// Empty and nil lists, and confidences in plain notation, are written
	// as cyclonedx-go writes them.
	bom := base()
	empty := []cdx.Property{}
	bom.Metadata.Component.Properties = &empty
	var none []string
	(*bom.Dependencies)[0].Dependencies = &none
	odd := float32(0.123456)
	(*(*bom.Components)[0].Evidence.Identity.Identities)[0].Confidence = &odd
	checkFastEncode(t, "empty lists", bom)
}

// TestPlainJSON checks plainJSON against encoding/json, both modes, with
// every byte at every place of strings long enough for its eight-byte
// steps and its tail.
func TestPlainJSON(t *testing.T) {
	const filler = "abcdefghijklmnopqrs"
	for c := range 256 {
		for n := 1; n <= len(filler); n++ {
			for at := 0; at < n; at++ {
				b := []byte(filler[:n])
				b[at] = byte(c)
				checkPlainJSON(t, string(b))
			}
		}
	}
}

// checkPlainJSON: plainJSON says what encoding/json does with s, and
// appendStr writes what it writes.
func checkPlainJSON(t *testing.T, s string) {
	t.Helper()
	for _, html := range []bool{false, true} {
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(html)
		if err := enc.Encode(s); err != nil {
			t.Fatal(err)
		}
		plain := buf.String() == `"`+s+`"`+"\n"
		if plainJSON(s, html) != plain {
			t.Errorf("%q html=%v: plainJSON %v, encoding/json copies it: %v", s, html, !plain, plain)
		}
		if got := string(appendStr(nil, s, html)); got != strings.TrimSuffix(buf.String(), "\n") {
			t.Errorf("%q html=%v: appendStr %q, want %q", s, html, got, buf.String())
		}
	}
}

// TestEncodeRoundTrip: every BOM of the test inputs (with strings that
// JSON encoders escape differently, in the tool version too) is valid and
// survives a round trip through cyclonedx-go.
func TestEncodeRoundTrip(t *testing.T) {
	r, err := NewRenderer(Config{Version: "<v&1>é\u2028"})
	if err != nil {
		t.Fatal(err)
	}
	v := bomValidator(t)
	n := 0
	for _, in := range testInputs(t) {
		n += checkRoundTrip(t, r, v, in)
	}
	if n < 100 {
		t.Errorf("only %d BOMs checked", n)
	}
}

// checkRoundTrip renders in and checks that the BOM validates and that
// decoding it with cyclonedx-go and encoding it again gives the same bytes
// as encoding that decoded BOM once more. It returns 1 when there was a BOM.
func checkRoundTrip(t testing.TB, r *Renderer, v *validate.Validator, in *schemas.Inputs) int {
	t.Helper()
	ev, err := schemas.NewObserved("bomstream://dev/collector", eventTime, in)
	if err != nil {
		return 0
	}
	res, err := r.Render(ev)
	if err != nil {
		t.Fatalf("%s: %v", in.Workload, err)
	}
	if res.BOM == nil {
		return 0
	}
	if err := v.ValidateBOM(res.BOM); err != nil {
		t.Fatalf("%s: %v\n%s", in.Workload, err, res.BOM)
	}
	once := decodeEncode(t, res.BOM)
	if twice := decodeEncode(t, once); !bytes.Equal(once, twice) {
		t.Fatalf("%s: the BOM does not survive a round trip\n got %s\nwant %s", in.Workload, twice, once)
	}
	return 1
}

// decodeEncode decodes a BOM with cyclonedx-go and encodes it as Render does.
func decodeEncode(t testing.TB, b []byte) []byte {
	t.Helper()
	var bom cdx.BOM
	if err := cdx.NewBOMDecoder(bytes.NewReader(b), cdx.BOMFileFormatJSON).Decode(&bom); err != nil {
		t.Fatalf("decode: %v\n%s", err, b)
	}
	out, err := encode(nil, &bom)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestRendererReuse: whatever a Renderer rendered before, every render
// equals a fresh Renderer's, sequentially and concurrently.
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
	for range 2 {
		for i := range evs {
			if err := check(i); err != nil {
				t.Fatal(err)
			}
		}
		for i := range slices.Backward(evs) {
			if err := check(i); err != nil {
				t.Fatal(err)
			}
		}
	}
	var wg sync.WaitGroup
	for g := range 4 {
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
// reaches a BOM (and into the tool's version), checks the BOMs as
// TestEncodeRoundTrip does, and that appendBOM writes them, full and
// shrunk, as cyclonedx-go's encoder does.
func FuzzEncode(f *testing.F) {
	for _, s := range nasty {
		f.Add(s)
	}
	r, err := NewRenderer(Config{Version: "fuzz"})
	if err != nil {
		f.Fatal(err)
	}
	v := bomValidator(f)
	f.Fuzz(func(t *testing.T, s string) {
		for _, in := range nastyInputs(s) {
			checkRoundTrip(t, r, v, in)
			ev, err := schemas.NewObserved("bomstream://dev/collector", eventTime, in)
			if err != nil {
				continue
			}
			for _, shrunk := range []bool{false, true} {
				if bom := buildBOM(t, r, ev, shrunk); bom != nil {
					bom.Metadata.Tools = toolsAt(s)
					checkFastEncode(t, in.Workload.String(), bom)
				}
			}
		}
	})
}

// toolsAt is the metadata.tools of a Renderer at version.
func toolsAt(version string) *cdx.ToolsChoice {
	return &cdx.ToolsChoice{Components: &[]cdx.Component{{Type: cdx.ComponentTypeApplication, Name: toolName, Version: version, BOMRef: "tool:" + toolName}}}
}
