package versions

import (
	"strings"
	"testing"

	"github.com/bomstream/bomstream/schemas/imageref"
)

// The tags of imageref.TestParseVersionTags, as the registries publish
// them: each either gives a version this package orders, or none (then no
// range with a constraint admits it).
var tags = []struct {
	tag     string
	version string // as the transformer renders it; "" = unparsable
}{
	{"v0.8.5", "0.8.5"}, {"v0.10.1.1", "0.10.1.1"}, {"v0.6.3.post1", "0.6.3.post1"},
	{"v0.9.0-arm64", "0.9.0"}, {"v0.11.0-x86_64", "0.11.0"}, {"v0.10.2rc1", "0.10.2rc1"},
	{"nightly-2f9e1b3c", ""}, {"v0.4.6.post1", "0.4.6.post1"}, {"v0.4.6.post1-cu124", "0.4.6.post1"},
	{"v0.4.1.post7-cu124-srt", "0.4.1.post7"}, {"v0.5.2-cu126", "0.5.2"}, {"v0.5.0rc2-cu126", "0.5.0rc2"},
	{"v0.4.9.post2-rocm630-mi30x", "0.4.9.post2"}, {"v0.4.3-cu125-gb200", "0.4.3"}, {"latest", ""}, {"dev", ""},
	{"3.3.4", "3.3.4"}, {"2.4.0-rocm", "2.4.0"}, {"3.0.1-intel-xpu", "3.0.1"}, {"sha-7e72b7d", ""},
	{"latest-intel-cpu", ""}, {"1.6", "1.6"}, {"1.6-cpu", "1.6"}, {"cpu-1.6", "1.6"}, {"turing-1.5", "1.5"},
	{"89-1.5", "1.5"}, {"24.08-py3", "24.08"}, {"24.08-trtllm-python-py3", "24.08"}, {"25.01-py3-igpu", "25.01"},
	{"0.19.0", "0.19.0"}, {"1.0.0rc4", "1.0.0rc4"}, {"1.1.0rc2.post1", "1.1.0rc2.post1"}, {"0.6.5-rocm", "0.6.5"},
	{"v0.9.0-cu12.8", "0.9.0"}, {"latest-cu12", ""}, {"server-cuda", ""}, {"2.40.0-py310-gpu", "2.40.0"},
	{"2.4.0+cu121", "2.4.0"}, {"1.2.3-cpu+20240501", "1.2.3"}, {"1.0.0-rc.1", "1.0.0-rc.1"},
	{"2.0.0-beta2-cuda", "2.0.0-beta2"}, {"0.8.5rc1", "0.8.5rc1"}, {"2025-05-05-v1", ""}, {"2024.05.01", ""},
	{"3", ""}, {"1..2", ""}, {"1.", ""}, {"my-tag", ""}, {"${VERSION}", ""},
}

// Every tag parses exactly when the transformer gives it a version, to
// that version, and the BOM's version string parses the same as the tag.
func TestParseTagTable(t *testing.T) {
	for _, tc := range tags {
		if got := imageref.Version(tc.tag); got != tc.version {
			t.Fatalf("table out of date: imageref.Version(%q) = %q, want %q", tc.tag, got, tc.version)
		}
		v, err := Parse(tc.tag)
		if tc.version == "" {
			if err == nil {
				t.Errorf("Parse(%q) = %v, want an error", tc.tag, v)
			} else if !strings.Contains(err.Error(), tc.tag) {
				t.Errorf("Parse(%q) error %q does not name the version", tc.tag, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("Parse(%q): %v", tc.tag, err)
			continue
		}
		fromBOM, err := Parse(tc.version)
		if err != nil || Compare(v, fromBOM) != 0 || v.String() != tc.version {
			t.Errorf("Parse(%q) = %v, Parse(%q) = %v, %v", tc.tag, v, tc.version, fromBOM, err)
		}
	}
}

// Versions in ascending order, equal ones on one line.
var order = [][]string{
	{"0.4.1.post7"},
	{"0.4.3-cu125-gb200"},
	{"0.4.6"},
	{"0.4.6.post1", "v0.4.6.post1-cu124"},
	{"0.4.6.post2"},
	{"0.4.10"},
	{"0.5.0rc2", "0.5.0-rc.2", "v0.5.0rc2-cu126"},
	{"0.5.0"},
	{"0.5.2-cu126"},
	{"0.8.5.dev3"},
	{"0.8.5a1", "0.8.5-alpha.1"},
	{"0.8.5b2", "0.8.5-beta2"},
	{"0.8.5rc1"},
	{"0.8.5rc1.post1"},
	{"0.8.5rc2"},
	{"0.8.5", "v0.8.5", "0.8.5.0"},
	{"0.8.5.post1"},
	{"0.8.5.1"},
	{"0.10.1.1"},
	{"1.0.0-rc.1"},
	{"1.0.0"},
	{"24.08-py3"},
	{"25.01"},
}

func TestCompareOrder(t *testing.T) {
	for i, row := range order {
		for j, a := range row {
			va := mustParse(t, a)
			for _, b := range row[j:] {
				if c := Compare(va, mustParse(t, b)); c != 0 {
					t.Errorf("Compare(%s, %s) = %d, want 0", a, b, c)
				}
			}
			for _, later := range order[i+1:] {
				for _, b := range later {
					vb := mustParse(t, b)
					if Compare(va, vb) != -1 || Compare(vb, va) != 1 {
						t.Errorf("%s should sort before %s", a, b)
					}
				}
			}
		}
	}
}

func TestRanges(t *testing.T) {
	for _, tc := range []struct {
		rng, name, version string
		want               bool
	}{
		{"vllm<0.8.5", "vllm", "0.8.4", true},
		{"vllm<0.8.5", "vllm", "0.8.5rc1", true},
		{"vllm<0.8.5", "vllm", "0.8.5", false},
		{"vllm<0.8.5", "vllm", "0.8.5.post1", false},
		{"vllm<0.8.5", "vllm", "0.6.3.post1", true},
		{"vllm<0.8.5", "vllm", "0.10.1.1", false},
		{"vllm<0.8.5", "sglang", "0.4.6", false},
		{"VLLM < 0.8.5", "vllm", "0.8.4", true},
		{"sglang>=0.4,<0.5", "sglang", "0.4.6.post1", true},
		{"sglang>=0.4,<0.5", "sglang", "0.4.1.post7", true},
		{"sglang>=0.4,<0.5", "sglang", "0.4.0", true},
		{"sglang>=0.4,<0.5", "sglang", "0.5.0rc2", true}, // a pre-release of 0.5 is before 0.5
		{"sglang>=0.4,<0.5", "sglang", "0.5.0", false},
		{"sglang>=0.4,<0.5", "sglang", "0.3.9", false},
		{"sglang>=0.4, <0.5", "sglang", "v0.4.9.post2-rocm630-mi30x", true},
		{"tgi==3.3.4", "tgi", "3.3.4", true},
		{"tgi=3.3", "tgi", "3.3.0", true},
		{"tgi!=3.3.4", "tgi", "3.3.5", true},
		{"triton>=24.07", "triton", "24.08", true},
		{"tensorrt-llm>1.0.0rc4", "tensorrt-llm", "1.1.0rc2.post1", true},
		{"vllm", "vllm", "", true},
		{"vllm", "vllm", "latest", true},
		// Unparsable versions never match a range with a constraint.
		{"vllm<0.8.5", "vllm", "", false},
		{"vllm<0.8.5", "vllm", "latest", false},
		{"vllm>=0.1", "vllm", "nightly-2f9e1b3c", false},
		{"vllm!=0.8.5", "vllm", "latest", false},
		{"tei<2025.1", "tei", "2024.05.01", false},
		{"tei>0", "tei", "2025-05-05-v1", false},
	} {
		r, err := ParseRange(tc.rng)
		if err != nil {
			t.Errorf("ParseRange(%q): %v", tc.rng, err)
			continue
		}
		if got := r.Contains(tc.name, tc.version); got != tc.want {
			t.Errorf("%q contains %s %q = %v, want %v", tc.rng, tc.name, tc.version, got, tc.want)
		}
	}
}

// The error names the part at fault.
func TestParseRangeErrors(t *testing.T) {
	for _, tc := range []struct{ rng, names string }{
		{"vllm<<0.8", `"<<0.8"`},
		{"vllm<latest", `"latest"`},
		{"vllm<0.8.5,", `constraint ""`},
		{"<0.8.5", `runtime name ""`},
		{"vl lm<1.0", `runtime name "vl lm"`},
		{"vllm~=0.8", `"~=0.8"`},
		{"vllm<0.8.5.foo", `"0.8.5.foo"`},
	} {
		_, err := ParseRange(tc.rng)
		if err == nil || !strings.Contains(err.Error(), tc.names) {
			t.Errorf("ParseRange(%q) error %v, want one naming %s", tc.rng, err, tc.names)
		}
	}
}

func mustParse(t *testing.T, s string) Version {
	t.Helper()
	v, err := Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return v
}
