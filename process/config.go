package process

import (
	"errors"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/bomstream/bomstream/collector"
	"github.com/bomstream/bomstream/collector/kube"
	"github.com/bomstream/bomstream/collector/manifest"
	"github.com/bomstream/bomstream/config"
	"github.com/bomstream/bomstream/findings"
	"github.com/bomstream/bomstream/inventory/api"
	"github.com/bomstream/bomstream/schemas"
	"github.com/bomstream/bomstream/sinks"
	"github.com/bomstream/bomstream/sinks/registry"
	"github.com/bomstream/bomstream/sinks/runner"
	"github.com/bomstream/bomstream/stream"
	"github.com/bomstream/bomstream/transformer"
	"github.com/bomstream/bomstream/transformer/service"
)

// Config is the whole configuration of a bomstream process. Each part belongs
// to the component that uses it and validates itself; this struct only binds
// them to one YAML file, BOMSTREAM_* variables and flags, in that order of
// precedence (flags win).
type Config struct {
	Cluster     string            `yaml:"cluster"`
	Stream      stream.Config     `yaml:"stream"`
	Collector   CollectorConfig   `yaml:"collector"`
	Manifests   ManifestsConfig   `yaml:"manifests"`
	Kubernetes  kube.Config       `yaml:"kubernetes"` // the cluster source (kubernetes.go)
	Transformer TransformerConfig `yaml:"transformer"`
	Sinks       []SinkConfig      `yaml:"sinks"`
	Findings    findings.Config   `yaml:"findings"`
	HTTP        HTTPConfig        `yaml:"http"`
	API         api.Config        `yaml:"api"` // the inventory API (apiserve.go)
	Log         LogConfig         `yaml:"log"`
}

// CollectorConfig is the normalization part of the collector.
type CollectorConfig struct {
	DefaultNamespace string   `yaml:"defaultNamespace"`
	EnvAllow         []string `yaml:"envAllow"`
	LabelAllow       []string `yaml:"labelAllow"`
	ArgAllow         []string `yaml:"argAllow"`
	// AcceleratorLabels are node label keys, beyond the built-in ones, that
	// name an accelerator in a pod's nodeSelector.
	AcceleratorLabels []string `yaml:"acceleratorLabels"`
	ProfilesFile      string   `yaml:"profilesFile"`
}

// ManifestsConfig is the manifest source of `bomstream run`.
type ManifestsConfig struct {
	Dir      string        `yaml:"dir"`
	Once     bool          `yaml:"once"`
	Interval time.Duration `yaml:"interval"`
	// ConfirmTombstones lets a pass delete more than half of the
	// directory's workloads without waiting for a second pass.
	ConfirmTombstones bool `yaml:"confirmTombstones"`
	// MaxFileBytes skips larger manifest files unread; 0: 16 MiB.
	MaxFileBytes int64 `yaml:"maxFileBytes"`
	// MaxDocuments is the number of documents read from one file; 0: 10,000.
	MaxDocuments int `yaml:"maxDocuments"`
}

// limits are the manifest reader's limits.
func (m ManifestsConfig) limits() manifest.Limits {
	return manifest.Limits{MaxFileBytes: m.MaxFileBytes, MaxDocuments: m.MaxDocuments}
}

// TransformerConfig is the renderer and its stage loop.
type TransformerConfig struct {
	RulesFile string         `yaml:"rulesFile"`
	Service   service.Config `yaml:"service"`
}

// SinkConfig is one configured sink: a name (unique, it names the durable
// consumer and the ledger), a type from the registry, the runner's settings,
// and the sink's own settings, decoded strictly by the sink's package.
type SinkConfig struct {
	Name string `yaml:"name"`
	Type string `yaml:"type"`
	// SpecVersion is the CycloneDX version the sink writes: "1.6" (the
	// default: the document the transformer renders, byte for byte) or
	// "1.7" (converted for this sink; the bomHash stays that of the 1.6
	// document, see sinks.WithSpecVersion).
	SpecVersion string         `yaml:"specVersion"`
	Runner      runner.Config  `yaml:"runner"`
	Config      map[string]any `yaml:"config"`
}

var clusterName = regexp.MustCompile(`^[A-Za-z0-9_-]{1,63}$`)

// defaultConfig is the embedded default: data in ./bomstream-data, BOMs as
// files in ./boms.
func defaultConfig() Config {
	return Config{
		Cluster: "default",
		Stream:  stream.Config{DataDir: stream.DefaultDataDir},
	}
}

// defaultSinks is used when no sink is configured.
func defaultSinks() []SinkConfig {
	return []SinkConfig{{Name: "file", Type: "file", Config: map[string]any{"dir": "boms"}}}
}

// applyEnv reads the settings no flag sets, each from the variable a flag
// of its name would have (config.EnvName: BOMSTREAM_NATS_PASSWORD for
// nats-password): NATS credentials, kept off command lines where ps shows
// them, the files of rules, profiles and findings rules, and the stream's
// replicas. Flags read their own variables (config.Env.SetFlags).
func applyEnv(c *Config, env config.Env) error {
	str := map[string]*string{
		"nats-nkey":     &c.Stream.NKeyFile,
		"nats-user":     &c.Stream.User,
		"nats-password": &c.Stream.Password,
		"nats-token":    &c.Stream.Token,
		"nats-tls-ca":   &c.Stream.TLSCA,
		"nats-tls-cert": &c.Stream.TLSCert,
		"nats-tls-key":  &c.Stream.TLSKey,
		// Credentials of the embedded server's listener.
		"nats-listen-token":    &c.Stream.ListenAuth.Token,
		"nats-listen-user":     &c.Stream.ListenAuth.User,
		"nats-listen-password": &c.Stream.ListenAuth.Password,
		"rules":                &c.Transformer.RulesFile,
		"profiles":             &c.Collector.ProfilesFile,
		"findings-rules":       &c.Findings.RulesFile,
	}
	for name, p := range str {
		if v, ok := env.Lookup(name); ok {
			*p = v
		}
	}
	if v, ok := env.Lookup("stream-replicas"); ok {
		n, err := strconv.Atoi(v)
		if err != nil { // not wrapped: strconv's error quotes the value
			return fmt.Errorf("%s: not a whole number", config.EnvName("stream-replicas"))
		}
		c.Stream.Replicas = n
	}
	return nil
}

// Validate checks every part, naming the field at fault, before anything starts.
func (c Config) Validate(reg sinks.Registry) error {
	var errs []error
	if !clusterName.MatchString(c.Cluster) {
		errs = append(errs, fmt.Errorf("cluster: %q is not 1-63 characters of [A-Za-z0-9_-]", c.Cluster))
	}
	errs = append(errs, c.Stream.Validate(), c.HTTP.Validate(), c.Log.Validate(), c.API.Validate())
	errs = append(errs, c.Findings.Validate())
	if err := c.Transformer.Service.Validate(); err != nil {
		errs = append(errs, fmt.Errorf("transformer.service: %w", err))
	}
	if err := c.normalizerConfig().Validate(); err != nil {
		errs = append(errs, fmt.Errorf("collector: %w", err))
	}
	if err := c.rendererConfig().Validate(); err != nil {
		errs = append(errs, fmt.Errorf("transformer: %w", err))
	} else if err := c.argumentsCovered(); err != nil {
		errs = append(errs, err)
	}
	if err := c.kubeConfig().Validate(); err != nil {
		errs = append(errs, err)
	}
	if c.Manifests.Interval < 0 {
		errs = append(errs, fmt.Errorf("manifests.interval: negative"))
	}
	if c.Manifests.MaxFileBytes < 0 {
		errs = append(errs, fmt.Errorf("manifests.maxFileBytes: %d is negative (0 means the default, 16 MiB)", c.Manifests.MaxFileBytes))
	}
	if c.Manifests.MaxDocuments < 0 {
		errs = append(errs, fmt.Errorf("manifests.maxDocuments: %d is negative (0 means the default, %d)", c.Manifests.MaxDocuments, manifest.DefaultMaxDocuments))
	}
	if c.Manifests.Dir != "" {
		if fi, err := os.Stat(c.Manifests.Dir); err != nil {
			errs = append(errs, fmt.Errorf("manifests.dir: %w", err))
		} else if !fi.IsDir() {
			errs = append(errs, fmt.Errorf("manifests.dir: %s is not a directory", c.Manifests.Dir))
		}
	}
	seen := map[string]bool{}
	for i, s := range c.Sinks {
		field := fmt.Sprintf("sinks[%d]", i)
		if s.Name == "" {
			s.Name = s.Type
		}
		if err := sinks.ValidateName(s.Name); err != nil {
			errs = append(errs, fmt.Errorf("%s.name: %w", field, err))
		}
		if seen[s.Name] {
			errs = append(errs, fmt.Errorf("%s.name: %q is used twice", field, s.Name))
		}
		seen[s.Name] = true
		if _, ok := reg[s.Type]; !ok {
			errs = append(errs, fmt.Errorf("%s.type: unknown sink type %q (known: %v)%s", field, s.Type, reg.Types(), registry.OmittedHint(reg, s.Type)))
		} else if _, err := reg.Decode(s.Type, s.Config); err != nil {
			errs = append(errs, prefixLines(field+".config: ", err))
		}
		if err := sinks.ValidSpecVersion(s.SpecVersion); err != nil {
			errs = append(errs, fmt.Errorf("%s.%w", field, err))
		}
		if err := s.Runner.Validate(field + ".runner"); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func (c Config) normalizerConfig() collector.Config {
	cfg := collector.Config{
		Cluster:           c.Cluster,
		DefaultNamespace:  c.Collector.DefaultNamespace,
		EnvAllow:          c.Collector.EnvAllow,
		LabelAllow:        c.Collector.LabelAllow,
		ArgAllow:          c.Collector.ArgAllow,
		AcceleratorLabels: c.Collector.AcceleratorLabels,
		ProfilesFile:      c.Collector.ProfilesFile,
	}
	// A rules override's engines and model env are the collector's too
	// (argumentsCovered has checked the file reads).
	if c.Transformer.RulesFile != "" {
		if args, err := transformer.RulesArguments(c.Transformer.RulesFile); err == nil {
			cfg.Serving = args.Serving
			cfg.EnvAllow = append(append([]string(nil), cfg.EnvAllow...), args.Env...)
		}
	}
	return cfg
}

func (c Config) rendererConfig() transformer.Config {
	return transformer.Config{Version: Version(), RulesFile: c.Transformer.RulesFile}
}

// prefixLines prefixes every error that err joins with prefix, so that each
// line names its configuration path.
func prefixLines(prefix string, err error) error {
	var errs []error
	for line := range strings.SplitSeq(err.Error(), "\n") {
		errs = append(errs, errors.New(prefix+line))
	}
	return errors.Join(errs...)
}

// argumentsCovered checks that the collector keeps the value of every flag a
// rules override reads (the built-in rules' flags are kept by construction):
// otherwise the override would only ever see REDACTED.
func (c Config) argumentsCovered() error {
	if c.Transformer.RulesFile == "" {
		return nil
	}
	args, err := transformer.RulesArguments(c.Transformer.RulesFile)
	if err != nil {
		return fmt.Errorf("transformer.rulesFile: %w", err)
	}
	declared, err := schemas.DeclaredArguments()
	if err != nil {
		return err
	}
	kept := map[string]bool{}
	for _, f := range append(declared.ValueFlags, c.Collector.ArgAllow...) {
		kept[f] = true
	}
	var missing []string
	for _, f := range args.ValueFlags {
		if !kept[f] {
			missing = append(missing, f)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("collector.argAllow: %s reads the values of %s; add them, or the collector redacts them", c.Transformer.RulesFile, strings.Join(missing, ", "))
	}
	return nil
}
