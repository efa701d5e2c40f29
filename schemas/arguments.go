package schemas

import (
	_ "embed"
	"encoding/json"
	"fmt"
)

// argumentsJSON is generated from the transformer's detection rules
// (transformer/rules.yaml) by
//
//	go test ./transformer -run TestArgumentDeclaration -update
//
// and a test there fails whenever the rules and this file differ.
//
//go:embed arguments.json
var argumentsJSON []byte

// Arguments declares which command-line arguments the detection rules read.
// The collector keeps the value of a flag only when it is in ValueFlags (or
// on its own configured allow-list) and replaces every other flag's value
// with RedactedValue; the transformer reads nothing else. Stages share this
// data, not code: the transformer's rules generate it, the collector reads it.
type Arguments struct {
	// ValueFlags are the flags whose values some rule reads (models,
	// revisions, settings, roles, backends, launch patterns, hints), in
	// every spelling the rules use ("--model", "-m", "--tp").
	ValueFlags []string `json:"valueFlags"`
	// BooleanFlags never take a value: the word after one is not its value.
	BooleanFlags []string `json:"booleanFlags"`
	// ArgsEnv are env vars whose value is more engine arguments, redacted
	// like arguments (VLLM_ADDITIONAL_ARGS, ...).
	ArgsEnv []string `json:"argsEnv"`
	// Env are the env vars whose literal values some rule reads (models,
	// revisions, settings, backends); the collector keeps their values
	// unless they look like a credential.
	Env []string `json:"env"`
	// EnvPatterns are regexes: the values of env vars whose names match
	// one are read too (MODEL_1_ID, LLAMA_ARG_MODEL).
	EnvPatterns []string `json:"envPatterns,omitempty"`
	// PythonCalls are the Python functions whose string arguments a rule
	// reads in python -c scripts (snapshot_download), and PythonKeywords
	// the keyword arguments it reads of them; the collector keeps only
	// those calls of a script, with only those keywords.
	PythonCalls    []string `json:"pythonCalls"`
	PythonKeywords []string `json:"pythonKeywords"`
	// Serving is what makes a container look like it serves a model: the
	// collector reports a pod whose owner it has no profile for only when
	// one of its containers matches (the transformer still decides).
	Serving ServingSignature `json:"serving"`
}

// ServingSignature lists the patterns of the serving engines the rules
// know and the flags and env that name a model.
type ServingSignature struct {
	// Images match "<registry>/<repository>" of an image (docker.io and
	// library/ filled in).
	Images []string `json:"images"`
	// Commands match anywhere in a container's command and args joined by
	// spaces (launch patterns without their anchor).
	Commands []string `json:"commands"`
	// Flags and Env name a model or an engine setting.
	Flags []string `json:"flags"`
	Env   []string `json:"env"`
	// Words are engines' words inside image names (regex fragments,
	// bounded by non-letters), EnvPatterns match engines' env families
	// and numbered model variables, and Accelerators match the
	// accelerators a container requests (Container.Accelerators): a
	// container with any of them may serve.
	Words        []string `json:"words,omitempty"`
	EnvPatterns  []string `json:"envPatterns,omitempty"`
	Accelerators []string `json:"accelerators,omitempty"`
}

// DeclaredArguments returns the built-in argument declaration.
func DeclaredArguments() (Arguments, error) {
	var a Arguments
	if err := json.Unmarshal(argumentsJSON, &a); err != nil {
		return a, fmt.Errorf("arguments.json: %w", err)
	}
	return a, nil
}
