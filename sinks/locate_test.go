package sinks_test

import (
	"context"
	"reflect"
	"strings"
	"testing"

	"github.com/bomstream/bomstream/sinks"
	"github.com/bomstream/bomstream/sinks/sinktest"
)

// locator is a sink that is a Locator; checkingLocator is a Checker too,
// checker only a Checker.
type locator struct {
	recorder
	locs []sinks.Location
}

func (l *locator) Locate(sinks.Version) []sinks.Location {
	return append([]sinks.Location(nil), l.locs...)
}

type checkingLocator struct{ locator }

func (c *checkingLocator) Check(context.Context) []sinks.Check { return []sinks.Check{{Name: "probe"}} }

type checker struct{ recorder }

func (c *checker) Check(context.Context) []sinks.Check { return []sinks.Check{{Name: "probe"}} }

// The wrappers pass Locator (and Checker) through exactly when the wrapped
// sink implements it, so that a type assertion on what registry.New
// returns finds what the sink can do.
func TestWrappersPassLocatorThrough(t *testing.T) {
	loc := sinks.Location{Sink: "rec", Type: "file", What: "file", Where: "/boms/x.cdx.json"}
	v := sinks.Version{Workload: sinktest.Workload("w"), BomHash: sinktest.NewBOM(sinktest.Workload("w"), 1).BomHash, Latest: true}
	for _, c := range []struct {
		name              string
		s                 sinks.Sink
		checker, locating bool
	}{
		{"plain", &recorder{}, false, false},
		{"checker", &checker{}, true, false},
		{"locator", &locator{locs: []sinks.Location{loc}}, false, true},
		{"both", &checkingLocator{locator{locs: []sinks.Location{loc}}}, true, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			spec := sinks.WithSpecVersion(c.s, sinks.Spec17)
			if _, ok := spec.(sinks.Checker); ok != c.checker {
				t.Errorf("WithSpecVersion: Checker %v, want %v", ok, c.checker)
			}
			l, ok := spec.(sinks.Locator)
			if ok != c.locating {
				t.Fatalf("WithSpecVersion: Locator %v, want %v", ok, c.locating)
			}
			if ok {
				if got := l.Locate(v); !reflect.DeepEqual(got, []sinks.Location{loc}) {
					t.Errorf("WithSpecVersion: Locate %+v, want %+v", got, loc)
				}
			}
			for name, d := range map[string]sinks.Sink{"DryRun": sinks.DryRun(c.s, nil), "DryRun of WithSpecVersion": sinks.DryRun(spec, nil)} {
				l, ok := d.(sinks.Locator)
				if ok != c.locating {
					t.Fatalf("%s: Locator %v, want %v", name, ok, c.locating)
				}
				if !ok {
					continue
				}
				got := l.Locate(v)
				if len(got) != 1 || got[0].Where != loc.Where || got[0].Sink != "rec" || !strings.Contains(got[0].Note, "rec-dryrun writes nothing") {
					t.Errorf("%s: Locate %+v, want %s with a note that the dry run writes nothing", name, got, loc.Where)
				}
			}
		})
	}
}

func TestVersionHasBOM(t *testing.T) {
	b := sinktest.NewBOM(sinktest.Workload("w"), 1)
	for hash, want := range map[string]bool{b.BomHash: true, "": false, "sha256:xyz": false, strings.TrimPrefix(b.BomHash, "sha256:"): false} {
		if got := (sinks.Version{BomHash: hash}).HasBOM(); got != want {
			t.Errorf("HasBOM(%q) = %v, want %v", hash, got, want)
		}
	}
}
