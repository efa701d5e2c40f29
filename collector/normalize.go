package collector

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/bomstream/bomstream/schemas"
)

// ErrNotWorkload is wrapped by Normalize for objects that have no BOM of
// their own: non-workload kinds (Service, ConfigMap, RuntimeClass, KServe
// runtime templates, ...) and objects controlled by a known workload kind,
// which are rolled up into their owner. Callers skip these quietly.
var ErrNotWorkload = errors.New("not a workload")

// ErrUnknownKind is wrapped by Normalize for a kind (or a version of a kind)
// that no profile describes.
var ErrUnknownKind = errors.New("unknown kind")

// Normalizer turns Kubernetes objects into Inputs by interpreting kind
// profiles. It is safe for concurrent use: after NewNormalizer nothing in it
// changes.
type Normalizer struct {
	cfg        Config
	profiles   map[gk]*profile
	envAllow   envAllowList
	labelAllow map[string]bool
	// acceleratorLabels are the node label keys that name an accelerator.
	acceleratorLabels map[string]bool
	// configAllow are the keys a configuration file keeps.
	configAllow map[string]bool
	args        *argRedactor
	claimers    map[gk][]claimer
	binders     map[gk][]binder
	linked      map[gk]bool
	serving     *servingSignature
}

// NewNormalizer validates cfg and loads the built-in profiles and, if set,
// cfg.ProfilesFile. A broken profiles file is an error naming the file and
// the offending field.
func NewNormalizer(cfg Config) (*Normalizer, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	profiles, err := loadProfiles(cfg.ProfilesFile)
	if err != nil {
		return nil, err
	}
	decl, err := schemas.DeclaredArguments()
	if err != nil {
		return nil, fmt.Errorf("new normalizer: %w", err)
	}
	n := &Normalizer{
		cfg:               cfg,
		profiles:          profiles,
		envAllow:          envAllowList{names: map[string]bool{}},
		labelAllow:        map[string]bool{},
		acceleratorLabels: map[string]bool{},
		claimers:          indexRules(profiles, func(p *profile) []claimRule { return p.claims }, func(c *claimRule) linkKind { return c.kind }),
		binders:           indexRules(profiles, func(p *profile) []boundRule { return p.bound }, func(b *boundRule) linkKind { return b.kind }),
		linked:            linkedKinds(profiles),
	}
	if n.serving, err = newServingSignature(decl.Serving, cfg.Serving); err != nil {
		return nil, fmt.Errorf("new normalizer: %w", err)
	}
	for _, e := range append(append(builtinEnvAllow(), decl.Env...), cfg.EnvAllow...) {
		n.envAllow.names[e] = true
	}
	for i, p := range decl.EnvPatterns {
		re, err := regexp.Compile(p)
		if err != nil {
			return nil, fmt.Errorf("new normalizer: arguments envPatterns[%d]: %w", i, err)
		}
		n.envAllow.patterns = append(n.envAllow.patterns, re)
	}
	for _, l := range append(builtinLabelAllow(), cfg.LabelAllow...) {
		n.labelAllow[l] = true
	}
	for _, l := range append(builtinAcceleratorLabels(), cfg.AcceleratorLabels...) {
		n.acceleratorLabels[l] = true
	}
	n.args = newArgRedactor(decl, cfg.ArgAllow, n.envAllow)
	n.configAllow = configAllowList(n.args, n.envAllow.names)
	return n, nil
}

// envAllowList holds the env names whose literal values are kept: by
// name, or by a pattern of the rules (MODEL_1_ID).
type envAllowList struct {
	names    map[string]bool
	patterns []*regexp.Regexp
}

// has reports whether the value of the env var name is kept.
func (l envAllowList) has(name string) bool {
	if l.names[name] {
		return true
	}
	for _, re := range l.patterns {
		if re.MatchString(name) {
			return true
		}
	}
	return false
}

// noteError is an error with its own message that wraps a sentinel.
type noteError struct {
	msg      string
	sentinel error
}

func (e *noteError) Error() string { return e.msg }
func (e *noteError) Unwrap() error { return e.sentinel }

// Normalize turns one object into Inputs. source is "cluster" or
// "file:<path>" and is copied to Inputs.Source. It returns an error wrapping
// ErrNotWorkload for objects without a BOM of their own, ErrUnknownKind for
// kinds no profile knows, and a plain error naming the object and the
// locator for a malformed object (a map where a string belongs, a name
// longer than Kubernetes allows, ...). The Inputs are redacted whole, then
// cut to Config.Bounds, with a mark for each cut.
// Owned objects and digests are left empty: only the cluster collector knows
// them.
func (n *Normalizer) Normalize(obj map[string]any, source string) (*schemas.Inputs, error) {
	return n.NormalizeWith(obj, source, nil)
}

// DefaultNamespace is the namespace of namespaced objects that name none.
func (n *Normalizer) DefaultNamespace() string { return n.cfg.DefaultNamespace }

// NormalizeWith is Normalize with a view of the other objects (nil: none).
// The links of the kind's profile (a NIMService's NIMCache) and the
// ConfigMaps its pods read are looked up in the workload's namespace:
// links become fields of the Inputs, ConfigMaps what their containers
// take from them (configmap.go: env values, envFrom variables, files, the
// LoRA adapters they list). Their locators name the linked object.
func (n *Normalizer) NormalizeWith(obj map[string]any, source string, lookup Lookup) (*schemas.Inputs, error) {
	return n.normalize(obj, source, lookup, true)
}

// normalize is NormalizeWith; checkClaims says whether an object some
// other object claims is refused as part of that one (false when the
// claimer itself reads it).
func (n *Normalizer) normalize(obj map[string]any, source string, lookup Lookup, checkClaims bool) (*schemas.Inputs, error) {
	d, err := n.draft(obj, source, lookup, checkClaims)
	if err != nil {
		return nil, err
	}
	return n.Complete(d, lookup), nil
}

// draft is normalize up to the ConfigMaps the object reads.
func (n *Normalizer) draft(obj map[string]any, source string, lookup Lookup, checkClaims bool) (*Draft, error) {
	o := n.identify(obj)
	if o.apiVersion == "" || o.kind == "" {
		return nil, fmt.Errorf("%s: %w: object has no apiVersion or kind", o.id, ErrUnknownKind)
	}
	p, generic, err := n.profileOf(obj, o)
	if err != nil {
		return nil, err
	}
	if p.clusterScoped {
		o.ns = ""
		o.id = "/" + o.kind + "/" + o.name
	}
	if err := n.refuse(p, o, obj, lookup, checkClaims); err != nil {
		return nil, err
	}
	in, err := n.newInputs(o, source, generic)
	if err != nil {
		return nil, err
	}
	uses := &configMapUses{ns: o.ns}
	w := walker{n: n, id: o.id, root: obj, lookup: lookup, ns: o.ns, uses: uses}
	if err := n.read(w, p, in, source); err != nil {
		return nil, err
	}
	if o.nsWritten != "" {
		in.Fields = sortFields(append(in.Fields, schemas.Field{Name: "namespaceAsWritten", Value: schemas.RedactText(o.nsWritten), Locator: "metadata.namespace"}))
	}
	in.Digests = pinnedDigests(in.Components)
	return n.finish(in, uses), nil
}

// objectID is the identity of the object being normalized, as its
// manifest gives it.
type objectID struct {
	apiVersion, kind, name string
	group, version         string
	// ns is the object's namespace (the default one when it names none;
	// "" for a cluster-scoped kind once its profile is known).
	ns string
	md map[string]any // its metadata
	// id names the object in errors: namespace/kind/name.
	id string
	// nsWritten is the namespace as written when it is no DNS label.
	nsWritten string
}

// identify reads the identity of obj, its namespace defaulted.
func (n *Normalizer) identify(obj map[string]any) objectID {
	o := objectID{}
	o.apiVersion, _ = obj["apiVersion"].(string)
	o.kind, _ = obj["kind"].(string)
	o.md, _ = obj["metadata"].(map[string]any)
	o.name, _ = o.md["name"].(string)
	o.ns, _ = o.md["namespace"].(string)
	if o.ns != "" && !dnsLabel(o.ns) {
		// A template's placeholder (KUBEFLOW_NAMESPACE, ${NAMESPACE}):
		// no namespace Kubernetes takes, so the workload is read in the
		// default one rather than lost; its inputs keep what was written.
		o.nsWritten, o.ns = o.ns, ""
	}
	if o.ns == "" {
		o.ns = n.cfg.DefaultNamespace
	}
	o.id = o.ns + "/" + o.kind + "/" + o.name
	o.group, o.version = splitAPIVersion(o.apiVersion)
	return o
}

// profileOf is the profile that reads o, and whether it is the generic
// one (a kind, or a version of a kind, no profile describes, that holds a
// pod template). An error wraps ErrUnknownKind.
func (n *Normalizer) profileOf(obj map[string]any, o objectID) (*profile, bool, error) {
	p := n.profiles[gk{o.group, o.kind}]
	switch {
	case p == nil:
		if p = genericProfile(obj, o.group, o.kind); p == nil {
			p = genericFieldsProfile(obj, o.group, o.kind)
		}
		if p == nil {
			return nil, false, fmt.Errorf("%s: %w %s %s (it holds no pod template, container, engine or model field)", o.id, ErrUnknownKind, o.apiVersion, o.kind)
		}
		return p, true, nil
	case p.workload && len(p.versions) > 0 && !p.versions[o.version]:
		gp := genericProfile(obj, o.group, o.kind)
		if gp == nil {
			return nil, false, fmt.Errorf("%s: %w %s %s (version %s is not in its profile)", o.id, ErrUnknownKind, o.apiVersion, o.kind, o.version)
		}
		return gp, true, nil
	}
	return p, false, nil
}

// refuse is the error for an object that has no BOM of its own (wrapping
// ErrNotWorkload: a kind that is no workload, an object rolled up into its
// owner, claimed by another or bound to another), or that names none;
// nil for a workload.
func (n *Normalizer) refuse(p *profile, o objectID, obj map[string]any, lookup Lookup, checkClaims bool) error {
	if !p.workload {
		note := p.note
		if note == "" {
			note = ErrNotWorkload.Error()
		}
		return &noteError{msg: o.id + ": " + note, sentinel: ErrNotWorkload}
	}
	if owner, ok := n.knownOwner(o.md); ok {
		return &noteError{msg: o.id + ": owned by " + owner + ", rolled up", sentinel: ErrNotWorkload}
	}
	if o.name == "" {
		return fmt.Errorf("%s: metadata.name is missing", o.id)
	}
	if checkClaims {
		if by, ok := n.claimedBy(o.group, o.kind, o.ns, o.name, lookup); ok {
			return &noteError{msg: o.id + ": part of " + by + ", which names it as its workload", sentinel: ErrNotWorkload}
		}
	}
	if to, ok := n.boundTo(o.group, o.kind, o.ns, obj, lookup); ok {
		return &noteError{msg: o.id + ": loaded into " + to + ", reported in its BOM", sentinel: ErrNotWorkload}
	}
	return nil
}

// newInputs is the Inputs of workload o with its identity and nothing
// read yet. An object without a uid (a manifest) gets one derived from its
// cluster, namespace, kind and name; an identity no API server would take
// is an error.
func (n *Normalizer) newInputs(o objectID, source string, generic bool) (*schemas.Inputs, error) {
	uid, _ := o.md["uid"].(string)
	if uid == "" {
		sum := sha256.Sum256([]byte(n.cfg.Cluster + "/" + o.ns + "/" + o.kind + "/" + o.name))
		uid = hex.EncodeToString(sum[:16])
	} else if !idLike(uid) {
		return nil, fmt.Errorf("%s: metadata.uid %q must match ^[A-Za-z0-9_-]+$", o.id, uid)
	}
	in := &schemas.Inputs{
		Workload: schemas.Workload{
			Cluster:    n.cfg.Cluster,
			Namespace:  o.ns,
			APIVersion: o.apiVersion,
			Kind:       o.kind,
			Name:       o.name,
			UID:        uid,
		},
		Components: []schemas.Component{},
		Source:     source,
	}
	if generic {
		in.Profile = schemas.ProfileGeneric
	}
	if err := checkIdentity(o.id, in.Workload); err != nil {
		return nil, err
	}
	return in, nil
}

// read fills in with what profile p reads of the object w walks: its
// fields and components, what its links and the objects bound to it
// contribute, and the objects it claims.
func (n *Normalizer) read(w walker, p *profile, in *schemas.Inputs, source string) error {
	var err error
	if in.Fields, err = w.fields(p.fields, nil); err != nil {
		return err
	}
	for _, cr := range p.components {
		comps, err := w.components(cr)
		if err != nil {
			return err
		}
		in.Components = append(in.Components, comps...)
	}
	sortByListIndexes(in.Components)
	links, err := w.resolveLinks(p.links)
	if err != nil {
		return err
	}
	linked, err := w.linkFields(links)
	if err != nil {
		return err
	}
	if err := w.linkContainers(links, in.Components); err != nil {
		return err
	}
	bound, err := w.boundFields(p.bound, in.Workload.Name, in.Components)
	if err != nil {
		return err
	}
	in.Fields = sortFields(append(append(in.Fields, linked...), bound...))
	return n.addClaims(w, p.claims, in, source)
}

// addClaims lists in in.Owned the objects the claims of a profile name
// and, when the lookup has them, adds their components as their own
// profiles read them.
func (n *Normalizer) addClaims(w walker, claims []claimRule, in *schemas.Inputs, source string) error {
	for i := range claims {
		c := &claims[i]
		name, ok := claimName(c, w.root)
		if !ok {
			continue
		}
		in.Owned = append(in.Owned, schemas.ObjectRef{APIVersion: c.kind.apiVersion, Kind: c.kind.kind, Name: name})
		if w.lookup == nil {
			continue
		}
		obj, found := w.lookup.Get(c.kind.apiVersion, c.kind.kind, w.ns, name)
		if !found {
			continue
		}
		part, err := n.normalize(obj, source, w.lookup, false)
		if err != nil {
			return fmt.Errorf("%s: claims %s %s: %w", w.id, c.kind.kind, name, err)
		}
		*in = *n.Claim(in, part)
	}
	return nil
}

// sortByListIndexes puts components read from list items in the order of
// the list, whichever profile rule found them (the leader and worker
// templates of spec.roles[i] of a DisaggregatedSet stay next to each other).
// Components with equal indexes (or none) keep the profile's order.
func sortByListIndexes(cs []schemas.Component) {
	keys := make([][]int, len(cs))
	for i, c := range cs {
		keys[i] = listIndexes(c.Locator)
	}
	idx := make([]int, len(cs))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return lessInts(keys[idx[a]], keys[idx[b]]) })
	sorted := make([]schemas.Component, len(cs))
	for i, j := range idx {
		sorted[i] = cs[j]
	}
	copy(cs, sorted)
}

// listIndexes returns the list indexes in a locator: "a[1].b[0]" -> [1 0].
func listIndexes(loc string) []int {
	var out []int
	for {
		i := strings.IndexByte(loc, '[')
		if i < 0 {
			return out
		}
		loc = loc[i+1:]
		j := strings.IndexByte(loc, ']')
		if j < 0 {
			return out
		}
		if n, err := strconv.Atoi(loc[:j]); err == nil {
			out = append(out, n)
		}
		loc = loc[j+1:]
	}
}

// lessInts reports whether a sorts before b at their first difference; a
// list that is a prefix of the other sorts as equal.
func lessInts(a, b []int) bool {
	for i := 0; i < len(a) && i < len(b); i++ {
		if a[i] != b[i] {
			return a[i] < b[i]
		}
	}
	return false
}

// splitAPIVersion splits "group/version"; the core group is "".
func splitAPIVersion(apiVersion string) (group, version string) {
	if g, v, ok := strings.Cut(apiVersion, "/"); ok {
		return g, v
	}
	return "", apiVersion
}

// knownOwner returns the controller owner of an object when its kind has a
// profile that rolls up what it controls.
func (n *Normalizer) knownOwner(md map[string]any) (string, bool) {
	refs, _ := md["ownerReferences"].([]any)
	for _, r := range refs {
		ref, _ := r.(map[string]any)
		if controller, _ := ref["controller"].(bool); !controller {
			continue
		}
		apiVersion, _ := ref["apiVersion"].(string)
		kind, _ := ref["kind"].(string)
		name, _ := ref["name"].(string)
		group, _ := splitAPIVersion(apiVersion)
		if p := n.profiles[gk{group, kind}]; p != nil && p.owner {
			return apiVersion + " " + kind + " " + name, true
		}
	}
	return "", false
}
