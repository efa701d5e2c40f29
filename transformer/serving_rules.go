package transformer

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"sort"
	"strings"
)

// ServingRules say how bomstream decides that a container serves a model:
// every signal found for or against it has a weight (Weights, by signal
// name), and the container serves when the weights of its signals add up
// to Threshold. The lists say what each signal looks for. A rules file
// replaces the threshold and the weights it names and appends to the
// lists.
type ServingRules struct {
	Threshold float64            `json:"threshold,omitempty" yaml:"threshold"`
	Weights   map[string]float64 `json:"weights,omitempty" yaml:"weights"`
	// Kinds serve by construction: their operator runs a model server.
	Kinds []string `json:"kinds,omitempty" yaml:"kinds"`
	// OneShotKinds run to completion (Job, CronJob).
	OneShotKinds []string `json:"oneShotKinds,omitempty" yaml:"oneShotKinds"`
	// Probes are the HTTP probe paths of model servers (/v1/models,
	// /v2/health/ready), and HealthProbes generic ones (/health).
	Probes       []string `json:"probes,omitempty" yaml:"probes"`
	HealthProbes []string `json:"healthProbes,omitempty" yaml:"healthProbes"`
	// Accelerators match Container.Accelerators entries.
	Accelerators []string `json:"accelerators,omitempty" yaml:"accelerators"`
	// Labels are pod label keys whose values name an engine.
	Labels []string `json:"labels,omitempty" yaml:"labels"`
	// Launch patterns (matched like runtimes' commands) of programs that
	// run a server of no engine in particular (python serve.py, uvicorn),
	// sleep, act as clients or benchmarks, convert models, or train.
	Servers  []string `json:"servers,omitempty" yaml:"servers"`
	Idle     []string `json:"idle,omitempty" yaml:"idle"`
	Clients  []string `json:"clients,omitempty" yaml:"clients"`
	Convert  []string `json:"convert,omitempty" yaml:"convert"`
	Training []string `json:"training,omitempty" yaml:"training"`
	// ClientImages match "<registry>/<repository>:<tag>" of client, SDK
	// and benchmark images.
	ClientImages []string `json:"clientImages,omitempty" yaml:"clientImages"`
	// NotEngineWords, a word of an image's own name, say that the engine
	// word beside them names what it fronts, not what it runs
	// (sglang-router, vllm-gateway, tgi-exporter).
	NotEngineWords []string `json:"notEngineWords,omitempty" yaml:"notEngineWords"`
	// Utilities are launch patterns, matched against a command or the args
	// given to an image's entrypoint, of an engine image's own tools that
	// fetch or list models rather than serve (NIM's download-to-cache).
	Utilities []string `json:"utilities,omitempty" yaml:"utilities"`
	// EngineFields are kind fields whose value names an engine in words
	// of its own (an operator's backend: vLLMDisaggregated, TRITON_SERVER):
	// matched against the runtimes' names and words, inferred. VersionField
	// beside one gives its version.
	EngineFields []string `json:"engineFields,omitempty" yaml:"engineFields"`
	VersionField string   `json:"versionField,omitempty" yaml:"versionField"`
	// AcceleratorFields are kind fields asking for accelerators (a CR's
	// gpu: 1), read of a workload with no container of its own.
	AcceleratorFields []string `json:"acceleratorFields,omitempty" yaml:"acceleratorFields"`
}

// Signals, by name. Each is found per container, once.
const (
	sigLaunch      = "launch" // an engine's launch command
	sigLaunchBg    = "launchBackground"
	sigEntrypoint  = "entrypoint"  // args given to an engine image's own entrypoint
	sigKind        = "kind"        // the kind, or a kind field, names the engine
	sigImage       = "image"       // an engine's image
	sigImageWord   = "imageWord"   // an engine's word in a custom image's name
	sigEnvFamily   = "envFamily"   // an engine's env variables
	sigLabel       = "label"       // a pod label names the engine
	sigName        = "name"        // the container's name is the engine's
	sigEngineFlag  = "engineFlag"  // a flag only an engine takes
	sigHint        = "hint"        // a word only an engine's setup has (a model repository layout)
	sigServer      = "server"      // a program that runs a server of no engine in particular
	sigModel       = "model"       // the container names a model
	sigAccelerator = "accelerator" // it requests an accelerator
	sigPort        = "port"        // it declares a port
	sigProbe       = "probe"       // an HTTP probe on a model server's path
	sigHealthProbe = "healthProbe" // an HTTP health probe
	sigIdle        = "idle"        // it only sleeps
	sigClient      = "client"      // it talks to a server elsewhere, or benchmarks one
	sigDownload    = "download"    // it fetches a model
	sigConvert     = "convert"     // it converts, compiles or quantizes a model
	sigTraining    = "training"    // it trains or fine-tunes
	sigOneShot     = "oneShot"     // its workload runs to completion
	sigHelper      = "helper"      // in a one-shot workload, the engine only runs in the background of the script
	sigInit        = "init"        // an init container: done before the server starts
)

// signalNames are the signals a weight can be given to.
var signalNames = []string{sigLaunch, sigLaunchBg, sigEntrypoint, sigKind, sigImage, sigImageWord, sigEnvFamily,
	sigLabel, sigName, sigEngineFlag, sigHint, sigServer, sigModel, sigAccelerator, sigPort, sigProbe, sigHealthProbe, sigIdle, sigClient,
	sigDownload, sigConvert, sigTraining, sigOneShot, sigHelper, sigInit}

// servingRules are ServingRules compiled.
type servingRules struct {
	threshold              float64
	weights                map[string]float64
	kinds, oneShot         map[string]bool
	probes, health, accels []*regexp.Regexp
	labels                 []string
	servers, idle, clients []*regexp.Regexp
	convert, train         []*regexp.Regexp
	clientImages           []*regexp.Regexp
	words                  []engineWord // every runtime's image words
	engineFields           map[string]bool
	acceleratorFields      map[string]bool
	notEngine              *regexp.Regexp // one of NotEngineWords, as a word
	utilities              []*regexp.Regexp
	heads                  []headKind // idle, clients, servers, convert, train, in that order
	versionField           string
	families               []engineFamily
}

// headKind is a pattern of a program's kind (sigIdle, ...) with the text
// every match contains (requiredLiteral).
type headKind struct {
	name, lit string
	re        *regexp.Regexp
}

// engineWord is an engine's word in image names: (?:^|[^a-z])WORD(VERSION)?(?:[^a-z]|$);
// prefix matches a text that starts with it (vllmdisaggregated).
type engineWord struct {
	rule   *runtimeRule
	re     *regexp.Regexp
	prefix *regexp.Regexp
}

// engineFamily is an engine's env family: a regex on env names.
type engineFamily struct {
	rule *runtimeRule
	re   *regexp.Regexp
}

// mergeServing is base with user's threshold and weights over it and its
// lists appended.
func mergeServing(base, user ServingRules) ServingRules {
	if user.Threshold != 0 {
		base.Threshold = user.Threshold
	}
	if len(user.Weights) > 0 {
		w := maps.Clone(base.Weights)
		if w == nil {
			w = map[string]float64{}
		}
		maps.Copy(w, user.Weights)
		base.Weights = w
	}
	base.Kinds = append(base.Kinds, user.Kinds...)
	base.OneShotKinds = append(base.OneShotKinds, user.OneShotKinds...)
	base.Probes = append(base.Probes, user.Probes...)
	base.HealthProbes = append(base.HealthProbes, user.HealthProbes...)
	base.Accelerators = append(base.Accelerators, user.Accelerators...)
	base.Labels = append(base.Labels, user.Labels...)
	base.Servers = append(base.Servers, user.Servers...)
	base.Idle = append(base.Idle, user.Idle...)
	base.Clients = append(base.Clients, user.Clients...)
	base.Convert = append(base.Convert, user.Convert...)
	base.Training = append(base.Training, user.Training...)
	base.ClientImages = append(base.ClientImages, user.ClientImages...)
	base.EngineFields = append(base.EngineFields, user.EngineFields...)
	base.AcceleratorFields = append(base.AcceleratorFields, user.AcceleratorFields...)
	base.NotEngineWords = append(base.NotEngineWords, user.NotEngineWords...)
	base.Utilities = append(base.Utilities, user.Utilities...)
	if user.VersionField != "" {
		base.VersionField = user.VersionField
	}
	return base
}

// compileServing compiles the serving rules and the runtimes' words and
// env families; every signal must have a weight.
func (r *rules) compileServing(s ServingRules) error {
	if s.Threshold <= 0 {
		return fmt.Errorf("serving.threshold: %v must be positive", s.Threshold)
	}
	for _, name := range slices.Sorted(maps.Keys(s.Weights)) {
		if !slices.Contains(signalNames, name) {
			return fmt.Errorf("serving.weights: %q is no signal (signals: %v)", name, signalNames)
		}
	}
	for _, name := range signalNames {
		if _, ok := s.Weights[name]; !ok {
			return fmt.Errorf("serving.weights: %q has no weight", name)
		}
	}
	sr := &servingRules{threshold: s.Threshold, weights: s.Weights, kinds: set(s.Kinds), oneShot: set(s.OneShotKinds), labels: s.Labels,
		engineFields: set(s.EngineFields), versionField: s.VersionField, acceleratorFields: set(s.AcceleratorFields)}
	var err error
	for _, l := range []struct {
		name string
		in   []string
		out  *[]*regexp.Regexp
	}{
		{"serving.probes", s.Probes, &sr.probes}, {"serving.healthProbes", s.HealthProbes, &sr.health},
		{"serving.accelerators", s.Accelerators, &sr.accels}, {"serving.idle", s.Idle, &sr.idle},
		{"serving.servers", s.Servers, &sr.servers},
		{"serving.clients", s.Clients, &sr.clients}, {"serving.convert", s.Convert, &sr.convert},
		{"serving.training", s.Training, &sr.train}, {"serving.clientImages", s.ClientImages, &sr.clientImages},
		{"serving.utilities", s.Utilities, &sr.utilities},
	} {
		if *l.out, err = compileAll(l.name, l.in); err != nil {
			return err
		}
	}
	for _, k := range []struct {
		name string
		res  []*regexp.Regexp
	}{{sigIdle, sr.idle}, {sigClient, sr.clients}, {sigServer, sr.servers}, {sigConvert, sr.convert}, {sigTraining, sr.train}} {
		for _, re := range k.res {
			sr.heads = append(sr.heads, headKind{name: k.name, lit: requiredLiteral(re), re: re})
		}
	}
	for _, rt := range r.runtimes {
		for i, w := range rt.Words {
			re, err := regexp.Compile(`(?:^|[^a-z])(?:` + w + `)(?P<version>v?[0-9]+(?:\.[0-9]+)+)?(?:[^a-z]|$)`)
			if err != nil {
				return fmt.Errorf("runtimes[%s].words[%d]: %w", rt.Name, i, err)
			}
			sr.words = append(sr.words, engineWord{rule: rt, re: re, prefix: regexp.MustCompile(`^(?:` + w + `)`)})
		}
		for i, f := range rt.EnvFamilies {
			re, err := regexp.Compile(f)
			if err != nil {
				return fmt.Errorf("runtimes[%s].envFamilies[%d]: %w", rt.Name, i, err)
			}
			sr.families = append(sr.families, engineFamily{rule: rt, re: re})
		}
	}
	sort.Strings(sr.labels)
	if len(s.NotEngineWords) > 0 {
		if sr.notEngine, err = regexp.Compile(`(?:^|[^a-z])(?:` + strings.Join(s.NotEngineWords, "|") + `)(?:[^a-z]|$)`); err != nil {
			return fmt.Errorf("serving.notEngineWords: %w", err)
		}
	}
	r.serving = sr
	return nil
}

// weight is the weight of signal name.
func (s *servingRules) weight(name string) float64 { return s.weights[name] }
