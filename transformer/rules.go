package transformer

import (
	_ "embed"
	"fmt"
	"os"
	"regexp"
	"sort"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/bomstream/bomstream/schemas"
)

//go:embed rules.yaml
var defaultRules []byte

// RuleSet is the YAML shape of the detection rules (rules.yaml and a user
// override file).
type RuleSet struct {
	Runtimes     []RuntimeRule `json:"runtimes"`
	Kinds        []KindRule    `json:"kinds,omitempty"`
	NotRuntimes  []NotRuntime  `json:"notRuntimes,omitempty"`
	Roles        []RoleRule    `json:"roles,omitempty"`
	Settings     []SettingRule `json:"settings,omitempty"`
	Models       ModelRules    `json:"models"`
	ArgsEnv      []string      `json:"argsEnv,omitempty"`
	BooleanFlags []string      `json:"booleanFlags,omitempty"`
	// KeepValues are flags whose values rules read beyond the flag lists of
	// settings, models, roles and runtimes (launch patterns, role patterns,
	// hints), and ports. See Arguments.
	KeepValues []string `json:"keepValues,omitempty"`
	// Defaults are the runtimes an operator runs when its object names
	// none (KAITO's vLLM, Ray Serve LLM's vLLM).
	Defaults []DefaultRuntime `json:"defaults,omitempty"`
	// Downloads are the commands that fetch a model into a directory a
	// server then reads (huggingface-cli download, git clone, aws s3 cp,
	// ...): the model the server loads from that directory is the source.
	Downloads []DownloadRule `json:"downloads,omitempty"`
}

// DefaultRuntime: when a field named Field is present (and, with Values,
// matches one of them) and none named one of Unless is, the workload runs
// Runtime, inferred.
type DefaultRuntime struct {
	Field   string   `json:"field"`
	Values  []string `json:"values,omitempty"`
	Unless  []string `json:"unless,omitempty"`
	Runtime string   `json:"runtime"`
}

// DownloadRule says how one download command names its source, its
// destination and the revision it fetches. It matches an invocation by its
// head (Command) or, for a container that gives only arguments, by its
// image (Image). Source is a regex the source word matches (the first
// word past the head that does), or "positional": the first positional
// past Subcommands, a Hugging Face id when HF is set. The destination is
// the value of one of DestFlags, else the first positional after the
// source. Code reads Python calls in the value of a flag (python -c) instead.
type DownloadRule struct {
	Name          string    `json:"name"`
	Command       string    `json:"command,omitempty"`
	Image         string    `json:"image,omitempty"`
	Subcommands   []string  `json:"subcommands,omitempty"`
	Source        string    `json:"source,omitempty"`
	HF            bool      `json:"hf,omitempty"`
	DestFlags     []string  `json:"destFlags,omitempty"`
	RevisionFlags []string  `json:"revisionFlags,omitempty"`
	Code          *CodeRule `json:"code,omitempty"`
}

// CodeRule reads Python calls (snapshot_download(...)) in the value of Flag:
// the keyword arguments (or the first positional) that name the source,
// the revision and the destination.
type CodeRule struct {
	Flag     string   `json:"flag"`
	Calls    []string `json:"calls"`
	Source   string   `json:"source"`
	Revision string   `json:"revision,omitempty"`
	Dest     []string `json:"dest,omitempty"`
}

// Arguments declares what the rules read of a command line: every flag whose
// value some rule reads, the flags that never take a value, and the env vars
// read as arguments. The collector keeps only these values (schemas/arguments.json
// is this declaration for the built-in rules).
func (rs RuleSet) Arguments() schemas.Arguments {
	values := map[string]bool{}
	add := func(fs []string) {
		for _, f := range fs {
			values[f] = true
		}
	}
	for _, s := range rs.Settings {
		add(s.Flags)
	}
	m := rs.Models
	add(m.Flags)
	add(m.HFFlags)
	add(m.RevisionFlags)
	for _, rt := range rs.Runtimes {
		add(rt.ModelFlags)
		if rt.BackendFlag != nil {
			add(rt.BackendFlag.Flags)
		}
	}
	for _, ro := range rs.Roles {
		if ro.Flag != "" && ro.Value != "" {
			values[ro.Flag] = true
		}
	}
	add(m.ListFlags)
	for _, d := range rs.Downloads {
		add(d.DestFlags)
		add(d.RevisionFlags)
	}
	add(rs.KeepValues)
	env := map[string]bool{}
	for _, l := range [][]string{m.Env, m.HFEnv, m.RevisionEnv, m.ListEnv} {
		for _, e := range l {
			env[e] = true
		}
	}
	for _, s := range rs.Settings {
		for _, e := range s.Env {
			env[e] = true
		}
	}
	for _, rt := range rs.Runtimes {
		for _, e := range rt.Env {
			env[e.Name] = true
		}
	}
	calls, keywords := map[string]bool{}, map[string]bool{}
	for _, d := range rs.Downloads {
		if c := d.Code; c != nil {
			for _, n := range c.Calls {
				calls[n] = true
			}
			keywords[c.Source] = true
			if c.Revision != "" {
				keywords[c.Revision] = true
			}
			for _, k := range c.Dest {
				keywords[k] = true
			}
		}
	}
	var sig schemas.ServingSignature
	images, commands, flags := map[string]bool{}, map[string]bool{}, map[string]bool{}
	for _, rt := range rs.Runtimes {
		for _, p := range rt.Images {
			images[p.Pattern] = true
		}
		for _, ps := range [][]PatternRule{rt.Commands, rt.Hints} {
			for _, p := range ps {
				commands[strings.TrimPrefix(p.Pattern, "^")] = true
			}
		}
		for _, f := range append(append([]string(nil), rt.EngineFlags...), rt.ModelFlags...) {
			flags[f] = true
		}
	}
	for _, f := range append(append([]string(nil), m.Flags...), m.HFFlags...) {
		flags[f] = true
	}
	sig.Images, sig.Commands, sig.Flags = sortedKeys(images), sortedKeys(commands), sortedKeys(flags)
	sig.Env = sortedKeys(set(append(append(append([]string(nil), m.Env...), m.HFEnv...), m.ListEnv...)))
	return schemas.Arguments{
		Serving:        sig,
		ValueFlags:     sortedKeys(values),
		BooleanFlags:   sortedKeys(set(rs.BooleanFlags)),
		ArgsEnv:        sortedKeys(set(rs.ArgsEnv)),
		Env:            sortedKeys(env),
		PythonCalls:    sortedKeys(calls),
		PythonKeywords: sortedKeys(keywords),
	}
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// RuntimeRule says how one serving engine shows itself.
type RuntimeRule struct {
	Name        string         `json:"name"`
	Title       string         `json:"title,omitempty"`
	PURL        string         `json:"purl,omitempty"`
	Images      []PatternRule  `json:"images,omitempty"`
	Commands    []PatternRule  `json:"commands,omitempty"`
	ArgsOnly    []PatternRule  `json:"argsOnly,omitempty"`
	Hints       []PatternRule  `json:"hints,omitempty"`
	Subcommands []string       `json:"subcommands,omitempty"`
	ModelFlags  []string       `json:"modelFlags,omitempty"`
	EngineFlags []string       `json:"engineFlags,omitempty"`
	Fields      []FieldRule    `json:"fields,omitempty"`
	Kinds       []KindClaim    `json:"kinds,omitempty"`
	Env         []EnvRule      `json:"env,omitempty"`
	Wraps       []string       `json:"wraps,omitempty"`
	BackendFlag *BackendFlag   `json:"backendFlag,omitempty"`
	Default     *DefaultEngine `json:"defaultBackend,omitempty"`
	// VersionFields are kind fields whose value is this runtime's version
	// (a RayService's rayVersion), declared.
	VersionFields []string `json:"versionFields,omitempty"`
	// Clients are launch patterns of the engine's own client commands
	// (vllm bench, vllm chat): a container that runs one does not serve,
	// whatever its image, and the models it names are another server's.
	Clients []PatternRule `json:"clients,omitempty"`
}

// PatternRule is one regex; Model "positional" takes the first positional word
// (past the rule's subcommands) as the model, "positionals" every one; Backend names the engine a
// wrapper runs when this pattern matches. For an image pattern, Tag says
// what the tag holds: "" the engine's version (ParseVersion), "none" no
// version of the engine (a vendor's own release), or a regex whose
// "version" group is the engine's version. Confidence overrides the
// pattern's usual one (an args-only launch that only the image's
// entrypoint makes, or a hint that names the program run).
type PatternRule struct {
	Pattern    string `json:"pattern"`
	Model      string `json:"model,omitempty"`
	Backend    string `json:"backend,omitempty"`
	Tag        string `json:"tag,omitempty"`
	Confidence string `json:"confidence,omitempty"`
}

// FieldRule matches a kind field's value (case-insensitive regexes).
type FieldRule struct {
	Name   string   `json:"name"`
	Values []string `json:"values"`
}

// KindClaim: objects of Kind run the engine.
type KindClaim struct {
	Kind       string `json:"kind"`
	Confidence string `json:"confidence"`
}

// EnvRule: a truthy env var selects a backend of a wrapper.
type EnvRule struct {
	Name    string `json:"name"`
	Backend string `json:"backend"`
}

// BackendFlag maps the values of a wrapper's backend flag to engines ("" = auto).
type BackendFlag struct {
	Flags  []string          `json:"flags"`
	Values map[string]string `json:"values"`
}

// DefaultEngine is the backend a wrapper picks when nothing says, for
// components with one of Roles.
type DefaultEngine struct {
	Backend string   `json:"backend"`
	Roles   []string `json:"roles,omitempty"`
}

// KindRule marks kinds that are not serving workloads: "template" (skipped) or
// "cache" (models only, never a runtime).
type KindRule struct {
	Kind    string `json:"kind"`
	Purpose string `json:"purpose"`
}

// NotRuntime is an image that imitates an engine.
type NotRuntime struct {
	Pattern   string `json:"pattern"`
	Name      string `json:"name"`
	Simulates string `json:"simulates,omitempty"`
}

// RoleRule refines a component's role from a flag (optionally with a value), a
// regex on the arguments, or a pod-template label.
type RoleRule struct {
	Flag    string   `json:"flag,omitempty"`
	Value   string   `json:"value,omitempty"`
	Pattern string   `json:"pattern,omitempty"`
	Role    string   `json:"role,omitempty"`
	Label   string   `json:"label,omitempty"`
	Values  []string `json:"values,omitempty"`
}

// SettingRule names an engine setting and where it is read.
type SettingRule struct {
	Name   string   `json:"name"`
	Flags  []string `json:"flags,omitempty"`
	Env    []string `json:"env,omitempty"`
	Fields []string `json:"fields,omitempty"`
}

// ModelRules says where models are named.
type ModelRules struct {
	Flags           []string `json:"flags,omitempty"`
	HFFlags         []string `json:"hfFlags,omitempty"`
	Env             []string `json:"env,omitempty"`
	HFEnv           []string `json:"hfEnv,omitempty"`
	RevisionFlags   []string `json:"revisionFlags,omitempty"`
	RevisionEnv     []string `json:"revisionEnv,omitempty"`
	Fields          []string `json:"fields,omitempty"`
	Ignore          []string `json:"ignore,omitempty"`
	NIMImage        string   `json:"nimImage,omitempty"`
	NIMImageGeneric []string `json:"nimImageGeneric,omitempty"`
	// Images are other images that bake a model in and are named after it
	// (a (?P<model>...) group), unless an exclude pattern matches.
	Images []ImageModel `json:"images,omitempty"`
	// AdapterFields are fields naming LoRA adapters: models marked
	// bomstream:model:adapter.
	AdapterFields []string `json:"adapterFields,omitempty"`
	// ImageFields are fields whose value is an image reference holding a
	// model (an adapter image): models oci://<reference>.
	ImageFields []string `json:"imageFields,omitempty"`
	// ListFlags take a list of models: their value and the words after it
	// up to the next flag, each "[NAME=]LOCATION" ("all" is none).
	ListFlags []string `json:"listFlags,omitempty"`
	// ListEnv hold several models separated by ";", "," or spaces.
	ListEnv []string `json:"listEnv,omitempty"`
	// ClientFlags and ClientEnv (regexes on names) mark a container that
	// talks to a model server elsewhere (--target, --base-url,
	// OPENAI_BASE_URL): the models it names are not its own, so they make
	// no BOM by themselves.
	ClientFlags []string `json:"clientFlags,omitempty"`
	ClientEnv   []string `json:"clientEnv,omitempty"`
	// Pairs are fields that name a model as served (Name) unless a field
	// Source beside it (the same parent in the document) says where the
	// model comes from: then Source is the model and Name its served name.
	Pairs []FieldPair `json:"pairs,omitempty"`
	// Presets map the values of a field to the Hugging Face ids they stand
	// for (an operator's catalog of preset names).
	Presets map[string]map[string]string `json:"presets,omitempty"`
}

// FieldPair is a served name and the source of the same model.
type FieldPair struct {
	Name   string `json:"name"`
	Source string `json:"source"`
}

// ImageModel names the model an image bakes in.
type ImageModel struct {
	Pattern string   `json:"pattern"`
	Exclude []string `json:"exclude,omitempty"`
}

// RulesArguments is the argument declaration (RuleSet.Arguments) of the
// built-in rules merged with rulesFile, if set: what the collector must keep
// for these rules to see the values they read.
func RulesArguments(rulesFile string) (schemas.Arguments, error) {
	rs, err := loadRules(rulesFile)
	if err != nil {
		return schemas.Arguments{}, err
	}
	return rs.Arguments(), nil
}

// loadRules parses the embedded rules and merges the override file, if any.
func loadRules(overrideFile string) (RuleSet, error) {
	var rs RuleSet
	if err := yaml.UnmarshalStrict(defaultRules, &rs); err != nil {
		return rs, fmt.Errorf("parse built-in rules: %w", err)
	}
	if overrideFile == "" {
		return rs, nil
	}
	b, err := os.ReadFile(overrideFile)
	if err != nil {
		return rs, fmt.Errorf("read rules %s: %w", overrideFile, err)
	}
	var user RuleSet
	if err := yaml.UnmarshalStrict(b, &user); err != nil {
		return rs, fmt.Errorf("parse rules %s: %w", overrideFile, err)
	}
	return mergeRules(rs, user), nil
}

// mergeRules replaces runtimes by name (or appends new ones) and appends the lists.
func mergeRules(base, user RuleSet) RuleSet {
	for _, u := range user.Runtimes {
		replaced := false
		for i := range base.Runtimes {
			if base.Runtimes[i].Name == u.Name {
				base.Runtimes[i], replaced = u, true
			}
		}
		if !replaced {
			base.Runtimes = append(base.Runtimes, u)
		}
	}
	base.Kinds = append(base.Kinds, user.Kinds...)
	base.NotRuntimes = append(base.NotRuntimes, user.NotRuntimes...)
	base.Roles = append(base.Roles, user.Roles...)
	base.Settings = append(base.Settings, user.Settings...)
	base.BooleanFlags = append(base.BooleanFlags, user.BooleanFlags...)
	base.ArgsEnv = append(base.ArgsEnv, user.ArgsEnv...)
	base.KeepValues = append(base.KeepValues, user.KeepValues...)
	base.Defaults = append(base.Defaults, user.Defaults...)
	base.Downloads = append(base.Downloads, user.Downloads...)
	m, u := &base.Models, user.Models
	m.Flags = append(m.Flags, u.Flags...)
	m.HFFlags = append(m.HFFlags, u.HFFlags...)
	m.Env = append(m.Env, u.Env...)
	m.HFEnv = append(m.HFEnv, u.HFEnv...)
	m.RevisionFlags = append(m.RevisionFlags, u.RevisionFlags...)
	m.RevisionEnv = append(m.RevisionEnv, u.RevisionEnv...)
	m.Fields = append(m.Fields, u.Fields...)
	m.Ignore = append(m.Ignore, u.Ignore...)
	m.NIMImageGeneric = append(m.NIMImageGeneric, u.NIMImageGeneric...)
	m.Images = append(m.Images, u.Images...)
	m.AdapterFields = append(m.AdapterFields, u.AdapterFields...)
	m.ImageFields = append(m.ImageFields, u.ImageFields...)
	m.ListFlags = append(m.ListFlags, u.ListFlags...)
	m.ListEnv = append(m.ListEnv, u.ListEnv...)
	m.Pairs = append(m.Pairs, u.Pairs...)
	m.ClientFlags = append(m.ClientFlags, u.ClientFlags...)
	m.ClientEnv = append(m.ClientEnv, u.ClientEnv...)
	for field, presets := range u.Presets {
		if m.Presets == nil {
			m.Presets = map[string]map[string]string{}
		}
		if m.Presets[field] == nil {
			m.Presets[field] = map[string]string{}
		}
		for k, v := range presets {
			m.Presets[field][k] = v
		}
	}
	if u.NIMImage != "" {
		m.NIMImage = u.NIMImage
	}
	return base
}

// Compiled rules: every regex compiled once, every list turned into a set.

type pattern struct {
	re      *regexp.Regexp
	model   bool // positional model
	models  bool // every positional is a model
	backend string
	version int            // index of the "version" capture group, or -1
	tagNone bool           // the tag is no version of this engine
	tagRE   *regexp.Regexp // the engine's version is this regex's "version" group of the tag
	conf    string         // "" for the pattern's usual confidence
}

type fieldMatcher struct {
	name string
	res  []*regexp.Regexp
}

type runtimeRule struct {
	RuntimeRule
	images, commands, argsOnly, hints []pattern
	clients                           []pattern
	fields                            []fieldMatcher
	engineFlags, subcommands, wraps   map[string]bool
	modelFlags, versionFields         map[string]bool
	kinds                             map[string]string
	order                             int
}

type notRuntime struct {
	NotRuntime
	re *regexp.Regexp
}

type roleRule struct {
	RoleRule
	re     *regexp.Regexp
	values map[string]bool
}

type rules struct {
	runtimes []*runtimeRule
	// headWords is how many words of a command line the launch, client
	// and download patterns can look at (0: any number); the match caches
	// key on that many, so that "vllm serve" with a thousand different
	// models is one entry.
	headWords        int
	byName           map[string]*runtimeRule
	kindPurpose      map[string]string
	notRuntimes      []notRuntime
	roles            []roleRule
	settingFlag      map[string]string // flag -> property name of the setting
	settingEnv       map[string]string
	settingField     map[string]string
	modelFlags       map[string]bool
	hfFlags          map[string]bool
	modelEnv         map[string]bool
	hfEnv            map[string]bool
	revFlags         map[string]bool
	revEnv           map[string]bool
	modelFields      map[string]bool
	ignore           []*regexp.Regexp
	nimImage         *regexp.Regexp
	nimGeneric       []*regexp.Regexp
	imageModels      []imageModel
	adapterFields    map[string]bool
	booleans         map[string]bool
	argsEnv          map[string]bool
	backendFlags     map[string][]*runtimeRule // flag -> wrappers it picks the backend of
	engineFlagOwners map[string][]string       // flag -> engines it reveals
	cache            *matchCache
	fieldRules       map[string][]*runtimeRule // field name -> runtimes with a rule on it, in order
	wrappersOf       map[string][]*runtimeRule // engine -> runtimes that wrap it, in order
	envRules         map[string][]envBackend   // env name -> wrappers it selects a backend of
	versionFields    map[string][]*runtimeRule // field name -> runtimes it gives the version of
	imageFields      map[string]bool
	listFlags        map[string]bool
	listEnv          map[string]bool
	pairs            []FieldPair
	clientFlags      map[string]bool
	clientEnv        []*regexp.Regexp
	presets          map[string]map[string]string
	defaults         []defaultRuntime
	downloads        []downloadRule
}

type defaultRuntime struct {
	DefaultRuntime
	values []*regexp.Regexp
	rule   *runtimeRule
}

type downloadRule struct {
	DownloadRule
	command, image, source *regexp.Regexp
	sourcePositional       bool
	sourceImage            bool // the container's own image is the source
	subcommands, dest, rev map[string]bool
}

type imageModel struct {
	re      *regexp.Regexp
	exclude []*regexp.Regexp
}

type envBackend struct {
	runtime, backend string
}

func set(xs []string) map[string]bool {
	m := make(map[string]bool, len(xs))
	for _, x := range xs {
		m[x] = true
	}
	return m
}

func compilePatterns(where string, ps []PatternRule) ([]pattern, error) {
	out := make([]pattern, 0, len(ps))
	for i, p := range ps {
		re, err := regexp.Compile(p.Pattern)
		if err != nil {
			return nil, fmt.Errorf("%s[%d]: %w", where, i, err)
		}
		c := pattern{re: re, model: p.Model == "positional" || p.Model == "positionals", models: p.Model == "positionals", backend: p.Backend, version: re.SubexpIndex("version"), conf: p.Confidence}
		switch p.Tag {
		case "":
		case "none":
			c.tagNone = true
		default:
			if c.tagRE, err = regexp.Compile(p.Tag); err != nil {
				return nil, fmt.Errorf("%s[%d].tag: %w", where, i, err)
			}
			if c.tagRE.SubexpIndex("version") < 0 {
				return nil, fmt.Errorf("%s[%d].tag: needs a (?P<version>...) group", where, i)
			}
		}
		if p.Confidence != "" && p.Confidence != confDeclared && p.Confidence != confInferred {
			return nil, fmt.Errorf("%s[%d].confidence: %q is not declared or inferred", where, i, p.Confidence)
		}
		out = append(out, c)
	}
	return out, nil
}

func compileRules(rs RuleSet) (*rules, error) {
	r := &rules{
		byName:           map[string]*runtimeRule{},
		kindPurpose:      map[string]string{},
		settingFlag:      map[string]string{},
		settingEnv:       map[string]string{},
		settingField:     map[string]string{},
		modelFlags:       set(rs.Models.Flags),
		hfFlags:          set(rs.Models.HFFlags),
		modelEnv:         set(rs.Models.Env),
		hfEnv:            set(rs.Models.HFEnv),
		revFlags:         set(rs.Models.RevisionFlags),
		revEnv:           set(rs.Models.RevisionEnv),
		modelFields:      set(rs.Models.Fields),
		adapterFields:    set(rs.Models.AdapterFields),
		booleans:         set(rs.BooleanFlags),
		argsEnv:          set(rs.ArgsEnv),
		backendFlags:     map[string][]*runtimeRule{},
		engineFlagOwners: map[string][]string{},
		cache:            &matchCache{},
		envRules:         map[string][]envBackend{},
		versionFields:    map[string][]*runtimeRule{},
		imageFields:      set(rs.Models.ImageFields),
		listFlags:        set(rs.Models.ListFlags),
		listEnv:          set(rs.Models.ListEnv),
		pairs:            rs.Models.Pairs,
		clientFlags:      set(rs.Models.ClientFlags),
		presets:          rs.Models.Presets,
	}
	for i, rt := range rs.Runtimes {
		where := "runtimes[" + rt.Name + "]"
		if rt.Name == "" {
			return nil, fmt.Errorf("runtimes[%d]: name is empty", i)
		}
		if _, dup := r.byName[rt.Name]; dup {
			return nil, fmt.Errorf("%s: duplicate name", where)
		}
		c := &runtimeRule{RuntimeRule: rt, engineFlags: set(rt.EngineFlags), subcommands: set(rt.Subcommands), wraps: set(rt.Wraps),
			modelFlags: set(rt.ModelFlags), versionFields: set(rt.VersionFields), kinds: map[string]string{}, order: i}
		var err error
		if c.images, err = compilePatterns(where+".images", rt.Images); err != nil {
			return nil, err
		}
		if c.commands, err = compilePatterns(where+".commands", rt.Commands); err != nil {
			return nil, err
		}
		if c.argsOnly, err = compilePatterns(where+".argsOnly", rt.ArgsOnly); err != nil {
			return nil, err
		}
		if c.hints, err = compilePatterns(where+".hints", rt.Hints); err != nil {
			return nil, err
		}
		if c.clients, err = compilePatterns(where+".clients", rt.Clients); err != nil {
			return nil, err
		}
		for _, f := range rt.Fields {
			fm := fieldMatcher{name: f.Name}
			for _, v := range f.Values {
				re, err := regexp.Compile("(?i)" + v)
				if err != nil {
					return nil, fmt.Errorf("%s.fields[%s]: %w", where, f.Name, err)
				}
				fm.res = append(fm.res, re)
			}
			c.fields = append(c.fields, fm)
		}
		for _, k := range rt.Kinds {
			if k.Confidence != confDeclared && k.Confidence != confInferred {
				return nil, fmt.Errorf("%s.kinds[%s]: confidence %q is not declared or inferred", where, k.Kind, k.Confidence)
			}
			c.kinds[k.Kind] = k.Confidence
		}
		if rt.BackendFlag != nil {
			for _, f := range rt.BackendFlag.Flags {
				r.backendFlags[f] = append(r.backendFlags[f], c)
			}
		}
		for _, f := range rt.EngineFlags {
			r.engineFlagOwners[f] = append(r.engineFlagOwners[f], rt.Name)
		}
		for _, e := range rt.Env {
			r.envRules[e.Name] = append(r.envRules[e.Name], envBackend{runtime: rt.Name, backend: e.Backend})
		}
		for _, f := range rt.VersionFields {
			r.versionFields[f] = append(r.versionFields[f], c)
		}
		r.runtimes = append(r.runtimes, c)
		r.byName[rt.Name] = c
	}
	for _, k := range rs.Kinds {
		if k.Purpose != "template" && k.Purpose != "cache" {
			return nil, fmt.Errorf("kinds[%s]: purpose %q is not template or cache", k.Kind, k.Purpose)
		}
		r.kindPurpose[k.Kind] = k.Purpose
	}
	for i, n := range rs.NotRuntimes {
		re, err := regexp.Compile(n.Pattern)
		if err != nil {
			return nil, fmt.Errorf("notRuntimes[%d]: %w", i, err)
		}
		r.notRuntimes = append(r.notRuntimes, notRuntime{NotRuntime: n, re: re})
	}
	for i, ro := range rs.Roles {
		rr := roleRule{RoleRule: ro, values: set(ro.Values)}
		if ro.Pattern != "" {
			re, err := regexp.Compile(ro.Pattern)
			if err != nil {
				return nil, fmt.Errorf("roles[%d]: %w", i, err)
			}
			rr.re = re
		}
		if ro.Flag == "" && ro.Pattern == "" && ro.Label == "" {
			return nil, fmt.Errorf("roles[%d]: needs flag, pattern or label", i)
		}
		r.roles = append(r.roles, rr)
	}
	for _, s := range rs.Settings {
		name := propPrefix + "runtime:" + s.Name
		for _, f := range s.Flags {
			r.settingFlag[f] = name
		}
		for _, e := range s.Env {
			r.settingEnv[e] = name
		}
		for _, f := range s.Fields {
			r.settingField[f] = name
		}
	}
	for i, p := range rs.Models.Ignore {
		re, err := regexp.Compile(p)
		if err != nil {
			return nil, fmt.Errorf("models.ignore[%d]: %w", i, err)
		}
		r.ignore = append(r.ignore, re)
	}
	if rs.Models.NIMImage != "" {
		re, err := regexp.Compile(rs.Models.NIMImage)
		if err != nil {
			return nil, fmt.Errorf("models.nimImage: %w", err)
		}
		if re.SubexpIndex("model") < 0 {
			return nil, fmt.Errorf("models.nimImage: needs a (?P<model>...) group")
		}
		r.nimImage = re
	}
	for i, p := range rs.Models.NIMImageGeneric {
		re, err := regexp.Compile(p)
		if err != nil {
			return nil, fmt.Errorf("models.nimImageGeneric[%d]: %w", i, err)
		}
		r.nimGeneric = append(r.nimGeneric, re)
	}
	for i, im := range rs.Models.Images {
		re, err := regexp.Compile(im.Pattern)
		if err != nil {
			return nil, fmt.Errorf("models.images[%d]: %w", i, err)
		}
		if re.SubexpIndex("model") < 0 {
			return nil, fmt.Errorf("models.images[%d]: needs a (?P<model>...) group", i)
		}
		c := imageModel{re: re}
		for j, x := range im.Exclude {
			xre, err := regexp.Compile(x)
			if err != nil {
				return nil, fmt.Errorf("models.images[%d].exclude[%d]: %w", i, j, err)
			}
			c.exclude = append(c.exclude, xre)
		}
		r.imageModels = append(r.imageModels, c)
	}
	r.fieldRules = map[string][]*runtimeRule{}
	r.wrappersOf = map[string][]*runtimeRule{}
	for _, rt := range r.runtimes {
		for _, w := range rt.Wraps {
			if _, ok := r.byName[w]; !ok {
				return nil, fmt.Errorf("runtimes[%s].wraps: unknown runtime %q", rt.Name, w)
			}
		}
		for _, fm := range rt.fields {
			if l := r.fieldRules[fm.name]; len(l) == 0 || l[len(l)-1] != rt {
				r.fieldRules[fm.name] = append(l, rt)
			}
		}
		for _, en := range r.runtimes {
			if rt.wraps[en.Name] {
				r.wrappersOf[en.Name] = append(r.wrappersOf[en.Name], rt)
			}
		}
	}
	for i, p := range rs.Models.ClientEnv {
		re, err := regexp.Compile(p)
		if err != nil {
			return nil, fmt.Errorf("models.clientEnv[%d]: %w", i, err)
		}
		r.clientEnv = append(r.clientEnv, re)
	}
	if err := r.compileDefaults(rs.Defaults); err != nil {
		return nil, err
	}
	if err := r.compileDownloads(rs.Downloads); err != nil {
		return nil, err
	}
	var sets [][]pattern
	for _, rt := range r.runtimes {
		sets = append(sets, rt.commands, rt.argsOnly, rt.clients)
	}
	for _, d := range r.downloads {
		if d.command != nil {
			sets = append(sets, []pattern{{re: d.command}})
		}
	}
	r.headWords = headWords(sets...)
	return r, nil
}

func (r *rules) compileDefaults(ds []DefaultRuntime) error {
	for i, d := range ds {
		rt := r.byName[d.Runtime]
		if rt == nil || d.Field == "" {
			return fmt.Errorf("defaults[%d]: needs a field and a known runtime (%q)", i, d.Runtime)
		}
		c := defaultRuntime{DefaultRuntime: d, rule: rt}
		for j, v := range d.Values {
			re, err := regexp.Compile("(?i)" + v)
			if err != nil {
				return fmt.Errorf("defaults[%d].values[%d]: %w", i, j, err)
			}
			c.values = append(c.values, re)
		}
		r.defaults = append(r.defaults, c)
	}
	return nil
}

func (r *rules) compileDownloads(ds []DownloadRule) error {
	for i, d := range ds {
		where := fmt.Sprintf("downloads[%d] (%s)", i, d.Name)
		c := downloadRule{DownloadRule: d, subcommands: set(d.Subcommands), dest: set(d.DestFlags), rev: set(d.RevisionFlags)}
		var err error
		if (d.Command == "") == (d.Image == "") {
			return fmt.Errorf("%s: set exactly one of command, image", where)
		}
		if d.Command != "" {
			if c.command, err = regexp.Compile(d.Command); err != nil {
				return fmt.Errorf("%s.command: %w", where, err)
			}
		} else if c.image, err = regexp.Compile(d.Image); err != nil {
			return fmt.Errorf("%s.image: %w", where, err)
		}
		switch {
		case d.Code != nil:
			if d.Code.Flag == "" || len(d.Code.Calls) == 0 || d.Code.Source == "" {
				return fmt.Errorf("%s.code: needs flag, calls and source", where)
			}
		case d.Source == "positional":
			c.sourcePositional = true
		case d.Source == "image":
			c.sourceImage = true
		case d.Source != "":
			if c.source, err = regexp.Compile(d.Source); err != nil {
				return fmt.Errorf("%s.source: %w", where, err)
			}
		default:
			return fmt.Errorf("%s: needs source or code", where)
		}
		r.downloads = append(r.downloads, c)
	}
	return nil
}

func (r *rules) ignoredModel(v string) bool {
	if strings.TrimSpace(v) == "" {
		return true
	}
	for _, re := range r.ignore {
		if re.MatchString(v) {
			return true
		}
	}
	return false
}

// headWords is how many words of a command line the patterns can match:
// one more than the most literal spaces in a pattern (a pattern's closing
// "( |$)" matches the end of a head cut there). A pattern that could match
// across any number of words (\s, a dot repeated, a negated class) makes it
// 0: no bound.
func headWords(sets ...[]pattern) int {
	most := 0
	for _, ps := range sets {
		for _, p := range ps {
			src := p.re.String()
			if strings.Contains(src, `\s`) || strings.Contains(src, ".*") || strings.Contains(src, ".+") ||
				strings.Contains(src, "[^") || strings.Contains(src, `\W`) || strings.Contains(src, "{") {
				return 0
			}
			most = max(most, strings.Count(src, " ")+1)
		}
	}
	return most
}
