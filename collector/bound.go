package collector

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"slices"
	"unicode/utf8"

	"github.com/bomstream/bomstream/schemas"
)

// Bounds caps what the Inputs of one workload hold, so that every event fits
// a stream message (the embedded server's limit is 1 MiB) and so does the BOM
// rendered from it. What is cut is marked (schemas.FieldTruncated) with the
// sha256 of the whole. The zero value takes the defaults.
type Bounds struct {
	// Value is the most bytes kept of one string: an argument, a command
	// word, an env value, a kind field, a label, a name, an image, a
	// locator; counted as JSON encodes them (an escaped character counts
	// for its escape). Default 8 KiB.
	Value int
	// Items is the most items kept of one list: a container's command,
	// args, env, envFrom (and the variables of each), mounts, ports,
	// probes, accelerators and files; a component's containers, roles and
	// fields; a workload's components, fields, owned objects and digests.
	// Default 256.
	Items int
	// Container is the most bytes (of their JSON encoding) kept of one
	// container's command, args, env, envFrom, mounts, ports, probes,
	// accelerators and files together (a file's text is a string like any
	// other, cut to Value). Default 32 KiB.
	Container int
	// Workload is about the most bytes the Inputs of one workload take in
	// JSON, marks included: once it is spent, the rest of the workload's
	// fields, components, containers, owned objects and digests are dropped,
	// and marked. The last element kept may pass it by its own size (at most
	// three strings and a container's lists). Default 256 KiB.
	Workload int
}

// Default bounds.
const (
	DefaultValueBytes     = 8 << 10
	DefaultItems          = 256
	DefaultContainerBytes = 32 << 10
	DefaultWorkloadBytes  = 256 << 10
)

// Smallest bounds: below them a mark would not fit.
const (
	minValueBytes     = 64
	minContainerBytes = 1 << 10
	minWorkloadBytes  = 16 << 10
)

func (b Bounds) withDefaults() Bounds {
	if b.Value == 0 {
		b.Value = DefaultValueBytes
	}
	if b.Items == 0 {
		b.Items = DefaultItems
	}
	if b.Container == 0 {
		b.Container = DefaultContainerBytes
	}
	if b.Workload == 0 {
		b.Workload = DefaultWorkloadBytes
	}
	return b
}

// Validate reports every bound set below its minimum.
func (b Bounds) Validate() error {
	var errs []error
	check := func(name string, v, least int) {
		if v != 0 && v < least {
			errs = append(errs, fmt.Errorf("Bounds.%s: %d is less than %d", name, v, least))
		}
	}
	check("Value", b.Value, minValueBytes)
	check("Items", b.Items, 1)
	check("Container", b.Container, minContainerBytes)
	check("Workload", b.Workload, minWorkloadBytes)
	return errors.Join(errs...)
}

// maxIdentity is the longest name, namespace, apiVersion or uid of a
// workload: Kubernetes allows 253 bytes for a name. An identity is never cut.
const maxIdentity = 253

// checkIdentity refuses a workload whose identity no API server would take:
// the identity names the workload everywhere, so it cannot be cut.
func checkIdentity(id string, w schemas.Workload) error {
	for _, f := range []struct{ name, v string }{
		{"metadata.name", w.Name}, {"metadata.namespace", w.Namespace},
		{"apiVersion", w.APIVersion}, {"metadata.uid", w.UID},
	} {
		if len(f.v) > maxIdentity {
			if len(id) > 3*maxIdentity {
				id = prefix(id, 3*maxIdentity) + "..."
			}
			return fmt.Errorf("%s: %s is %d bytes, more than %d", id, f.name, len(f.v), maxIdentity)
		}
	}
	return nil
}

// JSON overheads, rounded up: the keys and punctuation of one element.
const (
	costString    = 1   // the comma
	costField     = 40  // {"name":,"value":,"locator":}
	costEnv       = 80  // {"name":,"value":,"redacted":true,"from":{"kind":,"name":,"key":}}
	costEnvSource = 40  // {"kind":,"name":,"prefix":}
	costContainer = 120 // {"name":,"locator":,"init":true,"image":,"command":[],"args":[],"env":[],"envFrom":[]}
	costComponent = 90  // {"name":,"locator":,"roles":[],"containers":[],"fields":[],"labels":{}}
	costLabel     = 4
	costOwned     = 60
	costDigest    = 50
	costVolume    = 50  // {"name":,"locator":,"image":,"claim":}
	costMount     = 40  // {"volume":,"path":,"subPath":}
	costPort      = 30  // {"name":,"port":65535}
	costProbe     = 40  // {"kind":"readiness","path":,"port":}
	costFile      = 50  // {"path":,"locator":,"kind":"script","text":}
	costMark      = 200 // a FieldTruncated field, its locator aside
	costInputs    = 400 // the workload, its keys and the source
)

// maxMarkLocator bounds the locator of a mark, which describes a cut.
const maxMarkLocator = 1 << 10

// cutter applies Bounds to one workload's Inputs, in their order: identity,
// workload fields, components (name, roles, labels, fields, containers),
// owned objects, digests. left is what remains of the workload's budget;
// each mark is paid from it too.
type cutter struct {
	b    Bounds
	left int
}

// bound cuts in to b, in place. It is deterministic: the same Inputs always
// keep the same parts and get the same marks.
func (b Bounds) bound(in *schemas.Inputs) {
	if c := newCutter(b, in); !c.fits(in) {
		c.apply(in)
	}
}

// newCutter is a cutter for in, the cost of its identity paid.
func newCutter(b Bounds, in *schemas.Inputs) *cutter {
	c := &cutter{b: b.withDefaults()}
	w := in.Workload
	c.left = c.b.Workload - costInputs - jsonLen(w.Cluster) - jsonLen(w.Namespace) - jsonLen(w.APIVersion) -
		jsonLen(w.Kind) - jsonLen(w.Name) - jsonLen(w.UID) - jsonLen(in.Source)
	return c
}

// apply is bound past the check that nothing needs cutting.
func (c *cutter) apply(in *schemas.Inputs) {
	var marks []schemas.Field
	in.Fields = c.fields(in.Fields, "", &marks)
	in.Components = keep(c, in.Components, "components", "", &marks, c.component)
	in.Owned = keep(c, in.Owned, "owned objects", "", &marks, func(o *schemas.ObjectRef) {
		o.APIVersion, o.Kind = c.str(o.APIVersion, "owned.apiVersion", &marks), c.str(o.Kind, "owned.kind", &marks)
		o.Name, o.UID = c.str(o.Name, "owned.name", &marks), c.str(o.UID, "owned.uid", &marks)
		c.left -= ownedCost(o)
	})
	in.Digests = keep(c, in.Digests, "digests", "", &marks, func(d *schemas.ImageDigest) {
		d.Image, d.Digest = c.str(d.Image, "digests.image", &marks), c.str(d.Digest, "digests.digest", &marks)
		d.Locator = c.str(d.Locator, "digests.locator", &marks)
		c.left -= digestCost(d)
	})
	if len(marks) > 0 {
		in.Fields = sortFields(append(in.Fields, marks...))
	}
}

// component cuts one component; its marks join its fields.
func (c *cutter) component(comp *schemas.Component) {
	var marks []schemas.Field
	comp.Locator = c.str(comp.Locator, comp.Locator, &marks)
	comp.Name = c.str(comp.Name, comp.Locator+".name", &marks)
	c.left -= componentCost(comp)
	comp.Roles = keep(c, comp.Roles, "roles", comp.Locator, &marks, func(r *string) {
		*r = c.str(*r, comp.Locator+".roles", &marks)
		c.left -= wordCost(*r)
	})
	if len(comp.Labels) > 0 {
		keys := slices.Sorted(maps.Keys(comp.Labels))
		labels := make(map[string]string, len(keys))
		for _, k := range keys {
			v := c.str(comp.Labels[k], comp.Locator+".labels["+k+"]", &marks)
			labels[k] = v
			c.left -= labelCost(k, v)
		}
		comp.Labels = labels
	}
	comp.Fields = c.fields(comp.Fields, comp.Locator, &marks)
	comp.Volumes = keep(c, comp.Volumes, "volumes", comp.Locator, &marks, func(v *schemas.Volume) {
		v.Locator = c.str(v.Locator, v.Locator, &marks)
		v.Name, v.Image = c.str(v.Name, v.Locator+".name", &marks), c.str(v.Image, v.Locator+".image", &marks)
		v.Claim = c.str(v.Claim, v.Locator+".claim", &marks)
		c.left -= volumeCost(v)
	})
	comp.Containers = keep(c, comp.Containers, "containers", comp.Locator, &marks, func(ct *schemas.Container) {
		c.container(ct, &marks)
	})
	if len(marks) > 0 {
		comp.Fields = sortFields(append(comp.Fields, marks...))
	}
}

// container cuts one container: its locator, name and image as strings,
// then command, args, env and envFrom, in that order, within one budget.
func (c *cutter) container(ct *schemas.Container, marks *[]schemas.Field) {
	ct.Locator = c.str(ct.Locator, ct.Locator, marks)
	ct.Name = c.str(ct.Name, ct.Locator+".name", marks)
	ct.Image = c.str(ct.Image, ct.Locator+".image", marks)
	c.left -= containerCost(ct)
	budget := min(c.b.Container, max(c.left, 0))
	start := budget
	word := func(s *string) (int, bool) {
		var cut bool
		*s, cut = c.cut(*s)
		return wordCost(*s), cut
	}
	ct.Command = list(c, ct.Command, ct.Locator+".command", &budget, marks, word)
	ct.Args = list(c, ct.Args, ct.Locator+".args", &budget, marks, word)
	ct.Env = list(c, ct.Env, ct.Locator+".env", &budget, marks, c.envVar)
	ct.EnvFrom = list(c, ct.EnvFrom, ct.Locator+".envFrom", &budget, marks, func(e *schemas.EnvSource) (int, bool) {
		var c1, c2 bool
		e.Name, c1 = c.cut(e.Name)
		e.Prefix, c2 = c.cut(e.Prefix)
		cut := c1 || c2
		if len(e.Env) > c.b.Items {
			e.Env, cut = e.Env[:c.b.Items:c.b.Items], true
		}
		e.Env = slices.Clone(e.Env)
		for i := range e.Env {
			_, shortened := c.envVar(&e.Env[i])
			cut = cut || shortened
		}
		return envSourceCost(e), cut
	})
	ct.Mounts = list(c, ct.Mounts, ct.Locator+".volumeMounts", &budget, marks, func(m *schemas.Mount) (int, bool) {
		var c1, c2, c3 bool
		m.Volume, c1 = c.cut(m.Volume)
		m.Path, c2 = c.cut(m.Path)
		m.SubPath, c3 = c.cut(m.SubPath)
		return mountCost(m), c1 || c2 || c3
	})
	c.servingFacts(ct, &budget, marks)
	c.left -= start - budget
}

// servingFacts cuts a container's ports, probes, accelerators and files,
// in that order, within what is left of its budget.
func (c *cutter) servingFacts(ct *schemas.Container, budget *int, marks *[]schemas.Field) {
	ct.Ports = list(c, ct.Ports, ct.Locator+".ports", budget, marks, func(p *schemas.Port) (int, bool) {
		var cut bool
		p.Name, cut = c.cut(p.Name)
		return portCost(p), cut
	})
	ct.Probes = list(c, ct.Probes, ct.Locator+".probes", budget, marks, func(p *schemas.Probe) (int, bool) {
		var c1, c2 bool
		p.Path, c1 = c.cut(p.Path)
		p.Port, c2 = c.cut(p.Port)
		return probeCost(p), c1 || c2
	})
	ct.Accelerators = list(c, ct.Accelerators, ct.Locator+".accelerators", budget, marks, func(s *string) (int, bool) {
		var cut bool
		*s, cut = c.cut(*s)
		return wordCost(*s), cut
	})
	ct.Files = list(c, ct.Files, ct.Locator+".files", budget, marks, func(f *schemas.File) (int, bool) {
		var c1, c2, c3 bool
		f.Path, c1 = c.cut(f.Path)
		f.Locator, c2 = c.cut(f.Locator)
		f.Text, c3 = c.cut(f.Text)
		return fileCost(f), c1 || c2 || c3
	})
}

// envVar cuts one env var's strings; it returns its cost and whether it
// cut.
func (c *cutter) envVar(e *schemas.EnvVar) (int, bool) {
	var c1, c2 bool
	e.Name, c1 = c.cut(e.Name)
	e.Value, c2 = c.cut(e.Value)
	if e.From != nil {
		f := *e.From
		var c3, c4 bool
		f.Name, c3 = c.cut(f.Name)
		f.Key, c4 = c.cut(f.Key)
		e.From = &f
		c1 = c1 || c3 || c4
	}
	return envCost(e), c1 || c2
}

// fields keeps the fields of a workload (loc "") or of the component at
// loc while Items and the workload's budget allow, each string cut to Value.
func (c *cutter) fields(fs []schemas.Field, loc string, marks *[]schemas.Field) []schemas.Field {
	return keep(c, fs, "fields", loc, marks, func(f *schemas.Field) {
		f.Locator = c.str(f.Locator, f.Locator, marks)
		f.Name = c.str(f.Name, f.Locator, marks)
		f.Value = c.str(f.Value, f.Locator, marks)
		c.left -= fieldCost(f)
	})
}

// keep keeps the items of xs, each cut in place by each (which pays its
// cost from c.left), while Items and the workload's budget allow. The rest
// is dropped with one mark at loc.
func keep[T any](c *cutter, xs []T, noun, loc string, marks *[]schemas.Field, each func(*T)) []T {
	if len(xs) == 0 {
		return xs
	}
	out := make([]T, 0, min(len(xs), c.b.Items))
	for i := range xs {
		if i >= c.b.Items || c.left <= 0 {
			markList(c, marks, loc, noun, xs, out)
			break
		}
		x := xs[i]
		each(&x)
		out = append(out, x)
	}
	return out
}

// list keeps the items of one of a container's lists, each cut to Value by
// each (which returns its cost and whether it cut), while Items and the
// container's budget allow. A list cut anywhere gets one mark at loc.
func list[T any](c *cutter, xs []T, loc string, budget *int, marks *[]schemas.Field, each func(*T) (int, bool)) []T {
	if len(xs) == 0 {
		return xs
	}
	out := make([]T, 0, min(len(xs), c.b.Items))
	cut := false
	for i := range xs {
		if i >= c.b.Items {
			cut = true
			break
		}
		x := xs[i]
		n, shortened := each(&x)
		if n > *budget {
			cut = true
			break
		}
		*budget -= n
		cut = cut || shortened
		out = append(out, x)
	}
	if cut {
		markList(c, marks, loc, "items", xs, out)
	}
	return out
}

// cut is s cut to Value bytes of JSON, at a character boundary, and
// whether it was.
func (c *cutter) cut(s string) (string, bool) {
	if c.short(s) {
		return s, false
	}
	return prefixJSON(s, c.b.Value+2), true
}

// short says whether s is within Value, as cut decides.
func (c *cutter) short(s string) bool { return len(s) <= c.b.Value/6 || jsonLen(s) <= c.b.Value+2 }

// The costs of the elements of Inputs in JSON, overheads included.

func wordCost(s string) int { return costString + jsonLen(s) }

func labelCost(k, v string) int { return costLabel + jsonLen(k) + jsonLen(v) }

func fieldCost(f *schemas.Field) int {
	return costField + jsonLen(f.Name) + jsonLen(f.Value) + jsonLen(f.Locator)
}

func componentCost(comp *schemas.Component) int {
	return costComponent + jsonLen(comp.Name) + jsonLen(comp.Locator)
}

func containerCost(ct *schemas.Container) int {
	return costContainer + jsonLen(ct.Locator) + jsonLen(ct.Name) + jsonLen(ct.Image)
}

func envCost(e *schemas.EnvVar) int {
	n := costEnv + jsonLen(e.Name) + jsonLen(e.Value)
	if e.From != nil {
		n += jsonLen(e.From.Kind) + jsonLen(e.From.Name) + jsonLen(e.From.Key)
	}
	return n
}

func envSourceCost(e *schemas.EnvSource) int {
	n := costEnvSource + jsonLen(e.Kind) + jsonLen(e.Name) + jsonLen(e.Prefix)
	for i := range e.Env {
		n += envCost(&e.Env[i])
	}
	return n
}

func portCost(p *schemas.Port) int { return costPort + jsonLen(p.Name) }

func probeCost(p *schemas.Probe) int { return costProbe + jsonLen(p.Path) + jsonLen(p.Port) }

func fileCost(f *schemas.File) int {
	return costFile + jsonLen(f.Path) + jsonLen(f.Locator) + jsonLen(f.Text)
}

func volumeCost(v *schemas.Volume) int {
	return costVolume + jsonLen(v.Name) + jsonLen(v.Locator) + jsonLen(v.Image) + jsonLen(v.Claim)
}

func mountCost(m *schemas.Mount) int {
	return costMount + jsonLen(m.Volume) + jsonLen(m.Path) + jsonLen(m.SubPath)
}

func ownedCost(o *schemas.ObjectRef) int {
	return costOwned + jsonLen(o.APIVersion) + jsonLen(o.Kind) + jsonLen(o.Name) + jsonLen(o.UID)
}

func digestCost(d *schemas.ImageDigest) int {
	return costDigest + jsonLen(d.Image) + jsonLen(d.Digest) + jsonLen(d.Locator)
}

// str is s cut to Value bytes, with a mark at loc when it was.
func (c *cutter) str(s, loc string, marks *[]schemas.Field) string {
	kept, cut := c.cut(s)
	if cut {
		sum := sha256.Sum256([]byte(s))
		c.mark(marks, loc, fmt.Sprintf("kept %d of %d bytes, whole sha256:%s", len(kept), len(s), hex.EncodeToString(sum[:])))
	}
	return kept
}

// markList marks a list whole of which kept is what remains.
func markList[T any](c *cutter, marks *[]schemas.Field, loc, noun string, whole, kept []T) {
	w, err := schemas.CanonicalJSON(whole)
	if err != nil {
		w = []byte(err.Error())
	}
	k, err := schemas.CanonicalJSON(kept)
	if err != nil {
		k = nil
	}
	sum := sha256.Sum256(w)
	c.mark(marks, loc, fmt.Sprintf("kept %d of %d %s (%d of %d bytes), whole sha256:%s",
		len(kept), len(whole), noun, len(k), len(w), hex.EncodeToString(sum[:])))
}

func (c *cutter) mark(marks *[]schemas.Field, loc, value string) {
	if len(loc) > maxMarkLocator {
		loc = prefix(loc, maxMarkLocator)
	}
	*marks = append(*marks, schemas.Field{Name: schemas.FieldTruncated, Value: value, Locator: loc})
	c.left -= costMark + jsonLen(loc)
}

// prefix is the longest start of s of at most n bytes that does not end
// inside a character.
func prefix(s string, n int) string {
	if len(s) <= n {
		return s
	}
	k := n
	for k > 0 && k > n-utf8.UTFMax && !utf8.RuneStart(s[k]) {
		k--
	}
	return s[:k]
}

// prefixJSON is the longest start of s, ending at a character boundary,
// whose jsonLen is at most n.
func prefixJSON(s string, n int) string {
	used := 2
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if used += runeJSONLen(r, size); used > n {
			return s[:i]
		}
		i += size
	}
	return s
}

// runeJSONLen is what jsonLen counts for the character r, size bytes long
// (a byte of invalid UTF-8 is utf8.RuneError of size 1).
func runeJSONLen(r rune, size int) int {
	switch {
	case r == '"' || r == '\\' || r == '\n' || r == '\r' || r == '\t':
		return 2
	case r < 0x20 || r == utf8.RuneError && size == 1 || r == '\u2028' || r == '\u2029':
		return 6
	}
	return size
}

// jsonLen is at least the length of s encoded as a JSON string by
// schemas.CanonicalJSON: quotes, escapes, and 6 bytes for what is written
// \uXXXX (control characters, invalid UTF-8, U+2028 and U+2029).
func jsonLen(s string) int {
	n := 2
	for i := 0; i < len(s); {
		if b := s[i]; b < utf8.RuneSelf {
			n += runeJSONLen(rune(b), 1)
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		n += runeJSONLen(r, size)
		i += size
	}
	return n
}
