package collector

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
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

// Config configures a Normalizer. The zero value is usable.
type Config struct {
	// Cluster names the cluster in every workload identity; default
	// "default". Must match ^[A-Za-z0-9_-]+$.
	Cluster string
	// DefaultNamespace is the namespace of namespaced objects that do not
	// name one (as in most manifests); default "default".
	DefaultNamespace string
	// EnvAllow lists env names whose literal values are kept, in addition to
	// the built-in model variables (MODEL_ID, NIM_MODEL_NAME, ...).
	EnvAllow []string
	// LabelAllow lists pod-template label keys kept in Component.Labels, in
	// addition to llm-d.ai/role, llm-d.ai/model,
	// inference.networking.k8s.io/engine-type and app.kubernetes.io/component.
	LabelAllow []string
	// ArgAllow lists flags ("--my-flag", "-x") whose values are kept in
	// commands and arguments, in addition to the flags the detection rules
	// read (schemas.DeclaredArguments). Every other flag keeps its name and
	// its value becomes Redacted. A rules override that reads a new flag
	// needs it here.
	ArgAllow []string
	// ProfilesFile is an optional YAML file of kind profiles (the format of
	// the built-in profiles.yaml). A profile with the group and kind of a
	// built-in one replaces it.
	ProfilesFile string
	// Bounds caps what the Inputs of one workload hold; the zero value takes
	// the defaults.
	Bounds Bounds
	// Serving adds to the built-in serving signature (the engines of a
	// rules override): in a cluster, a pod whose owner no profile describes
	// is reported only when one of its containers matches the signature.
	Serving schemas.ServingSignature
}

// builtinEnvAllow are the env names whose literal values describe the model
// or engine and are kept in the inputs.
func builtinEnvAllow() []string {
	return []string{
		"MODEL", "MODEL_ID", "HF_MODEL_ID", "MODEL_NAME", "MODEL_PATH", "MODEL_REVISION",
		"HF_MODEL_REVISION", "SERVED_MODEL_NAME", "NIM_MODEL_NAME", "NIM_MODEL_PROFILE",
		"NIM_SERVED_MODEL_NAME", "NIM_USE_SGLANG", "NIM_USE_VLLM", "NIM_USE_TRTLLM",
		"NUM_SHARD", "QUANTIZE", "MAX_MODEL_LEN", "MAX_INPUT_LENGTH", "MAX_TOTAL_TOKENS",
		"VLLM_ADDITIONAL_ARGS", "SGLANG_ARGS",
	}
}

func builtinLabelAllow() []string {
	return []string{
		"llm-d.ai/role", "llm-d.ai/model", "inference.networking.k8s.io/engine-type",
		"app.kubernetes.io/component",
	}
}

func (c Config) withDefaults() Config {
	if c.Cluster == "" {
		c.Cluster = "default"
	}
	if c.DefaultNamespace == "" {
		c.DefaultNamespace = "default"
	}
	return c
}

// Validate reports the first invalid field.
func (c Config) Validate() error {
	c = c.withDefaults()
	if !idLike(c.Cluster) {
		return fmt.Errorf("config: Cluster %q must match ^[A-Za-z0-9_-]+$", c.Cluster)
	}
	if !dnsLabel(c.DefaultNamespace) {
		return fmt.Errorf("config: DefaultNamespace %q is not a valid namespace name", c.DefaultNamespace)
	}
	for i, e := range c.EnvAllow {
		if e == "" || strings.ContainsAny(e, " \t\n=") {
			return fmt.Errorf("config: EnvAllow[%d] %q is not an env name", i, e)
		}
	}
	for i, a := range c.ArgAllow {
		if !isFlag(a) || strings.ContainsAny(a, " \t\n=") {
			return fmt.Errorf("config: ArgAllow[%d] %q is not a flag (-x or --name)", i, a)
		}
	}
	for i, l := range c.LabelAllow {
		if l == "" || strings.ContainsAny(l, " \t\n") {
			return fmt.Errorf("config: LabelAllow[%d] %q is not a label key", i, l)
		}
	}
	if err := c.Bounds.Validate(); err != nil {
		return fmt.Errorf("config: %w", err)
	}
	return nil
}

// idLike reports whether s matches ^[A-Za-z0-9_-]+$.
func idLike(s string) bool { return plainKey(s) }

func dnsLabel(s string) bool {
	if s == "" || len(s) > 63 || s[0] == '-' || s[len(s)-1] == '-' {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-') {
			return false
		}
	}
	return true
}

// Normalizer turns Kubernetes objects into Inputs by interpreting kind
// profiles. It is safe for concurrent use: after NewNormalizer nothing in it
// changes.
type Normalizer struct {
	cfg        Config
	profiles   map[gk]*profile
	envAllow   map[string]bool
	labelAllow map[string]bool
	args       *argRedactor
	claimers   map[gk][]claimer
	binders    map[gk][]binder
	linked     map[gk]bool
	serving    *servingSignature
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
		cfg:        cfg,
		profiles:   profiles,
		envAllow:   map[string]bool{},
		labelAllow: map[string]bool{},
		claimers:   indexClaims(profiles),
		binders:    indexBinders(profiles),
		linked:     linkedKinds(profiles),
	}
	if n.serving, err = newServingSignature(cfg.Serving); err != nil {
		return nil, fmt.Errorf("new normalizer: %w", err)
	}
	for _, e := range append(append(builtinEnvAllow(), decl.Env...), cfg.EnvAllow...) {
		n.envAllow[e] = true
	}
	for _, l := range append(builtinLabelAllow(), cfg.LabelAllow...) {
		n.labelAllow[l] = true
	}
	n.args = newArgRedactor(decl, cfg.ArgAllow, n.envAllow)
	return n, nil
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
// ConfigMaps its pods mount are looked up in the workload's namespace, and
// what they contribute becomes fields of the Inputs: workload fields for
// links, component fields named loraAdapter for the adapters a ConfigMap
// lists. Their locators name the linked object.
func (n *Normalizer) NormalizeWith(obj map[string]any, source string, lookup Lookup) (*schemas.Inputs, error) {
	return n.normalize(obj, source, lookup, true)
}

// normalize is NormalizeWith; checkClaims says whether an object some
// other object claims is refused as part of that one (false when the
// claimer itself reads it).
func (n *Normalizer) normalize(obj map[string]any, source string, lookup Lookup, checkClaims bool) (*schemas.Inputs, error) {
	apiVersion, _ := obj["apiVersion"].(string)
	kind, _ := obj["kind"].(string)
	md, _ := obj["metadata"].(map[string]any)
	name, _ := md["name"].(string)
	ns, _ := md["namespace"].(string)
	if ns == "" {
		ns = n.cfg.DefaultNamespace
	}
	id := ns + "/" + kind + "/" + name
	if apiVersion == "" || kind == "" {
		return nil, fmt.Errorf("%s: %w: object has no apiVersion or kind", id, ErrUnknownKind)
	}
	group, version := splitAPIVersion(apiVersion)
	p := n.profiles[gk{group, kind}]
	generic := false
	switch {
	case p == nil:
		if p = genericProfile(obj, group, kind); p == nil {
			return nil, fmt.Errorf("%s: %w %s %s (and it holds no pod template)", id, ErrUnknownKind, apiVersion, kind)
		}
		generic = true
	case p.workload && len(p.versions) > 0 && !p.versions[version]:
		gp := genericProfile(obj, group, kind)
		if gp == nil {
			return nil, fmt.Errorf("%s: %w %s %s (version %s is not in its profile)", id, ErrUnknownKind, apiVersion, kind, version)
		}
		p, generic = gp, true
	}
	if p.clusterScoped {
		ns = ""
		id = "/" + kind + "/" + name
	}
	if !p.workload {
		note := p.note
		if note == "" {
			note = ErrNotWorkload.Error()
		}
		return nil, &noteError{msg: id + ": " + note, sentinel: ErrNotWorkload}
	}
	if owner, ok := n.knownOwner(md); ok {
		return nil, &noteError{msg: id + ": owned by " + owner + ", rolled up", sentinel: ErrNotWorkload}
	}
	if name == "" {
		return nil, fmt.Errorf("%s: metadata.name is missing", id)
	}
	if checkClaims {
		if by, ok := n.claimedBy(group, kind, ns, name, lookup); ok {
			return nil, &noteError{msg: id + ": part of " + by + ", which names it as its workload", sentinel: ErrNotWorkload}
		}
	}
	if to, ok := n.boundTo(group, kind, ns, obj, lookup); ok {
		return nil, &noteError{msg: id + ": loaded into " + to + ", reported in its BOM", sentinel: ErrNotWorkload}
	}
	uid, _ := md["uid"].(string)
	if uid == "" {
		sum := sha256.Sum256([]byte(n.cfg.Cluster + "/" + ns + "/" + kind + "/" + name))
		uid = hex.EncodeToString(sum[:16])
	} else if !idLike(uid) {
		return nil, fmt.Errorf("%s: metadata.uid %q must match ^[A-Za-z0-9_-]+$", id, uid)
	}
	in := &schemas.Inputs{
		Workload: schemas.Workload{
			Cluster:    n.cfg.Cluster,
			Namespace:  ns,
			APIVersion: apiVersion,
			Kind:       kind,
			Name:       name,
			UID:        uid,
		},
		Components: []schemas.Component{},
		Source:     source,
	}
	if generic {
		in.Profile = schemas.ProfileGeneric
	}
	if err := checkIdentity(id, in.Workload); err != nil {
		return nil, err
	}
	w := walker{n: n, id: id, root: obj, lookup: lookup, ns: ns}
	var err error
	if in.Fields, err = w.fields(p.fields, nil); err != nil {
		return nil, err
	}
	for _, cr := range p.components {
		comps, err := w.components(cr)
		if err != nil {
			return nil, err
		}
		in.Components = append(in.Components, comps...)
	}
	sortByListIndexes(in.Components)
	links, err := w.resolveLinks(p.links)
	if err != nil {
		return nil, err
	}
	linked, err := w.linkFields(links)
	if err != nil {
		return nil, err
	}
	if err := w.linkContainers(links, in.Components); err != nil {
		return nil, err
	}
	bound, err := w.boundFields(p.bound, name, in.Components)
	if err != nil {
		return nil, err
	}
	in.Fields = sortFields(append(append(in.Fields, linked...), bound...))
	if err := n.addClaims(w, p.claims, in, source); err != nil {
		return nil, err
	}
	in.Digests = pinnedDigests(in.Components)
	n.cfg.Bounds.bound(in)
	return in, nil
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

func lessInts(a, b []int) bool {
	for i := 0; i < len(a) && i < len(b); i++ {
		if a[i] != b[i] {
			return a[i] < b[i]
		}
	}
	return false
}

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

// walker normalizes the parts of one object.
type walker struct {
	n      *Normalizer
	id     string
	root   map[string]any
	lookup Lookup // nil: no other objects are seen
	ns     string // the workload's namespace, where links are looked up
}

func (w walker) errorf(loc, format string, args ...any) error {
	return fmt.Errorf("%s: %s: %s", w.id, loc, fmt.Sprintf(format, args...))
}

// scalar converts a scalar to its string form; ok is false for null. A map
// or list is an error naming loc.
func (w walker) scalar(v any, loc string) (string, bool, error) {
	switch x := v.(type) {
	case nil:
		return "", false, nil
	case string:
		return x, true, nil
	case bool:
		return strconv.FormatBool(x), true, nil
	case int64:
		return strconv.FormatInt(x, 10), true, nil
	case int:
		return strconv.Itoa(x), true, nil
	case int32:
		return strconv.FormatInt(int64(x), 10), true, nil
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64), true, nil
	case float32:
		return strconv.FormatFloat(float64(x), 'g', -1, 32), true, nil
	case map[string]any:
		return "", false, w.errorf(loc, "expected a string, found a map")
	case []any:
		return "", false, w.errorf(loc, "expected a string, found a list")
	}
	return "", false, w.errorf(loc, "expected a string, found %T", v)
}

func (w walker) fields(rules []fieldRule, from []step) ([]schemas.Field, error) {
	var out []schemas.Field
	for _, r := range rules {
		for _, m := range r.path.walk(w.root, from) {
			if r.fromKey {
				out = append(out, schemas.Field{Name: r.name, Value: m.key, Locator: m.locator()})
				continue
			}
			v, ok, err := w.scalar(m.value(), m.locator())
			if err != nil {
				return nil, err
			}
			if !ok {
				continue
			}
			if r.yaml != nil {
				fs, err := w.yamlFields(r, v, m.locator())
				if err != nil {
					return nil, err
				}
				out = append(out, fs...)
				continue
			}
			out = append(out, schemas.Field{Name: r.name, Value: schemas.RedactText(v), Locator: m.locator()})
		}
	}
	return sortFields(out), nil
}

// sortFields orders fields by name, then locator.
func sortFields(out []schemas.Field) []schemas.Field {
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Name != out[j].Name {
			return out[i].Name < out[j].Name
		}
		return out[i].Locator < out[j].Locator
	})
	return out
}

func (w walker) components(cr componentRule) ([]schemas.Component, error) {
	var out []schemas.Component
	for _, m := range cr.path.walk(w.root, nil) {
		if _, ok := m.value().(map[string]any); !ok {
			return nil, w.errorf(m.locator(), "expected a mapping, found %s", describe(m.value()))
		}
		c, err := w.component(cr, m)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, nil
}

func describe(v any) string {
	switch v.(type) {
	case map[string]any:
		return "a map"
	case []any:
		return "a list"
	case nil:
		return "null"
	}
	return "a scalar"
}

// first returns the first non-null scalar a relative path reaches.
func (w walker) first(p path, from []step) (string, bool, error) {
	for _, m := range p.walk(w.root, from) {
		v, ok, err := w.scalar(m.value(), m.locator())
		if err != nil || ok {
			return v, ok, err
		}
	}
	return "", false, nil
}

func (w walker) component(cr componentRule, m match) (schemas.Component, error) {
	c := schemas.Component{Locator: m.locator(), Containers: []schemas.Container{}}
	from := m.chain
	for _, src := range cr.nameFrom {
		if src.key {
			if m.key != "" {
				c.Name = m.key
				break
			}
			continue
		}
		v, ok, err := w.first(src.path, from)
		if err != nil {
			return c, err
		}
		if ok && v != "" {
			c.Name = v
			break
		}
	}
	if c.Name == "" {
		c.Name = cr.name
	}
	c.Name += cr.nameSuffix

	var roles []string
	for _, rf := range cr.roleFields {
		for _, rm := range rf.walk(w.root, from) {
			v, ok, err := w.scalar(rm.value(), rm.locator())
			if err != nil {
				return c, err
			}
			if v = strings.TrimSpace(v); ok && v != "" {
				roles = append(roles, v)
			}
		}
	}
	roles = append(roles, cr.roles...)
	for _, rw := range cr.rolesWhen {
		if present := len(rw.path.walk(w.root, from)) > 0; present == rw.present {
			roles = append(roles, rw.roles...)
		}
	}
	c.Roles = dedupe(roles)

	if cr.labels != nil {
		for _, lm := range cr.labels.walk(w.root, from) {
			labels, ok := lm.value().(map[string]any)
			if !ok {
				return c, w.errorf(lm.locator(), "expected a map of labels, found %s", describe(lm.value()))
			}
			for k, v := range labels {
				if !w.n.labelAllow[k] {
					continue
				}
				s, ok, err := w.scalar(v, joinKey(lm.locator(), k))
				if err != nil {
					return c, err
				}
				if ok {
					if c.Labels == nil {
						c.Labels = map[string]string{}
					}
					c.Labels[k] = schemas.RedactText(s)
				}
			}
		}
	}

	var secrets []schemas.EnvSource
	for _, ef := range cr.envFromSecrets {
		for _, em := range ef.walk(w.root, from) {
			v, ok, err := w.scalar(em.value(), em.locator())
			if err != nil {
				return c, err
			}
			if ok && v != "" {
				secrets = append(secrets, schemas.EnvSource{Kind: "secret", Name: v})
			}
		}
	}

	var main, init []schemas.Container
	for _, rule := range cr.containers {
		got, err := w.containers(rule, from)
		if err != nil {
			return c, err
		}
		if rule.init {
			init = append(init, got...)
		} else {
			main = append(main, got...)
		}
	}
	for i := range main {
		main[i].EnvFrom = append(main[i].EnvFrom, secrets...)
	}
	c.Containers = append(append(c.Containers, main...), init...)
	if cr.volumes != nil {
		vols, err := w.volumes(*cr.volumes, from)
		if err != nil {
			return c, err
		}
		c.Volumes = keepVolumes(vols, c.Containers)
	} else {
		for i := range c.Containers {
			c.Containers[i].Mounts = nil
		}
	}

	var err error
	if c.Fields, err = w.fields(cr.fields, from); err != nil {
		return c, err
	}
	if cr.volumes != nil {
		c.Fields = sortFields(append(c.Fields, w.configMapFields(*cr.volumes, from)...))
	}
	return c, nil
}

func dedupe(in []string) []string {
	var out []string
	seen := map[string]bool{}
	for _, s := range in {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}

// containers reads the containers one rule describes.
func (w walker) containers(r containerRule, from []step) ([]schemas.Container, error) {
	var out []schemas.Container
	switch {
	case r.list != nil:
		for _, lm := range r.list.walk(w.root, from) {
			items, ok := lm.value().([]any)
			if !ok {
				return nil, w.errorf(lm.locator(), "expected a list of containers, found %s", describe(lm.value()))
			}
			for i, item := range items {
				loc := joinIndex(lm.locator(), i)
				obj, ok := item.(map[string]any)
				if !ok {
					if item == nil {
						continue
					}
					return nil, w.errorf(loc, "expected a container, found %s", describe(item))
				}
				c, err := w.container(obj, loc, r.name, r.init)
				if err != nil {
					return nil, err
				}
				out = append(out, c)
			}
		}
	case r.single != nil:
		for _, sm := range r.single.walk(w.root, from) {
			obj, ok := sm.value().(map[string]any)
			if !ok {
				return nil, w.errorf(sm.locator(), "expected a container, found %s", describe(sm.value()))
			}
			c, err := w.container(obj, sm.locator(), r.name, r.init)
			if err != nil {
				return nil, err
			}
			out = append(out, c)
		}
	default:
		c, ok, err := w.synthesize(r, from)
		if err != nil || !ok {
			return nil, err
		}
		out = append(out, c)
	}
	return out, nil
}

// container reads one container object.
func (w walker) container(obj map[string]any, loc, defaultName string, init bool) (schemas.Container, error) {
	c := schemas.Container{Locator: loc, Init: init}
	var err error
	if c.Name, _, err = w.scalar(obj["name"], loc+".name"); err != nil {
		return c, err
	}
	if c.Name == "" {
		c.Name = defaultName
	}
	if c.Image, _, err = w.scalar(obj["image"], loc+".image"); err != nil {
		return c, err
	}
	if c.Command, err = w.stringList(obj["command"], loc+".command"); err != nil {
		return c, err
	}
	if c.Args, err = w.stringList(obj["args"], loc+".args"); err != nil {
		return c, err
	}
	c.Command, c.Args = w.n.args.command(c.Command, c.Args)
	if c.Env, err = w.env(obj["env"], loc+".env"); err != nil {
		return c, err
	}
	if c.EnvFrom, err = w.envFrom(obj["envFrom"], loc+".envFrom"); err != nil {
		return c, err
	}
	if c.Mounts, err = w.mounts(obj["volumeMounts"], loc+".volumeMounts"); err != nil {
		return c, err
	}
	return c, nil
}

// synthesize builds the container an operator creates from a kind's fields.
func (w walker) synthesize(r containerRule, from []step) (schemas.Container, bool, error) {
	if r.when != nil {
		v, ok, err := w.first(*r.when, from)
		if err != nil {
			return schemas.Container{}, false, err
		}
		if !ok || !strings.EqualFold(v, "true") {
			return schemas.Container{}, false, nil
		}
	}
	var parts []string
	for _, ip := range r.image {
		v, ok, err := w.first(ip, from)
		if err != nil {
			return schemas.Container{}, false, err
		}
		if ok && v != "" {
			parts = append(parts, v)
		}
	}
	c := schemas.Container{Name: r.name, Init: r.init, Image: strings.Join(parts, r.imageSep)}
	if c.Image == "" && r.optional {
		return c, false, nil
	}
	c.Locator = from[len(from)-1].loc
	if r.locator != nil {
		c.Locator = r.locator.render(from)
	}
	if r.nameFrom != nil {
		v, ok, err := w.first(*r.nameFrom, from)
		if err != nil {
			return c, false, err
		}
		if ok && v != "" {
			c.Name = v
		}
	}
	var err error
	for _, f := range []struct {
		p   *path
		dst func(any, string) error
	}{
		{r.command, func(v any, loc string) (err error) { c.Command, err = w.stringList(v, loc); return }},
		{r.args, func(v any, loc string) (err error) { c.Args, err = w.stringList(v, loc); return }},
		{r.env, func(v any, loc string) (err error) { c.Env, err = w.env(v, loc); return }},
		{r.envMap, func(v any, loc string) (err error) { c.Env, err = w.envMap(v, loc); return }},
	} {
		if f.p == nil {
			continue
		}
		for _, m := range f.p.walk(w.root, from) {
			if err = f.dst(m.value(), m.locator()); err != nil {
				return c, false, err
			}
			break
		}
	}
	c.Command, c.Args = w.n.args.command(c.Command, c.Args)
	return c, true, nil
}

// render writes the locator a wildcard-free relative path names.
func (p path) render(from []step) string {
	loc := ""
	if !p.absolute && len(from) > p.up {
		loc = from[len(from)-1-p.up].loc
	}
	for _, s := range p.segs {
		loc = joinKey(loc, s.key)
	}
	return loc
}

// stringList reads a command or args list, converting scalars to strings.
// The caller redacts command and args together (argRedactor.command).
func (w walker) stringList(v any, loc string) ([]string, error) {
	if v == nil {
		return nil, nil
	}
	items, ok := v.([]any)
	if !ok {
		return nil, w.errorf(loc, "expected a list of strings, found %s", describe(v))
	}
	out := make([]string, len(items))
	for i, item := range items {
		s, _, err := w.scalar(item, joinIndex(loc, i))
		if err != nil {
			return nil, err
		}
		out[i] = s
	}
	return out, nil
}

// env reads an env list. Literal values survive only for allow-listed names
// and only when they do not look like a credential; the values of argsEnv
// variables are redacted as arguments.
func (w walker) env(v any, loc string) ([]schemas.EnvVar, error) {
	if v == nil {
		return nil, nil
	}
	items, ok := v.([]any)
	if !ok {
		return nil, w.errorf(loc, "expected a list of env vars, found %s", describe(v))
	}
	var out []schemas.EnvVar
	for i, item := range items {
		iloc := joinIndex(loc, i)
		if item == nil {
			continue
		}
		obj, ok := item.(map[string]any)
		if !ok {
			return nil, w.errorf(iloc, "expected an env var, found %s", describe(item))
		}
		name, _, err := w.scalar(obj["name"], iloc+".name")
		if err != nil {
			return nil, err
		}
		e := schemas.EnvVar{Name: name}
		value, _, err := w.scalar(obj["value"], iloc+".value")
		if err != nil {
			return nil, err
		}
		switch {
		case value == "":
		case w.n.args.argsEnv[name]:
			// More engine arguments: redacted like arguments.
			e.Value = w.n.args.script(value, false, 0)
		case w.n.envAllow[name] && !looksLikeCredential(value):
			e.Value = value
		default:
			e.Redacted = true
		}
		if vf, ok := obj["valueFrom"].(map[string]any); ok {
			if e.From, err = w.keyRef(vf, iloc+".valueFrom"); err != nil {
				return nil, err
			}
		} else if obj["valueFrom"] != nil {
			return nil, w.errorf(iloc+".valueFrom", "expected a map, found %s", describe(obj["valueFrom"]))
		}
		out = append(out, e)
	}
	return out, nil
}

func (w walker) keyRef(vf map[string]any, loc string) (*schemas.KeyRef, error) {
	for _, ref := range []struct{ key, kind, name, item string }{
		{"secretKeyRef", "secret", "name", "key"},
		{"configMapKeyRef", "configMap", "name", "key"},
		{"fieldRef", "field", "", "fieldPath"},
		{"resourceFieldRef", "resource", "", "resource"},
	} {
		obj, ok := vf[ref.key].(map[string]any)
		if !ok {
			continue
		}
		out := &schemas.KeyRef{Kind: ref.kind}
		var err error
		if ref.name != "" {
			if out.Name, _, err = w.scalar(obj[ref.name], loc+"."+ref.key+"."+ref.name); err != nil {
				return nil, err
			}
		}
		if out.Key, _, err = w.scalar(obj[ref.item], loc+"."+ref.key+"."+ref.item); err != nil {
			return nil, err
		}
		return out, nil
	}
	return nil, nil
}

func (w walker) envFrom(v any, loc string) ([]schemas.EnvSource, error) {
	if v == nil {
		return nil, nil
	}
	items, ok := v.([]any)
	if !ok {
		return nil, w.errorf(loc, "expected a list of env sources, found %s", describe(v))
	}
	var out []schemas.EnvSource
	for i, item := range items {
		iloc := joinIndex(loc, i)
		obj, ok := item.(map[string]any)
		if !ok {
			if item == nil {
				continue
			}
			return nil, w.errorf(iloc, "expected an env source, found %s", describe(item))
		}
		prefix, _, err := w.scalar(obj["prefix"], iloc+".prefix")
		if err != nil {
			return nil, err
		}
		for _, ref := range []struct{ key, kind string }{{"configMapRef", "configMap"}, {"secretRef", "secret"}} {
			r, ok := obj[ref.key].(map[string]any)
			if !ok {
				continue
			}
			name, _, err := w.scalar(r["name"], iloc+"."+ref.key+".name")
			if err != nil {
				return nil, err
			}
			out = append(out, schemas.EnvSource{Kind: ref.kind, Name: name, Prefix: prefix})
		}
	}
	return out, nil
}

// looksLikeCredential reports whether a value that would otherwise be kept
// (an allow-listed env value) carries something secret.
func looksLikeCredential(v string) bool {
	return strings.Contains(strings.ToLower(v), "token=") || schemas.RedactText(v) != v
}

// envMap reads env given as a map of names to values (a KubeAI Model's
// spec.env), in the order of the names, under the same rules as env.
func (w walker) envMap(v any, loc string) ([]schemas.EnvVar, error) {
	if v == nil {
		return nil, nil
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, w.errorf(loc, "expected a map of env values, found %s", describe(v))
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	items := make([]any, 0, len(keys))
	for _, k := range keys {
		if _, _, err := w.scalar(m[k], joinKey(loc, k)); err != nil {
			return nil, err
		}
		items = append(items, map[string]any{"name": k, "value": m[k]})
	}
	return w.env(items, loc)
}
