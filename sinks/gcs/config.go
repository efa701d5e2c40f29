package gcs

import (
	"fmt"
	"net/url"
	"regexp"
	"strings"

	"github.com/bomstream/bomstream/signing"
)

// DefaultPathTemplate names each BOM object when Config.PathTemplate is empty.
const DefaultPathTemplate = "{{ .Prefix }}/{{ .Cluster }}/{{ .Namespace }}/{{ .Kind }}/{{ .Name }}/{{ .BOMHash }}.cdx.json"

// Config configures one gcs sink. The zero value is not usable: Bucket is required.
type Config struct {
	// Bucket is the name of the bucket (no gs:// scheme). Required.
	Bucket string `yaml:"bucket"`
	// Prefix is prepended to every object name ({prefix} in the path
	// template); empty means none. A trailing slash is ignored.
	Prefix string `yaml:"prefix"`
	// Endpoint is the base URL of the JSON API, for an emulator
	// (http://127.0.0.1:4443/storage/v1/) or a private endpoint; empty means
	// Google's.
	Endpoint string `yaml:"endpoint"`
	// CredentialsFile is a Google credentials JSON file (a service account
	// key, an external account for workload identity federation, ...).
	// Empty means the standard sources: GOOGLE_APPLICATION_CREDENTIALS, the
	// gcloud user credentials, then the metadata server (GKE workload
	// identity).
	CredentialsFile string `yaml:"credentialsFile"`
	// Anonymous sends no credentials at all: for emulators such as
	// fake-gcs-server. It excludes CredentialsFile.
	Anonymous bool `yaml:"anonymous"`
	// PathTemplate names the immutable object of each BOM; default
	// DefaultPathTemplate. It is written as the names of every sink are,
	// Dependency-Track's projects too: Go template fields, which people
	// know from Helm and kubectl, and which say a value is filled in where
	// "{name}" could be a literal brace. The fields: {{ .Prefix }},
	// {{ .Cluster }}, {{ .Namespace }} ("_" for a cluster-scoped workload),
	// {{ .Kind }}, {{ .Name }}, {{ .UID }} and {{ .BOMHash }} (the hex of
	// the sha256, no "sha256:"); nothing else goes between the braces.
	// {{ .BOMHash }} must be in the last path segment and nowhere else; the
	// folder part must hold the cluster, namespace, kind and name, or the
	// uid: the workload's latest.cdx.json and tombstone.json live in that
	// folder. The old form ("{cluster}/{uid}/{bomHash}.json") is still read,
	// names the same objects, and New logs a warning with the new form.
	PathTemplate string `yaml:"pathTemplate"`
	// Attest writes a Sigstore bundle beside each BOM object (its name +
	// BundleSuffix): the BOM signed as an in-toto attestation of the
	// object, with a key or keyless. Empty signs nothing. See docs/signing.md.
	Attest signing.Config `yaml:"attest"`
}

// Validate checks the configuration without any I/O; errors name the key.
func (c *Config) Validate() error {
	if c.Bucket == "" {
		return fmt.Errorf("bucket: required")
	}
	if !bucketPattern.MatchString(c.Bucket) || strings.Contains(c.Bucket, "..") {
		return fmt.Errorf("bucket: %q is not a bucket name (3-222 characters of a-z, 0-9, '-', '_', '.', starting and ending with a letter or digit; no gs:// scheme)", c.Bucket)
	}
	if p := strings.TrimSuffix(c.Prefix, "/"); p != "" {
		for seg := range strings.SplitSeq(p, "/") {
			if seg == "" || seg == "." || seg == ".." {
				return fmt.Errorf("prefix: %q has an empty, \".\" or \"..\" segment", c.Prefix)
			}
		}
		if strings.ContainsAny(p, "\r\n\x00") {
			return fmt.Errorf("prefix: %q contains a line break or NUL", c.Prefix)
		}
	}
	if c.Endpoint != "" {
		u, err := url.Parse(c.Endpoint)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("endpoint: %q is not an http(s) URL", c.Endpoint)
		}
		if u.User != nil {
			return fmt.Errorf("endpoint: must not carry credentials")
		}
	}
	if c.Anonymous && c.CredentialsFile != "" {
		return fmt.Errorf("anonymous and credentialsFile: set one, not both")
	}
	if err := c.Attest.Validate(); err != nil {
		return err
	}
	if _, err := parseTemplate(c.pathTemplate()); err != nil {
		return fmt.Errorf("pathTemplate: %w", err)
	}
	return nil
}

func (c *Config) pathTemplate() string {
	if c.PathTemplate == "" {
		return DefaultPathTemplate
	}
	return c.PathTemplate
}

var bucketPattern = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{1,220}[a-z0-9]$`)
