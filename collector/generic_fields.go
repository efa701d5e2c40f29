package collector

import (
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// An object of a kind no profile describes that holds no pod template (an
// operator's CR that names an engine and a model: a ModelBooster, a
// Playground, a SeldonDeployment's graph, a Crossplane claim) is still read
// in manifests, by the facts its fields state:
//
//   - a map shaped like a container (an image string beside args,
//     command, env, resources or ports) is a component of one container,
//     its role read from a type, role or name key beside it;
//   - a value under a key that says it is a model (model, modelID,
//     modelURI, storageUri, ...) and looks like one (hf://, s3://, gs://,
//     pvc://, oci://, org/name) is a field modelUri;
//   - a value under a key that says it is an engine (backend, engine,
//     runtime, framework, implementation, type, ...) is a field
//     engineHint, which the transformer matches against the engines' names;
//     a version beside it is engineHintVersion.
//
// Nothing found, the object is ErrUnknownKind as before. The search is
// bounded like the pod-template one.

// Field names the generic reading gives.
const (
	fieldModelURI      = "modelUri"
	fieldEngineHint    = "engineHint"
	fieldEngineVersion = "engineHintVersion"
	fieldAccelerator   = "accelerator"
)

// maxGenericFields bounds the fields and containers one object gives.
const maxGenericFields = 64

var (
	// modelKeys name a model, keys folded (lower case, no - or _).
	modelKeys = set([]string{"model", "modelid", "modelname", "modeluri", "modelurl", "modelpath", "modelsource",
		"modelrepo", "hfrepo", "repoid", "huggingfacerepo", "storageuri", "modeluris", "basemodel"})
	// engineKeys name an engine.
	engineKeys = set([]string{"backend", "backendname", "backendtype", "backendframework", "engine", "enginename", "enginetype",
		"runtime", "runtimename", "framework", "implementation", "inferenceengine", "server", "servertype", "type"})
	// versionKeys give the version of the engine named beside them.
	versionKeys = set([]string{"version", "engineversion", "runtimeversion", "backendversion"})
	// acceleratorKeys ask for accelerators: a non-zero number or a name.
	acceleratorKeys = set([]string{"gpu", "gpus", "gpucount", "numgpus", "accelerator", "accelerators", "acceleratortype", "gputype"})
	// selectorKeys, in a spec, select workloads elsewhere: the object routes
	// to or governs them (a router's ModelServer, a policy), and is none.
	selectorKeys = []string{"workloadSelector", "podSelector", "selector", "targetRef", "targetRefs", "backendRef", "backendRefs", "poolRef"}
	// containerKeys, beside an image string, make a map a container.
	containerKeys = []string{"args", "command", "env", "resources", "ports"}
	// modelValue looks like a model reference: a model store URI or org/name.
	modelValue = regexp.MustCompile(`^([a-z0-9+.-]+://\S+|[A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9._-]*)$`)
	// schemeValue is a model store URI, for keys that are URIs of anything.
	schemeValue = regexp.MustCompile(`^(hf|huggingface|s3|gs|gcs|pvc|oci|azureblob|ollama|modelscope)://\S+$`)
)

// fold is a key folded for the key sets: lower case, no - or _.
func fold(k string) string {
	return strings.NewReplacer("-", "", "_", "").Replace(strings.ToLower(k))
}

// genericFieldsProfile is a profile for an object of no known kind and no
// pod template, built from the fields it holds; nil when it holds none of
// use.
func genericFieldsProfile(obj map[string]any, group, kind string) *profile {
	g := &fieldSearch{}
	for _, k := range sortedKeys(obj) {
		if k != "metadata" && k != "status" && k != "apiVersion" && k != "kind" && plainKey(k) {
			g.walk(obj[k], []string{k}, 1)
		}
	}
	if len(g.fields) == 0 && len(g.comps) == 0 {
		return nil
	}
	p := &profile{group: group, kind: kind, workload: true, owner: true, versions: map[string]bool{}}
	if spec, ok := obj["spec"].(map[string]any); ok && len(g.comps) == 0 && hasAny(spec, selectorKeys) {
		p.workload, p.note = false, "selects workloads elsewhere (a router's or a policy's object), not a workload"
		return p
	}
	var err error
	if p.fields, err = compileFields("generic fields", g.fields); err != nil {
		return nil
	}
	for _, cs := range g.comps {
		c, err := compileComponent(cs)
		if err != nil {
			continue
		}
		p.components = append(p.components, c)
	}
	return p
}

// fieldSearch gathers, in document order, the fields and container-shaped
// maps of one object.
type fieldSearch struct {
	fields []fieldSpec
	comps  []componentSpec
}

func (g *fieldSearch) full() bool { return len(g.fields)+len(g.comps) >= maxGenericFields }

func (g *fieldSearch) walk(v any, at []string, depth int) {
	if depth > maxGenericDepth || g.full() {
		return
	}
	switch x := v.(type) {
	case map[string]any:
		g.mapFacts(x, at)
		for _, k := range sortedKeys(x) {
			if plainKey(k) {
				g.walk(x[k], append(at, k), depth+1)
			}
		}
	case []any:
		for i, item := range x {
			g.walk(item, append(at, strconv.Itoa(i)), depth+1)
		}
	}
}

// mapFacts reads one map: a container, the model and engine values of
// its keys.
func (g *fieldSearch) mapFacts(m map[string]any, at []string) {
	path := strings.Join(at, ".")
	container := false
	if img, _ := m["image"].(string); img != "" && hasAny(m, containerKeys) {
		g.comps = append(g.comps, containerComponent(m, path, at))
		container = true
	}
	engine := g.valueFacts(m, path, container)
	if !container {
		g.acceleratorCounts(m, path)
	}
	if engine {
		g.versionFacts(m, path)
	}
}

// valueFacts records the map's string values that name a model, an
// engine or an accelerator, and reports whether one named an engine.
func (g *fieldSearch) valueFacts(m map[string]any, path string, container bool) (engine bool) {
	for _, k := range sortedKeys(m) {
		s, ok := m[k].(string)
		if !ok || s == "" || len(s) > 512 || !plainKey(k) {
			continue
		}
		f := fold(k)
		switch {
		case modelKeys[f] && modelValue.MatchString(s) && (f != "storageuri" || schemeValue.MatchString(s)):
			g.fields = append(g.fields, fieldSpec{Name: fieldModelURI, Path: path + "." + k})
		case engineKeys[f] && len(s) <= 64 && !container && !genericRoles[strings.ToLower(s)]:
			// A container's type is its role; a role names no engine.
			g.fields = append(g.fields, fieldSpec{Name: fieldEngineHint, Path: path + "." + k})
			engine = true
		case acceleratorKeys[f] && !container && s != "0" && len(s) <= 64:
			g.fields = append(g.fields, fieldSpec{Name: fieldAccelerator, Path: path + "." + k})
		}
	}
	return engine
}

// acceleratorCounts records the accelerator keys of a map that is not a
// container whose value is a number above zero.
func (g *fieldSearch) acceleratorCounts(m map[string]any, path string) {
	for _, k := range sortedKeys(m) {
		if positive(m[k]) && acceleratorKeys[fold(k)] && plainKey(k) {
			g.fields = append(g.fields, fieldSpec{Name: fieldAccelerator, Path: path + "." + k})
		}
	}
}

// versionFacts records the version keys of a map that names an engine.
func (g *fieldSearch) versionFacts(m map[string]any, path string) {
	for _, k := range sortedKeys(m) {
		if s, ok := m[k].(string); ok && versionKeys[fold(k)] && s != "" && len(s) <= 64 && plainKey(k) {
			g.fields = append(g.fields, fieldSpec{Name: fieldEngineVersion, Path: path + "." + k})
		}
	}
}

// containerComponent is a component of the one container the map at path
// (at) is, named and given a role by its type, role or name key.
func containerComponent(m map[string]any, path string, at []string) componentSpec {
	name := genericName(at)
	for _, k := range []string{"role", "type", "name"} {
		if s, ok := m[k].(string); ok && s != "" && plainKey(s) {
			name = s
			break
		}
	}
	cs := componentSpec{Path: path, Name: name,
		Containers: []containerSpec{{Image: []string{"image"}, Locator: "image", Name: name, Args: "args", Command: "command", Env: "env", Resources: "resources"}}}
	if genericRoles[strings.ToLower(name)] {
		cs.Roles = []string{strings.ToLower(name)}
	}
	return cs
}

// positive reports a number above zero.
func positive(v any) bool {
	switch x := v.(type) {
	case int:
		return x > 0
	case int32:
		return x > 0
	case int64:
		return x > 0
	case float64:
		return x > 0
	}
	return false
}

func hasAny(m map[string]any, keys []string) bool {
	for _, k := range keys {
		if _, ok := m[k]; ok {
			return true
		}
	}
	return false
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// set is the set of xs.
func set(xs []string) map[string]bool {
	m := make(map[string]bool, len(xs))
	for _, x := range xs {
		m[x] = true
	}
	return m
}
