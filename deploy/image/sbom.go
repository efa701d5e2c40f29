package main

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"runtime/debug"
	"sort"
	"strings"
	"time"

	cdx "github.com/CycloneDX/cyclonedx-go"
	"github.com/google/uuid"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// sbomInput is what the SBOM of one platform image is made from.
type sbomInput struct {
	Config   Config
	Platform Platform
	Image    v1.Hash           // the image manifest digest
	Build    *debug.BuildInfo  // read from the built binary (go version -m)
	Binary   string            // SHA-256 of /bomstream
	Files    map[string]string // the other files of the layer, path to SHA-256
}

// imageSBOM is the CycloneDX 1.6 SBOM of one platform image: the image as the
// metadata component; the binary (the main module, with its build settings);
// the Go standard library and every module linked into it, with the module
// hash of go.sum as SHA-256; and the text files beside it. The build info
// lists modules, not their graph, so the binary depends on all of them.
// Everything in it comes from the image, so it is as reproducible as the
// image.
func imageSBOM(in sbomInput) ([]byte, error) {
	image := imageComponent(in)
	binary := binaryComponent(in)
	comps, binDeps := moduleComponents(in.Build)
	comps = append([]cdx.Component{binary}, comps...)
	imageDeps := []string{binary.BOMRef}
	files, fileRefs := fileComponents(in.Files)
	comps = append(comps, files...)
	imageDeps = append(imageDeps, fileRefs...)

	bom := cdx.NewBOM()
	bom.SerialNumber = "urn:uuid:" + uuid.NewSHA1(uuid.NameSpaceURL, []byte(DefaultSource+"/image-sbom/"+in.Image.String())).String()
	bom.Metadata = &cdx.Metadata{
		Timestamp: in.Config.Created.UTC().Format(time.RFC3339),
		Tools: &cdx.ToolsChoice{Components: &[]cdx.Component{{
			Type:        cdx.ComponentTypeApplication,
			Name:        "bomstream-image",
			Version:     in.Config.Version,
			Description: "go run ./deploy/image: the image builder of " + DefaultSource,
		}}},
		Component: &image,
	}
	bom.Components = &comps
	bom.Dependencies = &[]cdx.Dependency{
		{Ref: image.BOMRef, Dependencies: &imageDeps},
		{Ref: binary.BOMRef, Dependencies: &binDeps},
	}
	var buf bytes.Buffer
	enc := cdx.NewBOMEncoder(&buf, cdx.BOMFileFormatJSON).SetPretty(true).SetEscapeHTML(false)
	if err := enc.EncodeVersion(bom, cdx.SpecVersion1_6); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// imageComponent is the image itself: the SBOM's metadata component.
func imageComponent(in sbomInput) cdx.Component {
	cfg, p := in.Config, in.Platform
	imageRef := "pkg:oci/" + cfg.Title + "@" + in.Image.Algorithm + "%3A" + in.Image.Hex + "?arch=" + p.Arch
	image := cdx.Component{
		BOMRef:     imageRef,
		Type:       cdx.ComponentTypeContainer,
		Name:       cfg.Title,
		Version:    cfg.Version,
		PackageURL: imageRef,
		Hashes:     &[]cdx.Hash{{Algorithm: cdx.HashAlgoSHA256, Value: in.Image.Hex}},
		ExternalReferences: &[]cdx.ExternalReference{
			{Type: cdx.ERTypeVCS, URL: cfg.Source},
		},
		Properties: &[]cdx.Property{
			{Name: "oci:platform", Value: p.String()},
			{Name: "oci:config:user", Value: "65532:65532"},
		},
	}
	if cfg.Revision != "" {
		*image.Properties = append(*image.Properties, cdx.Property{Name: annRevision, Value: cfg.Revision})
	}
	return image
}

// binaryComponent is the binary: the main module with its build settings.
func binaryComponent(in sbomInput) cdx.Component {
	bi, p := in.Build, in.Platform
	mainVersion := bi.Main.Version
	if mainVersion == "" || mainVersion == "(devel)" {
		mainVersion = in.Config.Version
	}
	binRef := goPURL(bi.Main.Path, mainVersion, "goarch="+p.Arch+"&goos="+p.OS+"&type=module")
	props := []cdx.Property{{Name: "bomstream:go:package", Value: bi.Path}}
	for _, s := range bi.Settings {
		props = append(props, cdx.Property{Name: "bomstream:go:build:" + s.Key, Value: s.Value})
	}
	return cdx.Component{
		BOMRef:     binRef,
		Type:       cdx.ComponentTypeApplication,
		Name:       bi.Main.Path,
		Version:    mainVersion,
		PackageURL: binRef,
		Hashes:     &[]cdx.Hash{{Algorithm: cdx.HashAlgoSHA256, Value: in.Binary}},
		Properties: &props,
		Evidence:   &cdx.Evidence{Occurrences: &[]cdx.EvidenceOccurrence{{Location: binaryPath}}},
	}
}

// moduleComponents are the Go standard library and every module linked
// into the binary, with the refs the binary depends on.
func moduleComponents(bi *debug.BuildInfo) ([]cdx.Component, []string) {
	std := cdx.Component{
		Type:    cdx.ComponentTypeLibrary,
		Name:    "std",
		Version: bi.GoVersion,
	}
	std.PackageURL = goPURL("std", bi.GoVersion, "type=module")
	std.BOMRef = std.PackageURL
	comps := []cdx.Component{std}
	refs := []string{std.BOMRef}
	for _, d := range bi.Deps {
		m := d
		if d.Replace != nil {
			m = d.Replace
		}
		c := cdx.Component{Type: cdx.ComponentTypeLibrary, Name: m.Path, Version: m.Version}
		c.PackageURL = goPURL(m.Path, m.Version, "type=module")
		c.BOMRef = c.PackageURL
		if h := h1SHA256(m.Sum); h != "" {
			c.Hashes = &[]cdx.Hash{{Algorithm: cdx.HashAlgoSHA256, Value: h}}
		}
		if d.Replace != nil {
			c.Properties = &[]cdx.Property{{Name: "bomstream:go:replaces", Value: d.Path + "@" + d.Version}}
		}
		comps = append(comps, c)
		refs = append(refs, c.BOMRef)
	}
	return comps, refs
}

// fileComponents are the text files beside the binary, sorted by path.
func fileComponents(files map[string]string) ([]cdx.Component, []string) {
	paths := make([]string, 0, len(files))
	for path := range files {
		paths = append(paths, path)
	}
	sort.Strings(paths)
	comps := make([]cdx.Component, 0, len(paths))
	refs := make([]string, 0, len(paths))
	for _, path := range paths {
		comps = append(comps, cdx.Component{
			BOMRef: "file:" + path,
			Type:   cdx.ComponentTypeFile,
			Name:   path,
			Hashes: &[]cdx.Hash{{Algorithm: cdx.HashAlgoSHA256, Value: files[path]}},
		})
		refs = append(refs, "file:"+path)
	}
	return comps, refs
}

// goPURL is pkg:golang/PATH@VERSION?QUALIFIERS, each path segment and the
// version percent-encoded.
func goPURL(path, version, qualifiers string) string {
	segs := strings.Split(path, "/")
	for i, s := range segs {
		segs[i] = url.PathEscape(s)
	}
	p := "pkg:golang/" + strings.Join(segs, "/")
	if version != "" {
		p += "@" + strings.ReplaceAll(url.PathEscape(version), "+", "%2B")
	}
	if qualifiers != "" {
		p += "?" + qualifiers
	}
	return p
}

// h1SHA256 turns a go.sum hash (h1:, base64 of a SHA-256) into hex, or ""
// for anything else.
func h1SHA256(sum string) string {
	b64, ok := strings.CutPrefix(sum, "h1:")
	if !ok {
		return ""
	}
	b, err := base64.StdEncoding.DecodeString(b64)
	if err != nil || len(b) != 32 {
		return ""
	}
	return hex.EncodeToString(b)
}

// indexSBOM is the CycloneDX 1.6 SBOM of the multi-arch index, for those
// who verify the tag (which resolves to the index): the index as the
// metadata component, each platform image as a component with what its
// own SBOM lists (platformSBOMs, in index order), shared modules once.
func indexSBOM(title, version, source string, index v1.Hash, created time.Time, platformSBOMs [][]byte) ([]byte, error) {
	ref := "pkg:oci/" + title + "@" + index.Algorithm + "%3A" + index.Hex
	top := cdx.Component{
		BOMRef: ref, Type: cdx.ComponentTypeContainer, Name: title, Version: version, PackageURL: ref,
		Hashes:             &[]cdx.Hash{{Algorithm: cdx.HashAlgoSHA256, Value: index.Hex}},
		ExternalReferences: &[]cdx.ExternalReference{{Type: cdx.ERTypeVCS, URL: source}},
	}
	var (
		comps    []cdx.Component
		deps     []cdx.Dependency
		images   []string
		seen     = map[string]bool{}
		seenDeps = map[string]bool{}
		tools    *cdx.ToolsChoice
	)
	for _, raw := range platformSBOMs {
		var bom cdx.BOM
		if err := json.Unmarshal(raw, &bom); err != nil {
			return nil, fmt.Errorf("platform sbom: %w", err)
		}
		if bom.Metadata == nil || bom.Metadata.Component == nil || bom.Components == nil {
			return nil, errors.New("platform sbom: no metadata component or no components")
		}
		tools = bom.Metadata.Tools
		images = append(images, bom.Metadata.Component.BOMRef)
		for _, c := range append([]cdx.Component{*bom.Metadata.Component}, *bom.Components...) {
			if !seen[c.BOMRef] {
				seen[c.BOMRef] = true
				comps = append(comps, c)
			}
		}
		if bom.Dependencies != nil {
			for _, d := range *bom.Dependencies {
				if !seenDeps[d.Ref] {
					seenDeps[d.Ref] = true
					deps = append(deps, d)
				}
			}
		}
	}
	bom := cdx.NewBOM()
	bom.SerialNumber = "urn:uuid:" + uuid.NewSHA1(uuid.NameSpaceURL, []byte(DefaultSource+"/image-sbom/"+index.String())).String()
	bom.Metadata = &cdx.Metadata{Timestamp: created.UTC().Format(time.RFC3339), Tools: tools, Component: &top}
	bom.Components = &comps
	deps = append([]cdx.Dependency{{Ref: ref, Dependencies: &images}}, deps...)
	bom.Dependencies = &deps
	var buf bytes.Buffer
	enc := cdx.NewBOMEncoder(&buf, cdx.BOMFileFormatJSON).SetPretty(true).SetEscapeHTML(false)
	if err := enc.EncodeVersion(bom, cdx.SpecVersion1_6); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
