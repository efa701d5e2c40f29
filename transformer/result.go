package transformer

import "github.com/bomstream/bomstream/schemas"

// Result is what Render makes of one event.
//
// When the workload names no serving runtime and no model reference that
// stands alone (nginx, redis, a notebook with MODEL=llama3, a tombstone), BOM
// is nil and Skipped says why. Otherwise BOM holds the
// CycloneDX 1.6 JSON bytes and BomHash their schemas.BomHash.
type Result struct {
	Workload schemas.Workload
	BOM      []byte
	BomHash  string
	Skipped  string
	Summary  Summary
	// Facts are what BOM says to the findings rules, as findings.ReadFacts
	// would read them from it, when Config.Facts asks for them; nil else,
	// and when the event renders no BOM.
	Facts *schemas.BOMFacts
}

// Summary is the one-line view of a BOM that the CLI prints and history lists.
type Summary struct {
	Runtimes []RuntimeSummary `json:"runtimes,omitempty"`
	Models   []string         `json:"models,omitempty"`
	Roles    []string         `json:"roles,omitempty"`
}

// RuntimeSummary is one detected serving engine.
type RuntimeSummary struct {
	Name       string `json:"name"`
	Version    string `json:"version,omitempty"`
	Confidence string `json:"confidence"` // declared or inferred
}
