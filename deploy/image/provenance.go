package main

import (
	"encoding/json"
	"runtime/debug"
	"slices"
	"strings"
	"time"
)

const (
	// PredicateSLSA is the predicate type of SLSA provenance v1: what
	// `cosign verify-attestation --type slsaprovenance1` looks for.
	PredicateSLSA = "https://slsa.dev/provenance/v1"
	// BuildType names how deploy/image builds, documented in docs/image.md.
	BuildType = DefaultSource + "/blob/main/docs/image.md#provenance"
	// DefaultBuilderID is the provenance's builder.id when --builder-id
	// names no other (a CI workflow, say).
	DefaultBuilderID = DefaultSource + "/deploy/image"
)

// provenanceInput is what the provenance of one image (a platform image,
// or the index over several) is made from: all of it read from the image.
type provenanceInput struct {
	Title, Version, Revision, Source string
	Created                          time.Time
	BuilderID                        string
	Builds                           []platformBuild // one per platform, in index order
}

// platformBuild is the binary of one platform image.
type platformBuild struct {
	Platform Platform
	Build    *debug.BuildInfo // its build info (go version -m)
	Binary   string           // SHA-256 of /bomstream
}

// SLSA provenance v1 (https://slsa.dev/spec/v1.0/provenance): the predicate.
type provenance struct {
	BuildDefinition buildDefinition `json:"buildDefinition"`
	RunDetails      runDetails      `json:"runDetails"`
}

type buildDefinition struct {
	BuildType            string               `json:"buildType"`
	ExternalParameters   externalParameters   `json:"externalParameters"`
	InternalParameters   internalParameters   `json:"internalParameters"`
	ResolvedDependencies []resourceDescriptor `json:"resolvedDependencies"`
}

// externalParameters are what the one who ran the build chose.
type externalParameters struct {
	Source    string   `json:"source"`   // the repository, git+https://...
	Revision  string   `json:"revision"` // the commit, when known
	Package   string   `json:"package"`  // the main package built
	Title     string   `json:"title"`
	Version   string   `json:"version"`
	GoVersion string   `json:"goVersion"`
	Tags      []string `json:"tags"` // Go build tags
	Platforms []string `json:"platforms"`
}

// internalParameters are what the builder fixed: its go build flags, and
// the Go build settings of each platform's binary (CGO_ENABLED, GOARCH,
// GOAMD64...).
type internalParameters struct {
	BuildFlags    []string                     `json:"buildFlags"`
	BuildSettings map[string]map[string]string `json:"buildSettings"`
}

// resourceDescriptor is an in-toto ResourceDescriptor.
type resourceDescriptor struct {
	Name        string            `json:"name,omitempty"`
	URI         string            `json:"uri,omitempty"`
	Digest      map[string]string `json:"digest,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

type runDetails struct {
	Builder    builder              `json:"builder"`
	Metadata   buildMetadata        `json:"metadata"`
	Byproducts []resourceDescriptor `json:"byproducts,omitempty"`
}

type builder struct {
	ID string `json:"id"`
}

// buildMetadata times the build with SOURCE_DATE_EPOCH, so that the
// predicate is as reproducible as the image (the signature is not).
type buildMetadata struct {
	StartedOn  string `json:"startedOn"`
	FinishedOn string `json:"finishedOn"`
}

// provenancePredicate is the SLSA provenance v1 predicate of the image in:
// the source and commit, the Go version, the build tags and platforms;
// the settings of each binary; as resolved dependencies the commit, the
// Go toolchain and every module linked into the binaries with its go.sum
// hash (dirHash: the h1: hash in hex, and the h1: form itself); the
// binaries as byproducts.
func provenancePredicate(in provenanceInput) ([]byte, error) {
	first := in.Builds[0].Build
	ext := externalParameters{
		Source: "git+" + in.Source, Revision: in.Revision, Package: first.Path,
		Title: in.Title, Version: in.Version, GoVersion: first.GoVersion, Tags: []string{},
	}
	settings := map[string]map[string]string{}
	var byproducts []resourceDescriptor
	for _, b := range in.Builds {
		ext.Platforms = append(ext.Platforms, b.Platform.String())
		s := map[string]string{}
		for _, kv := range b.Build.Settings {
			s[kv.Key] = kv.Value
		}
		settings[b.Platform.String()] = s
		byproducts = append(byproducts, resourceDescriptor{
			Name:   b.Platform.String() + ":" + binaryPath,
			Digest: map[string]string{"sha256": b.Binary},
		})
	}
	if tags := settings[in.Builds[0].Platform.String()]["-tags"]; tags != "" {
		ext.Tags = strings.Split(tags, ",")
	}

	var deps []resourceDescriptor
	if in.Revision != "" {
		deps = append(deps, resourceDescriptor{Name: "source", URI: ext.Source, Digest: map[string]string{"gitCommit": in.Revision}})
	}
	deps = append(deps, resourceDescriptor{Name: "go", URI: goPURL("std", first.GoVersion, "type=module")})
	seen := map[string]bool{}
	var mods []resourceDescriptor
	for _, b := range in.Builds {
		for _, d := range b.Build.Deps {
			m := d
			if d.Replace != nil {
				m = d.Replace
			}
			uri := goPURL(m.Path, m.Version, "type=module")
			if seen[uri] {
				continue
			}
			seen[uri] = true
			rd := resourceDescriptor{Name: m.Path, URI: uri}
			if h := h1SHA256(m.Sum); h != "" {
				rd.Digest = map[string]string{"dirHash": h}
				rd.Annotations = map[string]string{"goSum": m.Sum}
			}
			if d.Replace != nil {
				if rd.Annotations == nil {
					rd.Annotations = map[string]string{}
				}
				rd.Annotations["replaces"] = d.Path + "@" + d.Version
			}
			mods = append(mods, rd)
		}
	}
	slices.SortFunc(mods, func(a, b resourceDescriptor) int { return strings.Compare(a.URI, b.URI) })

	at := in.Created.UTC().Format(time.RFC3339)
	return json.Marshal(provenance{
		BuildDefinition: buildDefinition{
			BuildType:            BuildType,
			ExternalParameters:   ext,
			InternalParameters:   internalParameters{BuildFlags: buildFlags, BuildSettings: settings},
			ResolvedDependencies: append(deps, mods...),
		},
		RunDetails: runDetails{
			Builder:    builder{ID: in.BuilderID},
			Metadata:   buildMetadata{StartedOn: at, FinishedOn: at},
			Byproducts: byproducts,
		},
	})
}
