package transformer

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"

	"github.com/bomstream/bomstream/schemas"
)

// argumentsFile is the collector's copy of the built-in rules' argument
// declaration.
var argumentsFile = filepath.Join("..", "schemas", "arguments.json")

// TestArgumentDeclaration fails when schemas/arguments.json, from which the
// collector takes its argument allow-list, differs from what rules.yaml
// reads; -update rewrites it.
func TestArgumentDeclaration(t *testing.T) {
	rs, err := loadRules("")
	if err != nil {
		t.Fatal(err)
	}
	want := rs.Arguments()
	b, err := json.MarshalIndent(struct {
		GeneratedFrom string `json:"generatedFrom"`
		schemas.Arguments
	}{"transformer/rules.yaml by: go test ./transformer -run TestArgumentDeclaration -update", want}, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	b = append(b, '\n')
	if *update {
		if err := os.WriteFile(argumentsFile, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := schemas.DeclaredArguments()
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("schemas/arguments.json differs from what rules.yaml reads (run with -update):\n got %+v\nwant %+v", got, want)
	}
	if disk, err := os.ReadFile(argumentsFile); err != nil || !bytes.Equal(disk, b) {
		t.Errorf("%s is not the generated file (run with -update): %v", argumentsFile, err)
	}
	// Spot checks: what the rules plainly need.
	for _, f := range []string{"--model", "--revision", "--tensor-parallel-size", "-tp", "--served-model-name", "--lora-modules", "--backend", "--disaggregation-mode", "-m", "--kv-transfer-config"} {
		if !contains(want.ValueFlags, f) {
			t.Errorf("ValueFlags lacks %s", f)
		}
	}
	for _, f := range []string{"--api-key", "--hf-token", "--password", "-p"} {
		if contains(want.ValueFlags, f) {
			t.Errorf("ValueFlags keeps %s", f)
		}
	}
}

func contains(xs []string, x string) bool {
	return slices.Contains(xs, x)
}
