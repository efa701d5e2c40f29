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
}

// DeclaredArguments returns the built-in argument declaration.
func DeclaredArguments() (Arguments, error) {
	var a Arguments
	if err := json.Unmarshal(argumentsJSON, &a); err != nil {
		return a, fmt.Errorf("arguments.json: %w", err)
	}
	return a, nil
}
