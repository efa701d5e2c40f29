package transformer

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/bomstream/bomstream/schemas/cmdline"
)

// Compiled rules: every regex compiled once, every list turned into a set.

// pattern is a compiled PatternRule.
type pattern struct {
	re      *regexp.Regexp
	lit     string // a text every match contains (requiredLiteral), or ""
	model   bool   // positional model
	models  bool   // every positional is a model
	backend string
	version int            // index of the "version" capture group, or -1
	tagNone bool           // the tag is no version of this engine
	tagRE   *regexp.Regexp // the engine's version is this regex's "version" group of the tag
	conf    string         // "" for the pattern's usual confidence
}

// fieldMatcher is a compiled FieldRule.
type fieldMatcher struct {
	name string
	res  []*regexp.Regexp
}

// runtimeRule is a compiled RuntimeRule.
type runtimeRule struct {
	RuntimeRule
	images, commands, argsOnly, hints []pattern
	clients                           []pattern
	fields                            []fieldMatcher
	subcommands, wraps, modelFlags    map[string]bool
	kinds                             map[string]string
	ref                               string // bom-ref at no version: "runtime:" + Name
}

// notRuntime is a compiled NotRuntime.
type notRuntime struct {
	NotRuntime
	re *regexp.Regexp
}

// roleRule is a compiled RoleRule.
type roleRule struct {
	RoleRule
	re     *regexp.Regexp
	values map[string]bool
}

// rules is a compiled RuleSet.
type rules struct {
	runtimes []*runtimeRule
	// headWords is how many words of a command line the launch, client
	// and download patterns can look at (0: any number).
	headWords   int
	byName      map[string]*runtimeRule
	kindPurpose map[string]string
	notRuntimes []notRuntime
	roles       []roleRule
	// flags is what the rules say of each flag name they know: one lookup
	// per flag of a command line.
	flags         map[string]*flagRule
	settingEnv    map[string]string
	settingField  map[string]string
	modelEnv      map[string]bool
	modelEnvRE    []*regexp.Regexp
	envFields     map[string]bool
	revFields     map[string]bool
	hfEnv         map[string]bool
	revEnv        map[string]bool
	modelFields   map[string]bool
	ignore        []*regexp.Regexp
	nimImage      *regexp.Regexp
	nimGeneric    []*regexp.Regexp
	imageModels   []imageModel
	adapterFields map[string]bool
	booleans      map[string]bool
	argsEnv       map[string]bool
	fieldRules    map[string][]*runtimeRule // field name -> runtimes with a rule on it, in order
	wrappersOf    map[string][]*runtimeRule // engine -> runtimes that wrap it, in order
	envRules      map[string][]envBackend   // env name -> wrappers it selects a backend of
	versionFields map[string][]*runtimeRule // field name -> runtimes it gives the version of
	imageFields   map[string]bool
	listEnv       map[string]bool
	pairs         []FieldPair
	stored        []FieldPair
	clientEnv     []*regexp.Regexp
	clientEnvNot  []*regexp.Regexp
	presets       map[string]map[string]string
	defaults      []defaultRuntime
	downloads     []downloadRule
	serving       *servingRules
	memo          *matchMemo // what the rules said of strings seen before
	// shellOf is r.shell, made once: a method value made on each use
	// allocates.
	shellOf func(string) *cmdline.Script
}

// defaultRuntime is a compiled DefaultRuntime.
type defaultRuntime struct {
	DefaultRuntime
	values []*regexp.Regexp
	rule   *runtimeRule
}

// downloadRule is a compiled DownloadRule.
type downloadRule struct {
	DownloadRule
	command, image, source *regexp.Regexp
	commandLit             string // requiredLiteral of command
	sourcePositional       bool
	sourceImage            bool // the container's own image is the source
	subcommands, dest, rev map[string]bool
}

// imageModel is a compiled ImageModel.
type imageModel struct {
	re      *regexp.Regexp
	exclude []*regexp.Regexp
}

// envBackend is a backend of a wrapper that an env var selects (set to
// value, when not empty).
type envBackend struct {
	runtime, backend, value string
}

// set is the set of xs.
func set(xs []string) map[string]bool {
	m := make(map[string]bool, len(xs))
	for _, x := range xs {
		m[x] = true
	}
	return m
}

// compilePatterns compiles the patterns ps; an error names where[i].
func compilePatterns(where string, ps []PatternRule) ([]pattern, error) {
	out := make([]pattern, 0, len(ps))
	for i, p := range ps {
		re, err := regexp.Compile(p.Pattern)
		if err != nil {
			return nil, fmt.Errorf("%s[%d]: %w", where, i, err)
		}
		c := pattern{re: re, lit: requiredLiteral(re), model: p.Model == "positional" || p.Model == "positionals", models: p.Model == "positionals", backend: p.Backend, version: re.SubexpIndex("version"), conf: p.Confidence}
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

// compileRules compiles a rule set: every regex compiled once, every list
// turned into a set or an index.
func compileRules(rs RuleSet) (*rules, error) {
	m := rs.Models
	r := &rules{
		byName:        map[string]*runtimeRule{},
		kindPurpose:   map[string]string{},
		settingEnv:    map[string]string{},
		settingField:  map[string]string{},
		modelEnv:      set(m.Env),
		envFields:     set(m.EnvFields),
		revFields:     set(m.RevisionFields),
		hfEnv:         set(m.HFEnv),
		revEnv:        set(m.RevisionEnv),
		modelFields:   set(m.Fields),
		adapterFields: set(m.AdapterFields),
		booleans:      set(rs.BooleanFlags),
		argsEnv:       set(rs.ArgsEnv),
		envRules:      map[string][]envBackend{},
		versionFields: map[string][]*runtimeRule{},
		fieldRules:    map[string][]*runtimeRule{},
		wrappersOf:    map[string][]*runtimeRule{},
		imageFields:   set(m.ImageFields),
		listEnv:       set(m.ListEnv),
		pairs:         m.Pairs,
		stored:        m.Stored,
		presets:       m.Presets,
		memo:          newMatchMemo(),
		flags:         map[string]*flagRule{},
	}
	r.flagsOf(m.Flags, func(f *flagRule) { f.model = true })
	r.flagsOf(m.HFFlags, func(f *flagRule) { f.hf = true })
	r.flagsOf(m.RevisionFlags, func(f *flagRule) { f.rev = true })
	r.flagsOf(m.ListFlags, func(f *flagRule) { f.list = true })
	r.flagsOf(m.ClientFlags, func(f *flagRule) { f.client = true })
	r.shellOf = r.shell
	for _, step := range []func() error{
		func() error { return r.compileRuntimes(rs.Runtimes) },
		func() error { return r.compileKinds(rs.Kinds) },
		func() error { return r.compileNotRuntimes(rs.NotRuntimes) },
		func() error { return r.compileRoles(rs.Roles) },
		func() error { r.compileSettings(rs.Settings); return nil },
		func() error { return r.compileModels(m) },
		r.linkRuntimes,
		func() error { return r.compileClientEnv(m.ClientEnv) },
		func() error {
			var err error
			r.clientEnvNot, err = compileAll("models.clientEnvNot", m.ClientEnvNot)
			return err
		},
		func() error { return r.compileDefaults(rs.Defaults) },
		func() error { return r.compileDownloads(rs.Downloads) },
		func() error { return r.compileServing(rs.Serving) },
	} {
		if err := step(); err != nil {
			return nil, err
		}
	}
	r.headWords = r.commandWords()
	return r, nil
}

// compileRuntimes compiles the runtime rules and indexes them by name, by
// backend flag, engine flag, env and version field.
func (r *rules) compileRuntimes(rts []RuntimeRule) error {
	for i, rt := range rts {
		if rt.Name == "" {
			return fmt.Errorf("runtimes[%d]: name is empty", i)
		}
		if _, dup := r.byName[rt.Name]; dup {
			return fmt.Errorf("runtimes[%s]: duplicate name", rt.Name)
		}
		c, err := compileRuntime(rt)
		if err != nil {
			return err
		}
		if rt.BackendFlag != nil {
			r.flagsOf(rt.BackendFlag.Flags, func(f *flagRule) { f.backendOf = append(f.backendOf, c) })
		}
		r.flagsOf(rt.EngineFlags, func(f *flagRule) { f.engines = append(f.engines, rt.Name) })
		for _, e := range rt.Env {
			r.envRules[e.Name] = append(r.envRules[e.Name], envBackend{runtime: rt.Name, backend: e.Backend, value: e.Value})
		}
		for _, f := range rt.VersionFields {
			r.versionFields[f] = append(r.versionFields[f], c)
		}
		r.runtimes = append(r.runtimes, c)
		r.byName[rt.Name] = c
	}
	return nil
}

// compileRuntime compiles one runtime rule: its patterns, field values and
// kinds.
func compileRuntime(rt RuntimeRule) (*runtimeRule, error) {
	where := "runtimes[" + rt.Name + "]"
	c := &runtimeRule{RuntimeRule: rt, subcommands: set(rt.Subcommands), wraps: set(rt.Wraps), modelFlags: set(rt.ModelFlags),
		kinds: map[string]string{}, ref: "runtime:" + rt.Name}
	for _, ps := range []struct {
		name string
		in   []PatternRule
		out  *[]pattern
	}{
		{"images", rt.Images, &c.images}, {"commands", rt.Commands, &c.commands}, {"argsOnly", rt.ArgsOnly, &c.argsOnly},
		{"hints", rt.Hints, &c.hints}, {"clients", rt.Clients, &c.clients},
	} {
		var err error
		if *ps.out, err = compilePatterns(where+"."+ps.name, ps.in); err != nil {
			return nil, err
		}
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
	return c, nil
}

// compileKinds reads the purposes of the kinds that are not serving
// workloads.
func (r *rules) compileKinds(ks []KindRule) error {
	for _, k := range ks {
		if k.Purpose != "template" && k.Purpose != "cache" {
			return fmt.Errorf("kinds[%s]: purpose %q is not template or cache", k.Kind, k.Purpose)
		}
		r.kindPurpose[k.Kind] = k.Purpose
	}
	return nil
}

// compileNotRuntimes compiles the patterns of the engine simulators.
func (r *rules) compileNotRuntimes(ns []NotRuntime) error {
	for i, n := range ns {
		re, err := regexp.Compile(n.Pattern)
		if err != nil {
			return fmt.Errorf("notRuntimes[%d]: %w", i, err)
		}
		r.notRuntimes = append(r.notRuntimes, notRuntime{NotRuntime: n, re: re})
	}
	return nil
}

// compileRoles compiles the role rules.
func (r *rules) compileRoles(ros []RoleRule) error {
	for i, ro := range ros {
		rr := roleRule{RoleRule: ro, values: set(ro.Values)}
		if ro.Pattern != "" {
			re, err := regexp.Compile(ro.Pattern)
			if err != nil {
				return fmt.Errorf("roles[%d]: %w", i, err)
			}
			rr.re = re
		}
		if ro.Flag == "" && ro.Pattern == "" && ro.Label == "" {
			return fmt.Errorf("roles[%d]: needs flag, pattern or label", i)
		}
		r.roles = append(r.roles, rr)
	}
	for i := range r.roles {
		if rr := &r.roles[i]; rr.Flag != "" {
			r.flagsOf([]string{rr.Flag}, func(f *flagRule) { f.roles = append(f.roles, rr) })
		}
	}
	return nil
}

// flagRule is what the rules say of one flag name.
type flagRule struct {
	setting   string         // the property name of the setting it gives
	model     bool           // its value names a model (models.flags)
	hf        bool           // ... on the Hugging Face Hub (models.hfFlags)
	rev       bool           // its value is the model's revision
	list      bool           // its value lists models
	client    bool           // it points a client at a server elsewhere
	jsonKeys  []string       // keys of its JSON value that name a model
	backendOf []*runtimeRule // the wrappers whose backend it picks
	engines   []string       // the engines it reveals (engineFlags)
	roles     []*roleRule    // the role rules that read it, in order
}

// flagsOf applies set to the flagRule of each of names.
func (r *rules) flagsOf(names []string, set func(*flagRule)) {
	for _, n := range names {
		f := r.flags[n]
		if f == nil {
			f = &flagRule{}
			r.flags[n] = f
		}
		set(f)
	}
}

// compileSettings indexes the settings by flag, env and field.
func (r *rules) compileSettings(ss []SettingRule) {
	for _, s := range ss {
		name := propPrefix + "runtime:" + s.Name
		r.flagsOf(s.Flags, func(f *flagRule) { f.setting = name })
		for _, e := range s.Env {
			r.settingEnv[e] = name
		}
		for _, f := range s.Fields {
			r.settingField[f] = name
		}
	}
}

// compileModels compiles the model values to ignore and the images that
// bake a model in.
func (r *rules) compileModels(m ModelRules) error {
	var err error
	if r.ignore, err = compileAll("models.ignore", m.Ignore); err != nil {
		return err
	}
	if r.modelEnvRE, err = compileAll("models.envPatterns", m.EnvPatterns); err != nil {
		return err
	}
	for _, jf := range m.JSONFlags {
		r.flagsOf(jf.Flags, func(f *flagRule) { f.jsonKeys = append(f.jsonKeys, jf.Keys...) })
	}
	if m.NIMImage != "" {
		re, err := regexp.Compile(m.NIMImage)
		if err != nil {
			return fmt.Errorf("models.nimImage: %w", err)
		}
		if re.SubexpIndex("model") < 0 {
			return fmt.Errorf("models.nimImage: needs a (?P<model>...) group")
		}
		r.nimImage = re
	}
	if r.nimGeneric, err = compileAll("models.nimImageGeneric", m.NIMImageGeneric); err != nil {
		return err
	}
	for i, im := range m.Images {
		re, err := regexp.Compile(im.Pattern)
		if err != nil {
			return fmt.Errorf("models.images[%d]: %w", i, err)
		}
		if re.SubexpIndex("model") < 0 {
			return fmt.Errorf("models.images[%d]: needs a (?P<model>...) group", i)
		}
		c := imageModel{re: re}
		if c.exclude, err = compileAll(fmt.Sprintf("models.images[%d].exclude", i), im.Exclude); err != nil {
			return err
		}
		r.imageModels = append(r.imageModels, c)
	}
	return nil
}

// compileClientEnv compiles the patterns of the env names that mark a
// client.
func (r *rules) compileClientEnv(ps []string) error {
	var err error
	r.clientEnv, err = compileAll("models.clientEnv", ps)
	return err
}

// compileAll compiles the regexes ps; an error names where[i].
func compileAll(where string, ps []string) ([]*regexp.Regexp, error) {
	var out []*regexp.Regexp
	for i, p := range ps {
		re, err := regexp.Compile(p)
		if err != nil {
			return nil, fmt.Errorf("%s[%d]: %w", where, i, err)
		}
		out = append(out, re)
	}
	return out, nil
}

// linkRuntimes checks what runtimes wrap and indexes the runtimes by the
// fields their rules read and by the engines they wrap, in rule order.
func (r *rules) linkRuntimes() error {
	for _, rt := range r.runtimes {
		for _, w := range rt.Wraps {
			if _, ok := r.byName[w]; !ok {
				return fmt.Errorf("runtimes[%s].wraps: unknown runtime %q", rt.Name, w)
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
	return nil
}

// commandWords is how many words of a command line the launch, client and
// download patterns can look at (see headWords).
func (r *rules) commandWords() int {
	var sets [][]pattern
	for _, rt := range r.runtimes {
		sets = append(sets, rt.commands, rt.argsOnly, rt.clients)
	}
	for _, d := range r.downloads {
		if d.command != nil {
			sets = append(sets, []pattern{{re: d.command}})
		}
	}
	return headWords(sets...)
}

// compileDefaults compiles the runtimes operators run when their objects
// name none.
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

// compileDownloads compiles the download rules.
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
			c.commandLit = requiredLiteral(c.command)
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

// ignoredModel reports a model value the rules ignore (models.ignore), or
// a blank one.
func (r *rules) ignoredModel(v string) bool {
	if strings.TrimSpace(v) == "" {
		return true
	}
	return r.memo.ignored.get(v, r.matchIgnored)
}

// matchIgnored is ignoredModel of a value that is not blank, not remembered.
func (r *rules) matchIgnored(v string) bool {
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
