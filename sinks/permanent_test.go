package sinks_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/bomstream/bomstream/sinks"
	"github.com/bomstream/bomstream/stream/engine"
)

// One marker for the whole product: an error marked by either package's
// Permanent is permanent to both predicates, wrapped or not, and an
// unmarked one to neither.
func TestPermanentIsOneMarker(t *testing.T) {
	cause := errors.New("bucket not found")
	marks := map[string]func(error) error{"sinks.Permanent": sinks.Permanent, "engine.Permanent": engine.Permanent}
	tests := map[string]func(error) bool{"sinks.IsPermanent": sinks.IsPermanent, "engine.IsPermanent": engine.IsPermanent}
	for mname, mark := range marks {
		if mark(nil) != nil {
			t.Errorf("%s(nil) is not nil", mname)
		}
		for _, err := range []error{mark(cause), fmt.Errorf("export: %w", mark(cause))} {
			if !errors.Is(err, cause) {
				t.Errorf("%s: %v does not wrap its cause", mname, err)
			}
			for tname, is := range tests {
				if !is(err) {
					t.Errorf("%s(%s(err)) is false for %q", tname, mname, err)
				}
			}
		}
	}
	for tname, is := range tests {
		if is(cause) || is(nil) || is(fmt.Errorf("export: %w", cause)) {
			t.Errorf("%s is true for an unmarked error", tname)
		}
	}
}
