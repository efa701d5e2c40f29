// Package validate checks bomstream's events and BOMs against their JSON
// Schemas: the event schemas in json/ (the contract of the CHANGES stream,
// embedded) and the official CycloneDX 1.6 schema. It is for tests and
// tools; package schemas, the contract the stages share, stays free of
// dependencies.
package validate

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/bomstream/bomstream/schemas"
)

//go:embed json/*.schema.json
var eventSchemas embed.FS

const (
	schemaBase      = "https://bomstream.dev/schemas/"
	cdxSchemaBase   = "http://cyclonedx.org/schema/"
	cdxBOMSchema    = cdxSchemaBase + "bom-1.6.schema.json"
	cdxModule       = "github.com/CycloneDX/cyclonedx-go"
	envCDXSchemaDir = "BOMSTREAM_CYCLONEDX_SCHEMA_DIR"
)

// Validator checks events and BOMs against their JSON Schemas. The schemas are
// compiled once, by New; a Validator is safe for concurrent use.
type Validator struct {
	events   map[string]*jsonschema.Schema // by event type
	bom      *jsonschema.Schema            // nil when built without CycloneDX schemas
	dir      string                        // where the BOM schema came from
	official bool                          // every referenced schema read from dir
}

// New compiles the event schemas and, when cdxDir is not empty, the
// CycloneDX 1.6 JSON schema found in that folder (bom-1.6.schema.json with the
// spdx and jsf schemas it references). See CycloneDXSchemaDir.
func New(cdxDir string) (*Validator, error) {
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	names, err := fs.Glob(eventSchemas, "json/*.schema.json")
	if err != nil {
		return nil, fmt.Errorf("list event schemas: %w", err)
	}
	for _, n := range names {
		if err := addResource(c, schemaBase+filepath.Base(n), func() ([]byte, error) { return eventSchemas.ReadFile(n) }); err != nil {
			return nil, err
		}
	}
	v := &Validator{events: map[string]*jsonschema.Schema{}}
	for typ, file := range map[string]string{
		schemas.TypeObserved: "workload-observed.v1.schema.json",
		schemas.TypeDeleted:  "workload-deleted.v1.schema.json",
	} {
		s, err := c.Compile(schemaBase + file)
		if err != nil {
			return nil, fmt.Errorf("compile %s: %w", file, err)
		}
		v.events[typ] = s
	}
	if cdxDir == "" {
		return v, nil
	}
	// The BOM schema refers to spdx.schema.json and jsf-0.82.schema.json next to
	// its $id; the cyclonedx-go module spells the latter "schemax".
	files := map[string][]string{
		"bom-1.6.schema.json":  {"bom-1.6.schema.json"},
		"spdx.schema.json":     {"spdx.schema.json"},
		"jsf-0.82.schema.json": {"jsf-0.82.schema.json", "jsf-0.82.schemax.json"},
	}
	for id, candidates := range files {
		if err := addResource(c, cdxSchemaBase+id, func() ([]byte, error) { return readFirst(cdxDir, candidates) }); err != nil {
			return nil, err
		}
	}
	if v.bom, err = c.Compile(cdxBOMSchema); err != nil {
		return nil, fmt.Errorf("compile cyclonedx 1.6 schema from %s: %w", cdxDir, err)
	}
	v.dir, v.official = cdxDir, true
	return v, nil
}

// New17 returns a Validator whose ValidateBOM checks CycloneDX 1.7 JSON
// against bom-1.7.schema.json in cdxDir, with the spdx, jsf and
// cryptography-defs schemas it references. The cyclonedx-go module ships
// no cryptography-defs.schema.json: when cdxDir has none, its two enums
// (algorithm families, elliptic curves) are checked as plain strings, and
// Official reports false.
func New17(cdxDir string) (*Validator, error) {
	v, err := New("")
	if err != nil {
		return nil, err
	}
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	for id, candidates := range map[string][]string{
		"bom-1.7.schema.json":  {"bom-1.7.schema.json"},
		"spdx.schema.json":     {"spdx.schema.json"},
		"jsf-0.82.schema.json": {"jsf-0.82.schema.json", "jsf-0.82.schemax.json"},
	} {
		if err := addResource(c, cdxSchemaBase+id, func() ([]byte, error) { return readFirst(cdxDir, candidates) }); err != nil {
			return nil, err
		}
	}
	v.official = true
	crypto := func() ([]byte, error) { return readFirst(cdxDir, []string{"cryptography-defs.schema.json"}) }
	if _, err := os.Stat(filepath.Join(cdxDir, "cryptography-defs.schema.json")); err != nil {
		v.official = false
		crypto = func() ([]byte, error) {
			return []byte(`{"definitions":{"algorithmFamiliesEnum":{"type":"string"},"ellipticCurvesEnum":{"type":"string"}}}`), nil
		}
	}
	if err := addResource(c, cdxSchemaBase+"cryptography-defs.schema.json", crypto); err != nil {
		return nil, err
	}
	if v.bom, err = c.Compile(cdxSchemaBase + "bom-1.7.schema.json"); err != nil {
		return nil, fmt.Errorf("compile cyclonedx 1.7 schema from %s: %w", cdxDir, err)
	}
	v.dir = cdxDir
	return v, nil
}

// Official reports whether the BOM schema was compiled from a complete
// official schema folder (see New17); Dir names that folder.
func (v *Validator) Official() bool { return v.official }

// Dir is the folder the CycloneDX schema was read from ("" without one).
func (v *Validator) Dir() string { return v.dir }

func addResource(c *jsonschema.Compiler, url string, read func() ([]byte, error)) error {
	b, err := read()
	if err != nil {
		return fmt.Errorf("read schema %s: %w", url, err)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		return fmt.Errorf("parse schema %s: %w", url, err)
	}
	if err := c.AddResource(url, doc); err != nil {
		return fmt.Errorf("add schema %s: %w", url, err)
	}
	return nil
}

func readFirst(dir string, names []string) ([]byte, error) {
	var errs []error
	for _, n := range names {
		b, err := os.ReadFile(filepath.Join(dir, n))
		if err == nil {
			return b, nil
		}
		errs = append(errs, err)
	}
	return nil, errors.Join(errs...)
}

// ValidateEvent checks the JSON of one WorkloadChange against the schema of its
// type. An unknown type is an error.
func (v *Validator) ValidateEvent(raw []byte) error {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return fmt.Errorf("validate event: %w", err)
	}
	obj, _ := doc.(map[string]any)
	typ, _ := obj["type"].(string)
	s, ok := v.events[typ]
	if !ok {
		return fmt.Errorf("validate event: unknown type %q", typ)
	}
	if err := s.Validate(doc); err != nil {
		return fmt.Errorf("validate event %v: %w", obj["id"], err)
	}
	return nil
}

// ValidateBOM checks CycloneDX JSON against the official schema of the
// Validator's version (1.6 from New, 1.7 from New17).
func (v *Validator) ValidateBOM(raw []byte) error {
	if v.bom == nil {
		return errors.New("validate bom: validator built without the cyclonedx schema")
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return fmt.Errorf("validate bom: %w", err)
	}
	if err := v.bom.Validate(doc); err != nil {
		return fmt.Errorf("validate bom: %w", err)
	}
	return nil
}

// CycloneDX returns a Validator with the CycloneDX 1.6 schema found by
// CycloneDXSchemaDir. It is compiled on the first call and shared by the
// callers of one process (a compiled schema is immutable, and compiling it
// is the slow part).
func CycloneDX() (*Validator, error) { return cycloneDX() }

var cycloneDX = sync.OnceValues(func() (*Validator, error) {
	dir, err := CycloneDXSchemaDir()
	if err != nil {
		return nil, err
	}
	return New(dir)
})

// CycloneDX17 returns a Validator with the CycloneDX 1.7 schema found by
// CycloneDX17SchemaDir, compiled once per process like CycloneDX's.
func CycloneDX17() (*Validator, error) { return cycloneDX17() }

var cycloneDX17 = sync.OnceValues(func() (*Validator, error) {
	dir, err := CycloneDX17SchemaDir()
	if err != nil {
		return nil, err
	}
	return New17(dir)
})

// CycloneDX17SchemaDir finds the CycloneDX 1.7 JSON schemas: the folder
// named by $BOMSTREAM_CYCLONEDX17_SCHEMA_DIR, else
// ../shared/schemas/cyclonedx-1.7 above the working directory (the official
// 1.7.1 schemas, complete), else the schema/ folder of the cyclonedx-go
// module (which lacks cryptography-defs.schema.json; see New17).
func CycloneDX17SchemaDir() (string, error) {
	if d := os.Getenv(envCDXSchemaDir + "17"); d != "" {
		return d, nil
	}
	if d, ok := SharedSchemaDir("cyclonedx-1.7", "bom-1.7.schema.json"); ok {
		return d, nil
	}
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", cdxModule).Output()
	if d := strings.TrimSpace(string(out)); err == nil && d != "" {
		p := filepath.Join(d, "schema")
		if _, err := os.Stat(filepath.Join(p, "bom-1.7.schema.json")); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("cyclonedx 1.7 schema not found (set %s17, or provide shared/schemas/cyclonedx-1.7 above the working directory)", envCDXSchemaDir)
}

// SharedSchemaDir finds shared/schemas/<name> holding file above the working
// directory (where CI keeps the official schemas).
func SharedSchemaDir(name, file string) (string, bool) {
	wd, _ := os.Getwd()
	for d := wd; ; d = filepath.Dir(d) {
		p := filepath.Join(d, "shared", "schemas", name)
		if _, err := os.Stat(filepath.Join(p, file)); err == nil {
			return p, true
		}
		if d == filepath.Dir(d) {
			return "", false
		}
	}
}

// CycloneDXSchemaDir finds the official CycloneDX JSON schemas: the folder named
// by $BOMSTREAM_CYCLONEDX_SCHEMA_DIR, else the schema/ folder of the
// cyclonedx-go module this build uses (located with `go list`, so it needs the
// Go toolchain and the module cache), else ../shared/schemas/cyclonedx-1.6
// above the working directory.
func CycloneDXSchemaDir() (string, error) {
	if d := os.Getenv(envCDXSchemaDir); d != "" {
		return d, nil
	}
	var tried []string
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", cdxModule).Output()
	if d := strings.TrimSpace(string(out)); err == nil && d != "" {
		p := filepath.Join(d, "schema")
		if _, err := os.Stat(filepath.Join(p, "bom-1.6.schema.json")); err == nil {
			return p, nil
		}
		tried = append(tried, p)
	} else {
		tried = append(tried, "go list -m "+cdxModule)
	}
	if p, ok := SharedSchemaDir("cyclonedx-1.6", "bom-1.6.schema.json"); ok {
		return p, nil
	}
	wd, _ := os.Getwd()
	tried = append(tried, "shared/schemas/cyclonedx-1.6 above "+wd)
	return "", fmt.Errorf("cyclonedx 1.6 schema not found (set %s; tried %s)", envCDXSchemaDir, strings.Join(tried, ", "))
}
