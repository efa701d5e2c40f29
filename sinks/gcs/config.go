package gcs

import (
	"fmt"
	"net/url"
	"regexp"
	"strings"

	"github.com/bomstream/bomstream/signing"
)

// DefaultPathTemplate names each BOM object when Config.PathTemplate is empty.
const DefaultPathTemplate = "{prefix}/{cluster}/{namespace}/{kind}/{name}/{bomHash}.cdx.json"

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
	// DefaultPathTemplate. Placeholders: {prefix}, {cluster}, {namespace}
	// ("_" for a cluster-scoped workload), {kind}, {name}, {uid} and
	// {bomHash} (the hex of the sha256, no "sha256:"). {bomHash} must be in
	// the last path segment and nowhere else; the folder part must hold
	// {cluster}, {namespace}, {kind} and {name}, or {uid}: the workload's
	// latest.cdx.json and tombstone.json live in that folder.
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
		for _, seg := range strings.Split(p, "/") {
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

// template is a parsed path template: literal text and placeholders,
// split at the last slash into the workload's folder and the BOM's file.
type template struct {
	dir, file []part
}

type part struct {
	lit string // literal text, when key is ""
	key string // placeholder name
}

var placeholders = map[string]bool{
	"prefix": true, "cluster": true, "namespace": true, "kind": true, "name": true, "uid": true, "bomHash": true,
}

func parseTemplate(s string) (template, error) {
	i := strings.LastIndexByte(s, '/')
	if i < 0 {
		return template{}, fmt.Errorf("%q has no folder: the workload's latest and tombstone objects need one", s)
	}
	if strings.HasPrefix(s, "/") {
		return template{}, fmt.Errorf("%q starts with a slash", s)
	}
	dir, err := parseParts(s[:i])
	if err != nil {
		return template{}, fmt.Errorf("%q: %w", s, err)
	}
	file, err := parseParts(s[i+1:])
	if err != nil {
		return template{}, fmt.Errorf("%q: %w", s, err)
	}
	has := func(ps []part, key string) bool {
		for _, p := range ps {
			if p.key == key {
				return true
			}
		}
		return false
	}
	if !has(file, "bomHash") {
		return template{}, fmt.Errorf("%q: the last segment must hold {bomHash}, so that distinct BOMs are distinct objects", s)
	}
	if has(dir, "bomHash") {
		return template{}, fmt.Errorf("%q: {bomHash} may only appear in the last segment", s)
	}
	if !has(dir, "uid") {
		for _, k := range []string{"cluster", "namespace", "kind", "name"} {
			if !has(dir, k) {
				return template{}, fmt.Errorf("%q: the folder part lacks {%s}: two workloads would share a latest object (use {cluster}, {namespace}, {kind} and {name}, or {uid})", s, k)
			}
		}
	}
	return template{dir: dir, file: file}, nil
}

func parseParts(s string) ([]part, error) {
	var out []part
	for s != "" {
		i := strings.IndexByte(s, '{')
		if i < 0 {
			out = append(out, part{lit: s})
			break
		}
		if i > 0 {
			out = append(out, part{lit: s[:i]})
		}
		j := strings.IndexByte(s[i:], '}')
		if j < 0 {
			return nil, fmt.Errorf("unclosed {")
		}
		key := s[i+1 : i+j]
		if !placeholders[key] {
			return nil, fmt.Errorf("unknown placeholder {%s} (known: {bomHash}, {cluster}, {kind}, {name}, {namespace}, {prefix}, {uid})", key)
		}
		out = append(out, part{key: key})
		s = s[i+j+1:]
	}
	for _, p := range out {
		if strings.ContainsAny(p.lit, "}\r\n\x00") {
			return nil, fmt.Errorf("stray } or a line break or NUL in %q", p.lit)
		}
	}
	return out, nil
}

// perWorkload reports whether the folder is named by the workload's uid:
// a folder per workload rather than per name.
func (t template) perWorkload() bool {
	for _, p := range t.dir {
		if p.key == "uid" {
			return true
		}
	}
	return false
}

// render fills ps with vals. Empty segments (an empty prefix) are dropped.
func render(ps []part, vals map[string]string) string {
	var b strings.Builder
	for _, p := range ps {
		if p.key == "" {
			b.WriteString(p.lit)
		} else {
			b.WriteString(vals[p.key])
		}
	}
	segs := strings.Split(b.String(), "/")
	kept := segs[:0]
	for _, s := range segs {
		if s != "" {
			kept = append(kept, s)
		}
	}
	return strings.Join(kept, "/")
}
