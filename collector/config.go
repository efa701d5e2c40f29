package collector

import (
	"fmt"
	"strings"

	"github.com/bomstream/bomstream/schemas"
	"github.com/bomstream/bomstream/schemas/cmdline"
)

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
	// AcceleratorLabels lists node label keys that name an accelerator, in
	// addition to the built-in ones (cloud.google.com/gke-accelerator,
	// nvidia.com/gpu.product, karpenter.k8s.aws/instance-gpu-name, ...): a
	// pod whose nodeSelector has one of these keys gives its main
	// containers the accelerator "node:<key>". Label values are never read.
	AcceleratorLabels []string
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

// builtinLabelAllow are the pod-template label keys kept in
// Component.Labels.
func builtinLabelAllow() []string {
	return []string{
		"llm-d.ai/role", "llm-d.ai/model", "inference.networking.k8s.io/engine-type",
		"app.kubernetes.io/component",
	}
}

// withDefaults is c with the defaults of the fields left empty.
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
		if !cmdline.IsFlag(a) || strings.ContainsAny(a, " \t\n=") {
			return fmt.Errorf("config: ArgAllow[%d] %q is not a flag (-x or --name)", i, a)
		}
	}
	for i, l := range c.LabelAllow {
		if l == "" || strings.ContainsAny(l, " \t\n") {
			return fmt.Errorf("config: LabelAllow[%d] %q is not a label key", i, l)
		}
	}
	for i, l := range c.AcceleratorLabels {
		if l == "" || strings.ContainsAny(l, " \t\n=") {
			return fmt.Errorf("config: AcceleratorLabels[%d] %q is not a label key", i, l)
		}
	}
	if err := c.Bounds.Validate(); err != nil {
		return fmt.Errorf("config: %w", err)
	}
	return nil
}

// idLike reports whether s matches ^[A-Za-z0-9_-]+$.
func idLike(s string) bool { return plainKey(s) }

// dnsLabel reports whether s is a DNS-1123 label (a namespace name).
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
