package files

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
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

// String is "file:line: kind/name: reason", without the line when it is 0
// and without the object when there is none (a skipped file).
func (n Note) String() string {
	s := n.File
	if n.Line > 0 {
		s += ":" + strconv.Itoa(n.Line)
	}
	if n.Object != "" {
		s += ": " + n.Object
	}
	return s + ": " + n.Reason
}

// Loaded is everything read from one path.
type Loaded struct {
	Events []schemas.WorkloadChange
	Notes  []Note
	// Skipped are the files, or the rests of files, that were not read: what
	// is not a regular file (a named pipe, a device), a file over the size
	// limit, the documents past the document limit. Object is empty.
	Skipped []Note
	// Err joins the errors of unreadable or invalid documents; the events of
	// the good documents are still in Events.
	Err error
	// unread holds the Inputs.Source of every file that may hold workloads
	// that were not read (too large, too many documents): Sync does not take
	// their workloads for deleted.
	unread map[string]bool
}

// Load reads path with the default manifest.Limits: see LoadWith.
func Load(root, path string, n *collector.Normalizer) Loaded {
	return LoadWith(root, path, n, manifest.Limits{})
}

// LoadWith reads path (a file or a directory, recursively) within lim and
// normalizes every document. Inputs.Source is "file:" plus the path relative
// to root, so that moving the whole tree does not change any inputHash. The
// documents read are also what the workloads' links see (a NIMService's
// NIMCache, a mounted ConfigMap), wherever under path they are.
func LoadWith(root, path string, n *collector.Normalizer, lim manifest.Limits) Loaded {
	objs, skips, err := manifest.Read(path, lim)
	out := Loaded{}
	var errs []error
	if err != nil {
		errs = append(errs, err)
	}
	for _, s := range skips {
		out.Skipped = append(out.Skipped, Note{File: s.File, Line: s.Line, Reason: s.Reason})
		if s.Unread {
			if out.unread == nil {
				out.unread = map[string]bool{}
			}
			out.unread[source(root, s.File)] = true
		}
	}
	docs := newDocuments(objs, n.DefaultNamespace())
	index := map[string]int{} // uid -> position in out.Events
	where := map[string]manifest.Object{}
	for i, r := range normalizeAll(root, objs, n, docs) {
		o := objs[i]
		switch {
		case r.err != nil:
			errs = append(errs, r.err)
		case r.note != nil:
			out.Notes = append(out.Notes, *r.note)
		default:
			// Two documents naming one workload (namespace/kind/name) would
			// make every pass publish both states in turn. As with
			// `kubectl apply -f DIR`, the later document wins; the earlier
			// becomes a note.
			uid := r.ev.Data.Workload.UID
			if i, dup := index[uid]; dup {
				prev := where[uid]
				out.Notes = append(out.Notes, Note{File: prev.File, Line: prev.Line, Object: objectName(prev.Obj),
					Reason: fmt.Sprintf("same workload as %s:%d, which wins", o.File, o.Line)})
				out.Events[i] = r.ev
				where[uid] = o
				continue
			}
			index[uid] = len(out.Events)
			where[uid] = o
			out.Events = append(out.Events, r.ev)
		}
	}
	out.Err = errors.Join(errs...)
	return out
}

// normalized is what event made of one object.
type normalized struct {
	ev   schemas.WorkloadChange
	note *Note
	err  error
}

// normalizeAll makes the event of every object on every core (the
// normalizer and docs are only read), each stamped with its file's
// modification time, and returns them in the order of objs.
func normalizeAll(root string, objs []manifest.Object, n *collector.Normalizer, docs documents) []normalized {
	mtimes := map[string]time.Time{}
	for _, o := range objs {
		if _, ok := mtimes[o.File]; !ok {
			var at time.Time
			if fi, err := os.Stat(o.File); err == nil {
				at = fi.ModTime().UTC().Truncate(time.Second)
			}
			mtimes[o.File] = at
		}
	}
	out := make([]normalized, len(objs))
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), len(objs)) {
		wg.Go(func() {
			for i := int(next.Add(1) - 1); i < len(objs); i = int(next.Add(1) - 1) {
				o := objs[i]
				ev, note, err := event(root, o, mtimes[o.File], n, docs)
				out[i] = normalized{ev, note, err}
			}
		})
	}
	wg.Wait()
	return out
}

// source is the Inputs.Source of the objects of file: "file:" and its path
// relative to root.
func source(root, file string) string {
	rel, err := filepath.Rel(root, file)
	if err != nil || rel == "" {
		rel = file
	}
	return "file:" + filepath.ToSlash(rel)
}

func event(root string, o manifest.Object, at time.Time, n *collector.Normalizer, docs collector.Lookup) (schemas.WorkloadChange, *Note, error) {
	in, err := n.NormalizeWith(o.Obj, source(root, o.File), docs)
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

// documents is a collector.Lookup over the documents of one load. The later
// of two documents naming the same object wins, as with kubectl apply.
type documents struct {
	byKey map[string]map[string]any
	// byKind: group, kind, namespace -> name -> object, for List.
	byKind map[string]map[string]map[string]any
}

func newDocuments(objs []manifest.Object, defaultNamespace string) documents {
	d := documents{byKey: map[string]map[string]any{}, byKind: map[string]map[string]map[string]any{}}
	put := func(apiVersion, kind, ns, name string, obj map[string]any) {
		d.byKey[docKey(apiVersion, kind, ns, name)] = obj
		k := docKey(apiVersion, kind, ns, "")
		if d.byKind[k] == nil {
			d.byKind[k] = map[string]map[string]any{}
		}
		d.byKind[k][name] = obj
	}
	for _, o := range objs {
		apiVersion, _ := o.Obj["apiVersion"].(string)
		kind, _ := o.Obj["kind"].(string)
		md, _ := o.Obj["metadata"].(map[string]any)
		name, _ := md["name"].(string)
		ns, _ := md["namespace"].(string)
		if kind == "" || name == "" {
			continue
		}
		if ns == "" {
			// As written it may be cluster-scoped, found without a
			// namespace, or namespaced, found in the default one.
			put(apiVersion, kind, "", name, o.Obj)
			ns = defaultNamespace
		}
		put(apiVersion, kind, ns, name, o.Obj)
	}
	return d
}

func docKey(apiVersion, kind, namespace, name string) string {
	group, _, ok := strings.Cut(apiVersion, "/")
	if !ok {
		group = ""
	}
	return group + "\x00" + kind + "\x00" + namespace + "\x00" + name
}

// Get implements collector.Lookup; Secrets are never returned.
func (d documents) Get(apiVersion, kind, namespace, name string) (map[string]any, bool) {
	if kind == "Secret" {
		return nil, false
	}
	o, ok := d.byKey[docKey(apiVersion, kind, namespace, name)]
	return o, ok
}

// List implements collector.Lookup; Secrets are never returned.
func (d documents) List(apiVersion, kind, namespace string) []map[string]any {
	if kind == "Secret" {
		return nil
	}
	objs := d.byKind[docKey(apiVersion, kind, namespace, "")]
	names := make([]string, 0, len(objs))
	for n := range objs {
		names = append(names, n)
	}
	sort.Strings(names)
	out := make([]map[string]any, 0, len(names))
	for _, n := range names {
		out = append(out, objs[n])
	}
	return out
}
