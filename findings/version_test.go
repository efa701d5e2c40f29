package findings

import (
	"errors"
	"testing"
)

// The version table the transformer parses, against ranges.
func TestFindingVersionMatcher(t *testing.T) {
	cases := []struct {
		version, expr string
		want          bool
		err           error
	}{
		{"0.8.4", "vllm<0.8.5", true, nil},
		{"v0.8.5", "vllm<0.8.5", false, nil},
		{"0.8.5rc1", "vllm<0.8.5", true, nil},
		{"0.8.5.dev3", "vllm<0.8.5rc1", true, nil},
		{"0.8.5.post1", "vllm<=0.8.5", false, nil},
		{"0.8.5.post1", "vllm>0.8.5", true, nil},
		{"v0.4.6.post1-cu124", "vllm>=0.4,<0.5", true, nil},
		// Plain order, no PEP 440 exclusion: a pre-release of 0.5 is below 0.5.
		{"0.5.0rc2-cu126", "vllm>=0.4,<0.5", true, nil},
		{"0.5.0-cu126", "vllm>=0.4,<0.5", false, nil},
		{"0.5.0rc2-cu126", "vllm<0.5.0", true, nil},
		{"1.0.0-rc.1", "vllm<1.0.0", true, nil},
		{"1.0.0-rc.1", "vllm>1.0.0rc0", true, nil},
		{"2.4.0+cu121", "vllm==2.4", true, nil},
		{"24.08-trtllm-python-py3", "vllm<24.10", true, nil},
		{"cpu-1.6", "vllm!=1.6", false, nil},
		{"0.10.1", "vllm<0.9", false, nil}, // numeric, not lexical
		{"0.8.4", "sglang<0.8.5", false, nil},
		{"latest", "vllm<0.8.5", false, ErrUnparsableVersion},
		{"2024.05.01", "vllm<0.8.5", false, ErrUnparsableVersion}, // a date is not a release
		{"2025-05-05-v1", "vllm<0.8.5", false, ErrUnparsableVersion},
		{"", "vllm<0.8.5", false, ErrUnparsableVersion},
		{"0.8.4", "vllm~0.8", false, ErrBadRange},
		{"0.8.4", "vllm<0.8,", false, ErrBadRange},
		{"0.8.4", "<0.8", false, ErrBadRange},
	}
	for _, tc := range cases {
		got, err := DefaultVersionMatcher("vllm", tc.version, tc.expr)
		if got != tc.want || !errors.Is(err, tc.err) || (tc.err == nil) != (err == nil) {
			t.Errorf("vllm %q in %q = %v, %v; want %v, %v", tc.version, tc.expr, got, err, tc.want, tc.err)
		}
	}
}
