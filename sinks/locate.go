package sinks

import (
	"context"

	"github.com/bomstream/bomstream/schemas"
)

// Locator is implemented by sinks that can say, without I/O, where their
// store holds a version of a workload's BOM.
//
// Locate names what Export writes for v, with the sink's own naming, from
// its configuration and v alone: it reads no store, so it cannot tell
// whether the write happened (the sink's ledger can: runner.LedgerEntry).
// It returns nil for a tombstone, for a workload whose identity Export
// refuses, and where the store keeps nothing of v (a store that keeps only
// the latest, for a version that is not). A Location never carries a
// credential. Locate is safe for concurrent use and may be called after
// Close.
type Locator interface {
	Locate(v Version) []Location
}

// Version names one version of a workload's BOM.
type Version struct {
	Workload  schemas.Workload
	BomHash   string // "sha256:<hex>"; "" for a tombstone
	ChangeSeq uint64
	// Images are the resolved image digests of the BOM (BOM.Images: the
	// oci sink's subjects); may be empty, and then the oci sink holds
	// nothing of the version.
	Images []schemas.ImageDigest
	Latest bool // the version is the workload's current one
}

// HasBOM reports whether v names a BOM (a well-formed BomHash) rather than
// a tombstone: a store holds nothing of a version that does not.
func (v Version) HasBOM() bool { return schemas.ValidBomHash(v.BomHash) }

// Location is one place a store holds the BOM.
type Location struct {
	Sink string // the sink's name
	Type string // "gcs", "dependency-track", "oci", "file"
	// What is held there: "object", "latest object" (gcs), "project"
	// (dependency-track), "referrer", "attestation" (oci), "file",
	// "latest file" (file).
	What string
	// Where names it: gs://bucket/object, "project NAME version VERSION at
	// https://dt.example", registry/repository@sha256:... (the subject the
	// BOM is a referrer of), /path/file.
	Where string
	// URL is a link a browser can open, when one exists (the Cloud
	// console's page of a GCS object); "" otherwise.
	URL string
	// ArtifactType is the artifact type of an OCI referrer; "" elsewhere.
	ArtifactType string
	// Note says what Where depends on that Locate cannot know (a path
	// relative to the working directory of the process running the sink),
	// or that nothing is written there (a dry run); "" when nothing.
	Note string
}

// withOptional returns w, a wrapper of s, with the optional interfaces of s
// (Checker, Locator) that callers type-assert on: w passes them through.
func withOptional(w, s Sink) Sink {
	c, isChecker := s.(Checker)
	l, isLocator := s.(Locator)
	switch {
	case isChecker && isLocator:
		return checkingLocating{Sink: w, c: c, l: l}
	case isChecker:
		return checking{Sink: w, c: c}
	case isLocator:
		return locating{Sink: w, l: l}
	}
	return w
}

type checking struct {
	Sink
	c Checker
}

func (s checking) Check(ctx context.Context) []Check { return s.c.Check(ctx) }

type locating struct {
	Sink
	l Locator
}

func (s locating) Locate(v Version) []Location { return s.l.Locate(v) }

type checkingLocating struct {
	Sink
	c Checker
	l Locator
}

func (s checkingLocating) Check(ctx context.Context) []Check { return s.c.Check(ctx) }
func (s checkingLocating) Locate(v Version) []Location       { return s.l.Locate(v) }
