package collector

import (
	_ "embed"
	"fmt"
	"os"

	"github.com/bomstream/bomstream/config"
)

//go:embed profiles.yaml
var builtinProfiles []byte

// profileFile is the YAML shape of profiles.yaml and of Config.ProfilesFile.
type profileFile struct {
	Profiles []profileSpec `yaml:"profiles"`
}

type profileSpec struct {
	Group         string          `yaml:"group"`
	Kind          string          `yaml:"kind"`
	Versions      []string        `yaml:"versions"`
	Workload      bool            `yaml:"workload"`
	Owner         *bool           `yaml:"owner"`
	ClusterScoped bool            `yaml:"clusterScoped"`
	Note          string          `yaml:"note"`
	Fields        []fieldSpec     `yaml:"fields"`
	Links         []linkSpec      `yaml:"links"`
	Bound         []boundSpec     `yaml:"bound"`
	Claims        []claimSpec     `yaml:"claims"`
	Components    []componentSpec `yaml:"components"`
}

type componentSpec struct {
	Path           string          `yaml:"path"`
	Name           string          `yaml:"name"`
	NameFrom       []string        `yaml:"nameFrom"`
	NameSuffix     string          `yaml:"nameSuffix"`
	Roles          []string        `yaml:"roles"`
	RoleFields     []string        `yaml:"roleFields"`
	RolesWhen      []roleRuleSpec  `yaml:"rolesWhen"`
	Labels         string          `yaml:"labels"`
	EnvFromSecrets []string        `yaml:"envFromSecrets"`
	Volumes        string          `yaml:"volumes"`
	NodeSelector   []string        `yaml:"nodeSelector"`
	Containers     []containerSpec `yaml:"containers"`
	Fields         []fieldSpec     `yaml:"fields"`
}

type roleRuleSpec struct {
	Present string   `yaml:"present"`
	Absent  string   `yaml:"absent"`
	Roles   []string `yaml:"roles"`
}

type containerSpec struct {
	List     string   `yaml:"list"`
	Single   string   `yaml:"single"`
	Image    []string `yaml:"image"`
	ImageSep string   `yaml:"imageSep"`
	Init     bool     `yaml:"init"`
	Name     string   `yaml:"name"`
	NameFrom string   `yaml:"nameFrom"`
	Locator  string   `yaml:"locator"`
	Env      string   `yaml:"env"`
	EnvMap   string   `yaml:"envMap"`
	Command  string   `yaml:"command"`
	Args     string   `yaml:"args"`
	When     string   `yaml:"when"`
	Optional bool     `yaml:"optional"`
	// Resources is a path (from the component) to the resource
	// requirements an operator gives the container (a NIMService's
	// spec.resources); a container object's own resources are always read.
	Resources string `yaml:"resources"`
	// Accelerators are an operator's short forms of accelerator requests.
	Accelerators []acceleratorSpec `yaml:"accelerators"`
}

// acceleratorSpec: the container runs on the accelerator Name (or the one
// the value at NameFrom names) when the quantity at Path is present and
// not zero (a Dynamo service's resources.limits.gpu); or on the extended
// resources that are the keys of the map at Keys.
type acceleratorSpec struct {
	Path     string `yaml:"path"`
	Name     string `yaml:"name"`
	NameFrom string `yaml:"nameFrom"`
	Keys     string `yaml:"keys"`
}

type fieldSpec struct {
	Name string `yaml:"name"`
	Path string `yaml:"path"`
	// Value: "key" takes the key the last wildcard matched instead of the
	// value; "env" reads a map of env variables, one field "NAME=value"
	// per variable whose value the env allow-list keeps.
	Value string `yaml:"value"`
	// YAML: the value at Path is a YAML (or JSON) document held in a
	// string (a Ray serveConfigV2, a ConfigMap's data); the field takes the
	// scalars this path reaches inside it.
	YAML string `yaml:"yaml"`
}

// profile is a compiled profileSpec.
type profile struct {
	group, kind   string
	versions      map[string]bool
	workload      bool
	owner         bool
	clusterScoped bool
	note          string
	fields        []fieldRule
	links         []linkRule
	bound         []boundRule
	claims        []claimRule
	components    []componentRule
}

type componentRule struct {
	path           path
	name           string
	nameFrom       []nameSource
	nameSuffix     string
	roles          []string
	roleFields     []path
	rolesWhen      []roleRule
	labels         *path
	envFromSecrets []path
	volumes        *path
	nodeSelector   []path
	containers     []containerRule
	fields         []fieldRule
}

type nameSource struct {
	key  bool
	path path
}

type roleRule struct {
	path    path
	present bool
	roles   []string
}

type containerRule struct {
	list, single *path
	image        []path
	imageSep     string
	init         bool
	name         string
	nameFrom     *path
	locator      *path
	env          *path
	envMap       *path
	command      *path
	args         *path
	when         *path
	optional     bool
	resources    *path
	accelerators []acceleratorRule
}

type acceleratorRule struct {
	path     path
	name     string
	nameFrom *path
	keys     *path
}

type fieldRule struct {
	name    string
	path    path
	fromKey bool
	// env: the value is a map of env variables (a Ray Serve app's
	// runtime_env.env_vars); each allow-listed one is a field "NAME=value".
	env  bool
	yaml *path // inside the YAML document the value at path holds
}

type gk struct{ group, kind string }

// loadProfiles reads the built-in table and, when file is set, the user's
// profiles, which replace built-in ones of the same group and kind.
func loadProfiles(file string) (map[gk]*profile, error) {
	out := map[gk]*profile{}
	if err := addProfiles(out, "profiles.yaml (built in)", builtinProfiles); err != nil {
		return nil, err
	}
	if file == "" {
		return out, nil
	}
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("load profiles: %w", err)
	}
	if err := addProfiles(out, file, data); err != nil {
		return nil, err
	}
	return out, nil
}

func addProfiles(into map[gk]*profile, file string, data []byte) error {
	var pf profileFile
	if _, err := config.Decode(data, &pf); err != nil {
		return fmt.Errorf("load profiles %s: %w", file, err)
	}
	seen := map[gk]bool{}
	for i, ps := range pf.Profiles {
		p, err := compileProfile(ps)
		if err != nil {
			return fmt.Errorf("load profiles %s: profiles[%d] (%s %s): %w", file, i, ps.Group, ps.Kind, err)
		}
		key := gk{p.group, p.kind}
		if seen[key] {
			return fmt.Errorf("load profiles %s: profiles[%d]: group %q kind %q listed twice", file, i, ps.Group, ps.Kind)
		}
		seen[key] = true
		into[key] = p
	}
	return nil
}

func compileProfile(ps profileSpec) (*profile, error) {
	if ps.Kind == "" {
		return nil, fmt.Errorf("kind: empty")
	}
	p := &profile{
		group:         ps.Group,
		kind:          ps.Kind,
		versions:      map[string]bool{},
		workload:      ps.Workload,
		owner:         ps.Workload,
		clusterScoped: ps.ClusterScoped,
		note:          ps.Note,
	}
	if ps.Owner != nil {
		p.owner = *ps.Owner
	}
	for _, v := range ps.Versions {
		if v == "" {
			return nil, fmt.Errorf("versions: empty version")
		}
		p.versions[v] = true
	}
	if !ps.Workload && len(ps.Components) > 0 {
		return nil, fmt.Errorf("components: set for a kind that is not a workload")
	}
	if ps.Workload && len(ps.Components) == 0 {
		return nil, fmt.Errorf("components: a workload kind needs at least one")
	}
	var err error
	if p.fields, err = compileFields("fields", ps.Fields); err != nil {
		return nil, err
	}
	for i, ls := range ps.Links {
		l, err := compileLink(ls)
		if err != nil {
			return nil, fmt.Errorf("links[%d].%w", i, err)
		}
		p.links = append(p.links, l)
	}
	for i, bs := range ps.Bound {
		b, err := compileBound(bs)
		if err != nil {
			return nil, fmt.Errorf("bound[%d].%w", i, err)
		}
		p.bound = append(p.bound, b)
	}
	for i, cs := range ps.Claims {
		c, err := compileClaim(cs)
		if err != nil {
			return nil, fmt.Errorf("claims[%d].%w", i, err)
		}
		p.claims = append(p.claims, c)
	}
	for i, cs := range ps.Components {
		c, err := compileComponent(cs)
		if err != nil {
			return nil, fmt.Errorf("components[%d].%w", i, err)
		}
		p.components = append(p.components, c)
	}
	return p, nil
}

func compileFields(where string, specs []fieldSpec) ([]fieldRule, error) {
	var out []fieldRule
	for i, fs := range specs {
		if fs.Name == "" {
			return nil, fmt.Errorf("%s[%d].name: empty", where, i)
		}
		p, err := compilePath(fs.Path)
		if err != nil {
			return nil, fmt.Errorf("%s[%d].path: %w", where, i, err)
		}
		r := fieldRule{name: fs.Name, path: p}
		if r.yaml, err = optionalPath("yaml", fs.YAML); err != nil {
			return nil, fmt.Errorf("%s[%d].%w", where, i, err)
		}
		if r.yaml != nil && (r.yaml.up > 0 || r.yaml.absolute) {
			return nil, fmt.Errorf("%s[%d].yaml: %q must be a plain path into the document", where, i, fs.YAML)
		}
		switch fs.Value {
		case "":
		case "key":
			r.fromKey = true
		case "env":
			r.env = true
		default:
			return nil, fmt.Errorf("%s[%d].value: %q is not \"key\", \"env\" or empty", where, i, fs.Value)
		}
		out = append(out, r)
	}
	return out, nil
}

func compileComponent(cs componentSpec) (componentRule, error) {
	var c componentRule
	var err error
	if c.path, err = compilePath(cs.Path); err != nil {
		return c, fmt.Errorf("path: %w", err)
	}
	if c.path.up > 0 {
		return c, fmt.Errorf("path: %q cannot climb above the object", cs.Path)
	}
	c.path.absolute = true
	c.name, c.nameSuffix = cs.Name, cs.NameSuffix
	for i, nf := range cs.NameFrom {
		if nf == "key" {
			c.nameFrom = append(c.nameFrom, nameSource{key: true})
			continue
		}
		p, err := compilePath(nf)
		if err != nil {
			return c, fmt.Errorf("nameFrom[%d]: %w", i, err)
		}
		c.nameFrom = append(c.nameFrom, nameSource{path: p})
	}
	if c.name == "" && len(c.nameFrom) == 0 {
		return c, fmt.Errorf("name: set name or nameFrom")
	}
	for i, r := range cs.Roles {
		if r == "" {
			return c, fmt.Errorf("roles[%d]: empty", i)
		}
	}
	c.roles = cs.Roles
	if c.roleFields, err = compilePaths("roleFields", cs.RoleFields); err != nil {
		return c, err
	}
	for i, rw := range cs.RolesWhen {
		if (rw.Present == "") == (rw.Absent == "") {
			return c, fmt.Errorf("rolesWhen[%d]: set exactly one of present, absent", i)
		}
		if len(rw.Roles) == 0 {
			return c, fmt.Errorf("rolesWhen[%d].roles: empty", i)
		}
		raw := rw.Present + rw.Absent
		p, err := compilePath(raw)
		if err != nil {
			return c, fmt.Errorf("rolesWhen[%d]: %w", i, err)
		}
		c.rolesWhen = append(c.rolesWhen, roleRule{path: p, present: rw.Present != "", roles: rw.Roles})
	}
	if c.labels, err = optionalPath("labels", cs.Labels); err != nil {
		return c, err
	}
	if c.volumes, err = optionalPath("volumes", cs.Volumes); err != nil {
		return c, err
	}
	if c.nodeSelector, err = compilePaths("nodeSelector", cs.NodeSelector); err != nil {
		return c, err
	}
	if c.envFromSecrets, err = compilePaths("envFromSecrets", cs.EnvFromSecrets); err != nil {
		return c, err
	}
	for i, ct := range cs.Containers {
		r, err := compileContainer(ct)
		if err != nil {
			return c, fmt.Errorf("containers[%d].%w", i, err)
		}
		c.containers = append(c.containers, r)
	}
	if c.fields, err = compileFields("fields", cs.Fields); err != nil {
		return c, err
	}
	return c, nil
}

func compileContainer(cs containerSpec) (containerRule, error) {
	var r containerRule
	set := 0
	for _, s := range []bool{cs.List != "", cs.Single != "", len(cs.Image) > 0} {
		if s {
			set++
		}
	}
	if set != 1 {
		return r, fmt.Errorf("list: set exactly one of list, single, image")
	}
	var err error
	if r.list, err = optionalPath("list", cs.List); err != nil {
		return r, err
	}
	if r.single, err = optionalPath("single", cs.Single); err != nil {
		return r, err
	}
	for i, ip := range cs.Image {
		p, err := compilePath(ip)
		if err != nil {
			return r, fmt.Errorf("image[%d]: %w", i, err)
		}
		r.image = append(r.image, p)
	}
	synth := len(cs.Image) > 0
	for name, v := range map[string]string{"env": cs.Env, "envMap": cs.EnvMap, "command": cs.Command, "args": cs.Args, "locator": cs.Locator, "when": cs.When, "nameFrom": cs.NameFrom, "imageSep": cs.ImageSep} {
		if v != "" && !synth {
			return r, fmt.Errorf("%s: only for a synthesized container (image)", name)
		}
	}
	if cs.Optional && !synth {
		return r, fmt.Errorf("optional: only for a synthesized container (image)")
	}
	if synth && cs.Name == "" {
		return r, fmt.Errorf("name: a synthesized container needs a name")
	}
	r.imageSep, r.init, r.name, r.optional = cs.ImageSep, cs.Init, cs.Name, cs.Optional
	for _, f := range []struct {
		dst  **path
		name string
		raw  string
	}{
		{&r.nameFrom, "nameFrom", cs.NameFrom},
		{&r.locator, "locator", cs.Locator},
		{&r.env, "env", cs.Env},
		{&r.envMap, "envMap", cs.EnvMap},
		{&r.command, "command", cs.Command},
		{&r.args, "args", cs.Args},
		{&r.when, "when", cs.When},
		{&r.resources, "resources", cs.Resources},
	} {
		if *f.dst, err = optionalPath(f.name, f.raw); err != nil {
			return r, err
		}
	}
	if r.accelerators, err = compileAccelerators(cs.Accelerators); err != nil {
		return r, err
	}
	if r.locator != nil && r.locator.segs != nil {
		for _, s := range r.locator.segs {
			if s.any || s.alts != nil {
				return r, fmt.Errorf("locator: %q must not contain wildcards", cs.Locator)
			}
		}
	}
	return r, nil
}

// compileAccelerators checks a container rule's accelerator short forms.
func compileAccelerators(specs []acceleratorSpec) ([]acceleratorRule, error) {
	var out []acceleratorRule
	for i, as := range specs {
		var a acceleratorRule
		var err error
		if a.keys, err = optionalPath(fmt.Sprintf("accelerators[%d].keys", i), as.Keys); err != nil {
			return nil, err
		}
		switch {
		case a.keys != nil && (as.Path != "" || as.Name != "" || as.NameFrom != ""):
			return nil, fmt.Errorf("accelerators[%d]: keys stands alone (no path, name or nameFrom)", i)
		case a.keys == nil && (as.Path == "" || as.Name == ""):
			return nil, fmt.Errorf("accelerators[%d]: set keys, or path and name", i)
		}
		if a.keys == nil {
			if a.path, err = compilePath(as.Path); err != nil {
				return nil, fmt.Errorf("accelerators[%d].path: %w", i, err)
			}
		}
		a.name = as.Name
		if a.nameFrom, err = optionalPath(fmt.Sprintf("accelerators[%d].nameFrom", i), as.NameFrom); err != nil {
			return nil, err
		}
		out = append(out, a)
	}
	return out, nil
}

// compilePaths compiles a list of paths; name names the list in errors.
func compilePaths(name string, raws []string) ([]path, error) {
	var out []path
	for i, raw := range raws {
		p, err := compilePath(raw)
		if err != nil {
			return nil, fmt.Errorf("%s[%d]: %w", name, i, err)
		}
		out = append(out, p)
	}
	return out, nil
}

func optionalPath(name, raw string) (*path, error) {
	if raw == "" {
		return nil, nil
	}
	p, err := compilePath(raw)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return &p, nil
}
