package transformer

import (
	_ "embed"
	"fmt"
	"maps"
	"os"

	"github.com/bomstream/bomstream/config"
	"github.com/bomstream/bomstream/schemas"
)

//go:embed rules.yaml
var defaultRules []byte

// RuleSet is the YAML shape of the detection rules (rules.yaml and a user
// override file), decoded by config.Decode through the yaml tags; the json
// tags name the same keys.
type RuleSet struct {
	Runtimes     []RuntimeRule `json:"runtimes" yaml:"runtimes"`
	Kinds        []KindRule    `json:"kinds,omitempty" yaml:"kinds"`
	NotRuntimes  []NotRuntime  `json:"notRuntimes,omitempty" yaml:"notRuntimes"`
	Roles        []RoleRule    `json:"roles,omitempty" yaml:"roles"`
	Settings     []SettingRule `json:"settings,omitempty" yaml:"settings"`
	Models       ModelRules    `json:"models" yaml:"models"`
	ArgsEnv      []string      `json:"argsEnv,omitempty" yaml:"argsEnv"`
	BooleanFlags []string      `json:"booleanFlags,omitempty" yaml:"booleanFlags"`
	// KeepValues are flags whose values rules read beyond the flag lists of
	// settings, models, roles and runtimes (launch patterns, role patterns,
	// hints), and ports. See Arguments.
	KeepValues []string `json:"keepValues,omitempty" yaml:"keepValues"`
	// Defaults are the runtimes an operator runs when its object names
	// none (KAITO's vLLM, Ray Serve LLM's vLLM).
	Defaults []DefaultRuntime `json:"defaults,omitempty" yaml:"defaults"`
	// Downloads are the commands that fetch a model into a directory a
	// server then reads (huggingface-cli download, git clone, aws s3 cp,
	// ...): the model the server loads from that directory is the source.
	Downloads []DownloadRule `json:"downloads,omitempty" yaml:"downloads"`
	// Serving says how a container is judged to serve a model.
	Serving ServingRules `json:"serving" yaml:"serving"`
}

// DefaultRuntime: when a field named Field is present (and, with Values,
// matches one of them) and none named one of Unless is, the workload runs
// Runtime, inferred.
type DefaultRuntime struct {
	Field   string   `json:"field" yaml:"field"`
	Values  []string `json:"values,omitempty" yaml:"values"`
	Unless  []string `json:"unless,omitempty" yaml:"unless"`
	Runtime string   `json:"runtime" yaml:"runtime"`
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
	Name          string    `json:"name" yaml:"name"`
	Command       string    `json:"command,omitempty" yaml:"command"`
	Image         string    `json:"image,omitempty" yaml:"image"`
	Subcommands   []string  `json:"subcommands,omitempty" yaml:"subcommands"`
	Source        string    `json:"source,omitempty" yaml:"source"`
	HF            bool      `json:"hf,omitempty" yaml:"hf"`
	DestFlags     []string  `json:"destFlags,omitempty" yaml:"destFlags"`
	RevisionFlags []string  `json:"revisionFlags,omitempty" yaml:"revisionFlags"`
	Code          *CodeRule `json:"code,omitempty" yaml:"code"`
}

// CodeRule reads Python calls (snapshot_download(...)) in the value of Flag:
// the keyword arguments (or the first positional) that name the source,
// the revision and the destination.
type CodeRule struct {
	Flag     string   `json:"flag" yaml:"flag"`
	Calls    []string `json:"calls" yaml:"calls"`
	Source   string   `json:"source" yaml:"source"`
	Revision string   `json:"revision,omitempty" yaml:"revision"`
	Dest     []string `json:"dest,omitempty" yaml:"dest"`
}

// RuntimeRule says how one serving engine shows itself.
type RuntimeRule struct {
	Name        string         `json:"name" yaml:"name"`
	Title       string         `json:"title,omitempty" yaml:"title"`
	PURL        string         `json:"purl,omitempty" yaml:"purl"`
	Images      []PatternRule  `json:"images,omitempty" yaml:"images"`
	Commands    []PatternRule  `json:"commands,omitempty" yaml:"commands"`
	ArgsOnly    []PatternRule  `json:"argsOnly,omitempty" yaml:"argsOnly"`
	Hints       []PatternRule  `json:"hints,omitempty" yaml:"hints"`
	Subcommands []string       `json:"subcommands,omitempty" yaml:"subcommands"`
	ModelFlags  []string       `json:"modelFlags,omitempty" yaml:"modelFlags"`
	EngineFlags []string       `json:"engineFlags,omitempty" yaml:"engineFlags"`
	Fields      []FieldRule    `json:"fields,omitempty" yaml:"fields"`
	Kinds       []KindClaim    `json:"kinds,omitempty" yaml:"kinds"`
	Env         []EnvRule      `json:"env,omitempty" yaml:"env"`
	Wraps       []string       `json:"wraps,omitempty" yaml:"wraps"`
	BackendFlag *BackendFlag   `json:"backendFlag,omitempty" yaml:"backendFlag"`
	Default     *DefaultEngine `json:"defaultBackend,omitempty" yaml:"defaultBackend"`
	// VersionFields are kind fields whose value is this runtime's version
	// (a RayService's rayVersion), declared.
	VersionFields []string `json:"versionFields,omitempty" yaml:"versionFields"`
	// Clients are launch patterns of the engine's own client commands
	// (vllm bench, vllm chat): a container that runs one does not serve,
	// whatever its image, and the models it names are another server's.
	Clients []PatternRule `json:"clients,omitempty" yaml:"clients"`
	// Words are the engine's names as they appear inside custom and vendor
	// image names (regex fragments, lower case, bounded by non-letters,
	// maybe followed by the engine's version: neuron-sdk2.20-vllm0.5.0):
	// an inferred runtime when nothing else names the engine.
	Words []string `json:"words,omitempty" yaml:"words"`
	// EnvFamilies match the names of the env variables the engine reads
	// (^VLLM_, ^LLAMA_ARG_): an inferred runtime when nothing else names
	// the engine.
	EnvFamilies []string `json:"envFamilies,omitempty" yaml:"envFamilies"`
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
	Pattern    string `json:"pattern" yaml:"pattern"`
	Model      string `json:"model,omitempty" yaml:"model"`
	Backend    string `json:"backend,omitempty" yaml:"backend"`
	Tag        string `json:"tag,omitempty" yaml:"tag"`
	Confidence string `json:"confidence,omitempty" yaml:"confidence"`
}

// FieldRule matches a kind field's value (case-insensitive regexes).
type FieldRule struct {
	Name   string   `json:"name" yaml:"name"`
	Values []string `json:"values" yaml:"values"`
}

// KindClaim: objects of Kind run the engine.
type KindClaim struct {
	Kind       string `json:"kind" yaml:"kind"`
	Confidence string `json:"confidence" yaml:"confidence"`
}

// EnvRule: a truthy env var selects a backend of a wrapper; with Value,
// the var set to that value (in any case) does.
type EnvRule struct {
	Name    string `json:"name" yaml:"name"`
	Value   string `json:"value,omitempty" yaml:"value"`
	Backend string `json:"backend" yaml:"backend"`
}

// BackendFlag maps the values of a wrapper's backend flag to engines ("" = auto).
type BackendFlag struct {
	Flags  []string          `json:"flags" yaml:"flags"`
	Values map[string]string `json:"values" yaml:"values"`
}

// DefaultEngine is the backend a wrapper picks when nothing says, for
// components with one of Roles.
type DefaultEngine struct {
	Backend string   `json:"backend" yaml:"backend"`
	Roles   []string `json:"roles,omitempty" yaml:"roles"`
}

// KindRule marks kinds that are not serving workloads: "template" (skipped) or
// "cache" (models only, never a runtime).
type KindRule struct {
	Kind    string `json:"kind" yaml:"kind"`
	Purpose string `json:"purpose" yaml:"purpose"`
}

// NotRuntime is an image that imitates an engine.
type NotRuntime struct {
	Pattern   string `json:"pattern" yaml:"pattern"`
	Name      string `json:"name" yaml:"name"`
	Simulates string `json:"simulates,omitempty" yaml:"simulates"`
}

// RoleRule refines a component's role from a flag (optionally with a value), a
// regex on the arguments, or a pod-template label.
type RoleRule struct {
	Flag    string   `json:"flag,omitempty" yaml:"flag"`
	Value   string   `json:"value,omitempty" yaml:"value"`
	Pattern string   `json:"pattern,omitempty" yaml:"pattern"`
	Role    string   `json:"role,omitempty" yaml:"role"`
	Label   string   `json:"label,omitempty" yaml:"label"`
	Values  []string `json:"values,omitempty" yaml:"values"`
}

// SettingRule names an engine setting and where it is read.
type SettingRule struct {
	Name   string   `json:"name" yaml:"name"`
	Flags  []string `json:"flags,omitempty" yaml:"flags"`
	Env    []string `json:"env,omitempty" yaml:"env"`
	Fields []string `json:"fields,omitempty" yaml:"fields"`
}

// ModelRules says where models are named.
type ModelRules struct {
	Flags   []string `json:"flags,omitempty" yaml:"flags"`
	HFFlags []string `json:"hfFlags,omitempty" yaml:"hfFlags"`
	Env     []string `json:"env,omitempty" yaml:"env"`
	// EnvPatterns match more env names that name a model (MODEL_1_ID).
	EnvPatterns []string `json:"envPatterns,omitempty" yaml:"envPatterns"`
	// EnvFields are kind fields holding env variables as "NAME=value"
	// (a Ray Serve app's runtime_env): read as the env of a container.
	EnvFields     []string `json:"envFields,omitempty" yaml:"envFields"`
	HFEnv         []string `json:"hfEnv,omitempty" yaml:"hfEnv"`
	RevisionFlags []string `json:"revisionFlags,omitempty" yaml:"revisionFlags"`
	RevisionEnv   []string `json:"revisionEnv,omitempty" yaml:"revisionEnv"`
	// RevisionFields are kind fields pinning the revision of the models
	// kind fields name (an llmaz OpenModel's modelHub.revision).
	RevisionFields  []string `json:"revisionFields,omitempty" yaml:"revisionFields"`
	Fields          []string `json:"fields,omitempty" yaml:"fields"`
	Ignore          []string `json:"ignore,omitempty" yaml:"ignore"`
	NIMImage        string   `json:"nimImage,omitempty" yaml:"nimImage"`
	NIMImageGeneric []string `json:"nimImageGeneric,omitempty" yaml:"nimImageGeneric"`
	// Images are other images that bake a model in and are named after it
	// (a (?P<model>...) group), unless an exclude pattern matches.
	Images []ImageModel `json:"images,omitempty" yaml:"images"`
	// AdapterFields are fields naming LoRA adapters: models marked
	// bomstream:model:adapter.
	AdapterFields []string `json:"adapterFields,omitempty" yaml:"adapterFields"`
	// ImageFields are fields whose value is an image reference holding a
	// model (an adapter image): models oci://<reference>.
	ImageFields []string `json:"imageFields,omitempty" yaml:"imageFields"`
	// ListFlags take a list of models: their value and the words after it
	// up to the next flag, each "[NAME=]LOCATION" ("all" is none).
	ListFlags []string `json:"listFlags,omitempty" yaml:"listFlags"`
	// ListEnv hold several models separated by ";", "," or spaces.
	ListEnv []string `json:"listEnv,omitempty" yaml:"listEnv"`
	// ClientFlags and ClientEnv (regexes on names) mark a container that
	// talks to a model server elsewhere (--target, --base-url,
	// OPENAI_BASE_URL): the models it names are not its own, so they make
	// no BOM by themselves.
	ClientFlags []string `json:"clientFlags,omitempty" yaml:"clientFlags"`
	ClientEnv   []string `json:"clientEnv,omitempty" yaml:"clientEnv"`
	// ClientEnvNot are env names ClientEnv matches that are no server's
	// endpoint: storage, telemetry, the platform's.
	ClientEnvNot []string `json:"clientEnvNot,omitempty" yaml:"clientEnvNot"`
	// Pairs are fields that name a model as served (Name) unless a field
	// Source beside it (the same parent in the document) says where the
	// model comes from: then Source is the model and Name its served name.
	Pairs []FieldPair `json:"pairs,omitempty" yaml:"pairs"`
	// JSONFlags take a JSON object some of whose keys name a model (a
	// speculative decoding draft model: --speculative-config
	// '{"model": ...}').
	JSONFlags []JSONFlag `json:"jsonFlags,omitempty" yaml:"jsonFlags"`
	// Stored are served names (Name) that are the Hugging Face id of what
	// a store beside them holds (Source: pvc://, s3://, gs://, a path):
	// the model is the id, found at the store (an LLMInferenceService's
	// spec.model.name beside a pvc:// uri).
	Stored []FieldPair `json:"stored,omitempty" yaml:"stored"`
	// Presets map the values of a field to the Hugging Face ids they stand
	// for (an operator's catalog of preset names).
	Presets map[string]map[string]string `json:"presets,omitempty" yaml:"presets"`
}

// JSONFlag is a flag whose value is a JSON object, and the keys of it
// that name a model.
type JSONFlag struct {
	Flags []string `json:"flags" yaml:"flags"`
	Keys  []string `json:"keys" yaml:"keys"`
}

// FieldPair is a served name and the source of the same model.
type FieldPair struct {
	Name   string `json:"name" yaml:"name"`
	Source string `json:"source" yaml:"source"`
}

// ImageModel names the model an image bakes in.
type ImageModel struct {
	Pattern string   `json:"pattern" yaml:"pattern"`
	Exclude []string `json:"exclude,omitempty" yaml:"exclude"`
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
	b, err := readRulesFile(overrideFile)
	if err != nil {
		return RuleSet{}, err
	}
	return parseRules(overrideFile, b)
}

// readRulesFile is the bytes of an override file, nil for none.
func readRulesFile(overrideFile string) ([]byte, error) {
	if overrideFile == "" {
		return nil, nil
	}
	b, err := os.ReadFile(overrideFile)
	if err != nil {
		return nil, fmt.Errorf("read rules %s: %w", overrideFile, err)
	}
	return b, nil
}

// parseRules is the built-in rules with user, the bytes of the override
// file name (nil: none), merged over them.
func parseRules(name string, user []byte) (RuleSet, error) {
	var rs RuleSet
	if _, err := config.Decode(defaultRules, &rs); err != nil {
		return rs, fmt.Errorf("parse built-in rules: %w", err)
	}
	if user == nil {
		return rs, nil
	}
	var u RuleSet
	if _, err := config.Decode(user, &u); err != nil {
		return rs, fmt.Errorf("parse rules %s: %w", name, err)
	}
	return mergeRules(rs, u), nil
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
	base.Serving = mergeServing(base.Serving, user.Serving)
	m, u := &base.Models, user.Models
	m.Flags = append(m.Flags, u.Flags...)
	m.HFFlags = append(m.HFFlags, u.HFFlags...)
	m.Env = append(m.Env, u.Env...)
	m.EnvPatterns = append(m.EnvPatterns, u.EnvPatterns...)
	m.EnvFields = append(m.EnvFields, u.EnvFields...)
	m.HFEnv = append(m.HFEnv, u.HFEnv...)
	m.RevisionFlags = append(m.RevisionFlags, u.RevisionFlags...)
	m.RevisionEnv = append(m.RevisionEnv, u.RevisionEnv...)
	m.RevisionFields = append(m.RevisionFields, u.RevisionFields...)
	m.Fields = append(m.Fields, u.Fields...)
	m.Ignore = append(m.Ignore, u.Ignore...)
	m.NIMImageGeneric = append(m.NIMImageGeneric, u.NIMImageGeneric...)
	m.Images = append(m.Images, u.Images...)
	m.AdapterFields = append(m.AdapterFields, u.AdapterFields...)
	m.ImageFields = append(m.ImageFields, u.ImageFields...)
	m.ListFlags = append(m.ListFlags, u.ListFlags...)
	m.ListEnv = append(m.ListEnv, u.ListEnv...)
	m.Pairs = append(m.Pairs, u.Pairs...)
	m.Stored = append(m.Stored, u.Stored...)
	m.JSONFlags = append(m.JSONFlags, u.JSONFlags...)
	m.ClientFlags = append(m.ClientFlags, u.ClientFlags...)
	m.ClientEnv = append(m.ClientEnv, u.ClientEnv...)
	m.ClientEnvNot = append(m.ClientEnvNot, u.ClientEnvNot...)
	for field, presets := range u.Presets {
		if m.Presets == nil {
			m.Presets = map[string]map[string]string{}
		}
		if m.Presets[field] == nil {
			m.Presets[field] = map[string]string{}
		}
		maps.Copy(m.Presets[field], presets)
	}
	if u.NIMImage != "" {
		m.NIMImage = u.NIMImage
	}
	return base
}
