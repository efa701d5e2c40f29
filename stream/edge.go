package stream

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/url"
	"os"
	"regexp"
	"strings"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/bomstream/bomstream/schemas"
)

// The fleet shape (docs/fleet.md): each Kubernetes cluster's collector
// writes to its own JetStream, an edge, whose embedded server runs under a
// JetStream domain (Config.Domain) and keeps a leaf-node connection to the
// hub (Config.Hub). The hub's CHANGES stream sources every edge's CHANGES
// through the edge's domain (Config.Edges), taking from each only its own
// cluster's subjects, and the hub's name index sources the edges' name
// indexes the same way: the hub's transformer and sinks see one stream
// with every cluster's subjects, each workload's events in the edge's
// order, and an edge keeps collecting while the link is down.

// LeafRemote is the leaf-node connection of an edge's embedded server to
// the hub. Secrets are files or masked fields, never logged.
type LeafRemote struct {
	// URL of the hub's leaf-node listener, e.g. "nats-leaf://hub:7422";
	// a comma-separated list for a hub cluster.
	URL       string `json:"url" yaml:"url"`
	CredsFile string `json:"credsFile" yaml:"credsFile"`
	User      string `json:"user" yaml:"user"`
	Password  string `json:"-" yaml:"password"`
	TLSCA     string `json:"tlsCA" yaml:"tlsCA"`
	TLSCert   string `json:"tlsCert" yaml:"tlsCert"`
	TLSKey    string `json:"tlsKey" yaml:"tlsKey"`
}

// Edge is one edge whose CHANGES the hub sources.
type Edge struct {
	// Domain is the edge's JetStream domain (its stream.domain).
	Domain string `json:"domain" yaml:"domain"`
	// Cluster is the only cluster whose subjects are taken from the edge:
	// an edge writing under another cluster's name is not heard.
	Cluster string `json:"cluster" yaml:"cluster"`
}

var fleetName = regexp.MustCompile(`^[A-Za-z0-9_-]{1,63}$`)

// leafDenied are the subjects a leaf-node connection never carries either
// way: a publish on an edge must reach the edge's streams and buckets only
// (the hub takes them by sourcing, in order, once), and the hub's must
// never land on an edge.
var leafDenied = []string{"bomstream.>", "$KV.>"}

func (c Config) validateFleet() error {
	var errs []error
	if c.Domain != "" && !fleetName.MatchString(c.Domain) {
		errs = append(errs, fmt.Errorf("stream.domain: %q is not 1-63 characters of [A-Za-z0-9_-]", c.Domain))
	}
	if c.Domain != "" && c.URL != "" {
		errs = append(errs, errors.New("stream.domain: only the embedded server has a domain; set it on the external server (jetstream { domain: ... })"))
	}
	if c.Hub.URL != "" && c.Domain == "" {
		errs = append(errs, errors.New("stream.hub: an edge needs its own JetStream domain (stream.domain)"))
	}
	if (c.Hub.TLSCert == "") != (c.Hub.TLSKey == "") {
		errs = append(errs, errors.New("stream.hub.tlsCert and stream.hub.tlsKey: set both or neither"))
	}
	seen := map[string]bool{}
	for i, e := range c.Edges {
		if !fleetName.MatchString(e.Domain) || !fleetName.MatchString(e.Cluster) {
			errs = append(errs, fmt.Errorf("stream.edges[%d]: domain %q and cluster %q must be 1-63 characters of [A-Za-z0-9_-]", i, e.Domain, e.Cluster))
		}
		if seen[e.Domain] {
			errs = append(errs, fmt.Errorf("stream.edges[%d]: domain %q listed twice", i, e.Domain))
		}
		seen[e.Domain] = true
	}
	return errors.Join(errs...)
}

// applyEdge sets the embedded server's domain and leaf-node connection.
func (c Config) applyEdge(o *server.Options) error {
	o.JetStreamDomain = c.Domain
	if c.Domain != "" {
		// A hub refuses a second leaf with a server name it knows.
		o.ServerName = "bomstream-" + c.Domain
	}
	if c.Hub.URL == "" {
		return nil
	}
	r := &server.RemoteLeafOpts{
		Credentials: c.Hub.CredsFile,
		DenyImports: leafDenied,
		DenyExports: leafDenied,
	}
	for s := range strings.SplitSeq(c.Hub.URL, ",") {
		u, err := url.Parse(strings.TrimSpace(s))
		if err != nil {
			return fmt.Errorf("stream.hub.url %s: %w", redactURLs(s), err)
		}
		if c.Hub.User != "" {
			u.User = url.UserPassword(c.Hub.User, c.Hub.Password)
		}
		r.URLs = append(r.URLs, u)
	}
	if c.Hub.CredsFile != "" {
		if _, err := os.Stat(c.Hub.CredsFile); err != nil {
			return fmt.Errorf("stream.hub.credsFile: %w", err)
		}
	}
	if c.Hub.TLSCA != "" || c.Hub.TLSCert != "" {
		tc, err := c.Hub.tlsConfig()
		if err != nil {
			return err
		}
		r.TLS, r.TLSConfig = true, tc
	}
	o.LeafNode.Remotes = append(o.LeafNode.Remotes, r)
	return nil
}

func (l LeafRemote) tlsConfig() (*tls.Config, error) {
	tc := &tls.Config{MinVersion: tls.VersionTLS12}
	if l.TLSCA != "" {
		pem, err := os.ReadFile(l.TLSCA)
		if err != nil {
			return nil, fmt.Errorf("stream.hub.tlsCA: %w", err)
		}
		tc.RootCAs = x509.NewCertPool()
		if !tc.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("stream.hub.tlsCA %s: no certificate in the file", l.TLSCA)
		}
	}
	if l.TLSCert != "" {
		cert, err := tls.LoadX509KeyPair(l.TLSCert, l.TLSKey)
		if err != nil {
			return nil, fmt.Errorf("stream.hub.tlsCert %s: %w", l.TLSCert, err)
		}
		tc.Certificates = []tls.Certificate{cert}
	}
	return tc, nil
}

// changeSources are the hub's CHANGES sources: each edge's CHANGES, only
// its own cluster's subjects.
func (c Config) changeSources() []*jetstream.StreamSource {
	var out []*jetstream.StreamSource
	for _, e := range c.Edges {
		out = append(out, &jetstream.StreamSource{
			Name:          schemas.StreamChanges,
			FilterSubject: schemas.SubjectChangesPrefix + e.Cluster + ".>",
			Domain:        e.Domain,
		})
	}
	return out
}

// bucketSources are the sources of KV bucket: on a hub, the name index's
// are each edge's index, only its own cluster's keys; none for the rest.
func (c Config) bucketSources(bucket string) []*jetstream.StreamSource {
	if bucket != NameIndexBucket {
		return nil
	}
	var out []*jetstream.StreamSource
	for _, e := range c.Edges {
		keys := "$KV." + NameIndexBucket + "." + KeyToken(e.Cluster) + ".>"
		out = append(out, &jetstream.StreamSource{
			Name:              "KV_" + NameIndexBucket,
			SubjectTransforms: []jetstream.SubjectTransformConfig{{Source: keys, Destination: keys}},
			Domain:            e.Domain,
		})
	}
	return out
}

// EdgePermissions are the NATS permissions of the user a cluster's
// collector connects to a hub with directly (no edge JetStream): publish
// only its own cluster's changes and name-index keys, plus the JetStream
// API it needs; receive only replies. docs/fleet.md shows the same as a
// nats-server configuration.
func EdgePermissions(cluster string) *server.Permissions {
	return &server.Permissions{
		Publish: &server.SubjectPermission{Allow: []string{
			schemas.SubjectChangesPrefix + cluster + ".>",
			"$KV." + NameIndexBucket + "." + KeyToken(cluster) + ".>",
			"$JS.API.>",
		}},
		Subscribe: &server.SubjectPermission{Allow: []string{"_INBOX.>"}},
	}
}
