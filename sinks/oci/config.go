package oci

import (
	"fmt"
	"strings"

	"oras.land/oras-go/v2/registry"

	"github.com/bomstream/bomstream/signing"
)

// Config configures one oci sink. The zero value pushes each BOM into the
// repository of each of its images, over HTTPS, without credentials.
type Config struct {
	// Repository, when set ("registry.example.com/boms"), receives every
	// artifact instead of the images' own repositories. The subject
	// manifests are still resolved in the images' repositories, and
	// listing referrers then works on this repository
	// (oras discover <repository>@<image digest>).
	Repository string `yaml:"repository"`
	// DockerConfig is a docker config.json whose auths (or credential
	// helpers) give the registry credentials; empty means anonymous. The
	// file is read again when it changes, so rotated tokens are picked up.
	DockerConfig string `yaml:"dockerConfig"`
	// PlainHTTP talks HTTP instead of HTTPS to every registry: for local
	// test registries only.
	PlainHTTP bool `yaml:"plainHTTP"`
	// CheckRegistries are registry hosts the preflight check pings with
	// the credentials (the registry of Repository is always checked).
	CheckRegistries []string `yaml:"checkRegistries"`
	// Attest signs each BOM as an in-toto attestation of each image (a
	// Sigstore bundle, as cosign v3 attaches them), with a key or keyless;
	// empty signs nothing. See docs/signing.md.
	Attest signing.Config `yaml:"attest"`
	// PlainReferrer keeps pushing the unsigned BOM artifact next to the
	// attestation; default true. False with attest set pushes only the
	// attestation.
	PlainReferrer *bool `yaml:"plainReferrer"`
}

// plainReferrer reports whether the unsigned BOM artifact is pushed.
func (c *Config) plainReferrer() bool { return c.PlainReferrer == nil || *c.PlainReferrer }

// Validate checks the configuration without any I/O; errors name the key.
func (c *Config) Validate() error {
	if c.Repository != "" {
		if _, err := parseRepository(c.Repository); err != nil {
			return fmt.Errorf("repository: %w", err)
		}
	}
	if strings.ContainsAny(c.DockerConfig, "\x00\n") {
		return fmt.Errorf("dockerConfig: contains a NUL or a line break")
	}
	if err := c.Attest.Validate(); err != nil {
		return err
	}
	if !c.plainReferrer() && !c.Attest.Enabled() {
		return fmt.Errorf("plainReferrer: false pushes nothing unless attest is set")
	}
	for i, h := range c.CheckRegistries {
		ref := registry.Reference{Registry: h}
		if err := ref.ValidateRegistry(); err != nil || strings.Contains(h, "/") {
			return fmt.Errorf("checkRegistries[%d]: %q is not a registry host[:port]", i, h)
		}
	}
	return nil
}

// parseRepository parses "host[:port]/path" with no tag or digest.
func parseRepository(s string) (registry.Reference, error) {
	ref, err := registry.ParseReference(s)
	if err != nil {
		return registry.Reference{}, fmt.Errorf("%q: want registry/repository: %w", s, err)
	}
	if ref.Reference != "" {
		return registry.Reference{}, fmt.Errorf("%q: a repository, without tag or digest", s)
	}
	if ref.Registry == "docker.io" || ref.Registry == "index.docker.io" {
		ref.Registry = dockerHub
	}
	return ref, nil
}
