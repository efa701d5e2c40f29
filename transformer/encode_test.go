package transformer

import (
	"bytes"
	"path/filepath"
	"reflect"
	"sync"
	"testing"

	cdx "github.com/CycloneDX/cyclonedx-go"

	"github.com/bomstream/bomstream/collector/manifest/manifesttest"
	"github.com/bomstream/bomstream/schemas"
	"github.com/bomstream/bomstream/schemas/validate"
)

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
	out, err := encode(&bom)
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
// reaches a BOM, and checks the BOMs as TestEncodeRoundTrip does.
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
		}
	})
}
