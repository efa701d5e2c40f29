package files

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/bomstream/bomstream/collector"
	"github.com/bomstream/bomstream/collector/manifest"
	"github.com/bomstream/bomstream/schemas"
)

// Source is the CloudEvents source of events read from manifests.
const Source = "bomstream/manifests"

// Note says why a document produced no event.
type Note struct {
	File   string
	Line   int
	Object string // kind/name as written
	Reason string
}

func (n Note) String() string {
	return fmt.Sprintf("%s:%d: %s: %s", n.File, n.Line, n.Object, n.Reason)
}

// Loaded is everything read from one path.
type Loaded struct {
	Events []schemas.WorkloadChange
	Notes  []Note
	// Err joins the errors of unreadable or invalid documents; the events of
	// the good documents are still in Events.
	Err error
}

// Load reads path (a file or a directory, recursively) and normalizes every
// document. Inputs.Source is "file:" plus the path relative to root, so that
// moving the whole tree does not change any inputHash.
func Load(root, path string, n *collector.Normalizer) Loaded {
	objs, err := manifest.ReadPath(path)
	out := Loaded{}
	var errs []error
	if err != nil {
		errs = append(errs, err)
	}
	mtimes := map[string]time.Time{}
	index := map[string]int{} // uid -> position in out.Events
	where := map[string]manifest.Object{}
	for _, o := range objs {
		at, ok := mtimes[o.File]
		if !ok {
			if fi, err := os.Stat(o.File); err == nil {
				at = fi.ModTime().UTC().Truncate(time.Second)
			}
			mtimes[o.File] = at
		}
		ev, note, err := event(root, o, at, n)
		switch {
		case err != nil:
			errs = append(errs, err)
		case note != nil:
			out.Notes = append(out.Notes, *note)
		default:
			// Two documents naming one workload (namespace/kind/name) would
			// make every pass publish both states in turn. As with
			// `kubectl apply -f DIR`, the later document wins; the earlier
			// becomes a note.
			uid := ev.Data.Workload.UID
			if i, dup := index[uid]; dup {
				prev := where[uid]
				out.Notes = append(out.Notes, Note{File: prev.File, Line: prev.Line, Object: objectName(prev.Obj),
					Reason: fmt.Sprintf("same workload as %s:%d, which wins", o.File, o.Line)})
				out.Events[i] = ev
				where[uid] = o
				continue
			}
			index[uid] = len(out.Events)
			where[uid] = o
			out.Events = append(out.Events, ev)
		}
	}
	out.Err = errors.Join(errs...)
	return out
}

func event(root string, o manifest.Object, at time.Time, n *collector.Normalizer) (schemas.WorkloadChange, *Note, error) {
	rel, err := filepath.Rel(root, o.File)
	if err != nil || rel == "" {
		rel = o.File
	}
	in, err := n.Normalize(o.Obj, "file:"+filepath.ToSlash(rel))
	if errors.Is(err, collector.ErrNotWorkload) || errors.Is(err, collector.ErrUnknownKind) {
		return schemas.WorkloadChange{}, &Note{File: o.File, Line: o.Line, Object: objectName(o.Obj), Reason: err.Error()}, nil
	}
	if err != nil {
		return schemas.WorkloadChange{}, nil, fmt.Errorf("%s:%d: %w", o.File, o.Line, err)
	}
	ev, err := schemas.NewObserved(Source, at, in)
	if err != nil {
		return schemas.WorkloadChange{}, nil, fmt.Errorf("%s:%d: %w", o.File, o.Line, err)
	}
	return ev, nil, nil
}

func objectName(obj map[string]any) string {
	kind, _ := obj["kind"].(string)
	name := ""
	if md, ok := obj["metadata"].(map[string]any); ok {
		name, _ = md["name"].(string)
	}
	return kind + "/" + name
}
