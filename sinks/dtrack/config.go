package dtrack

import (
	"cmp"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"text/template"
	"time"

	"github.com/bomstream/bomstream/schemas"
)

// Defaults of the configuration keys.
const (
	DefaultProjectName       = "{{.Cluster}}/{{.Namespace}}/{{.Kind}}/{{.Name}}"
	DefaultProjectVersion    = "current"
	DefaultClusterProject    = "{{.Cluster}}"
	DefaultNamespaceProject  = "{{.Cluster}}/{{.Namespace}}"
	DefaultParentVersion     = "current"
	DefaultRequestTimeout    = 30 * time.Second
	DefaultProcessingTimeout = 5 * time.Minute
	DefaultPollInterval      = 2 * time.Second
	DefaultCompressAbove     = 64 << 10
)

// How the cluster and namespace projects are made (Config.Parents).
const (
	// ParentsPlain: plain projects, as before collection projects existed.
	ParentsPlain = "plain"
	// ParentsCollection: collection projects (Dependency-Track 4.13+) that
	// aggregate their direct children's metrics, or only those of children
	// carrying CollectionTag. They are never an upload target.
	ParentsCollection = "collection"
)

// What a tombstone does to the workload's project (Config.OnTombstone).
const (
	TombstoneDeactivate = "deactivate"
	TombstoneDelete     = "delete"
	TombstoneKeep       = "keep"
)

// Config configures one Dependency-Track sink. Every key but url and one of
// apiKeyFile/apiKeyEnv has a default.
type Config struct {
	// URL is the base URL of the Dependency-Track API server (not the
	// frontend), e.g. https://dtrack-api.example.com. Required. A path
	// prefix is not supported by the client.
	URL string `yaml:"url"`
	// APIKeyFile names a file holding the API key; APIKeyEnv names an
	// environment variable holding it. Set exactly one.
	APIKeyFile string `yaml:"apiKeyFile"`
	APIKeyEnv  string `yaml:"apiKeyEnv"`
	// CAFile is a PEM bundle of extra certificate authorities to trust.
	CAFile string `yaml:"caFile"`

	// ProjectName and ProjectVersion are Go templates over the workload's
	// identity (.Cluster, .Namespace, .Kind, .APIVersion, .Name, .UID) that
	// name its project; defaults DefaultProjectName and
	// DefaultProjectVersion. The version must not render empty.
	ProjectName    string `yaml:"projectName"`
	ProjectVersion string `yaml:"projectVersion"`
	// Hierarchy puts each workload's project under a project per namespace,
	// itself under a project per cluster (cluster-scoped workloads go under
	// the cluster's), creating them when missing. Unset means true.
	Hierarchy *bool `yaml:"hierarchy"`
	// ClusterProject and NamespaceProject are the templates naming the
	// parent projects, all in version ParentVersion.
	ClusterProject   string `yaml:"clusterProject"`
	NamespaceProject string `yaml:"namespaceProject"`
	ParentVersion    string `yaml:"parentVersion"`
	// Parents is what the cluster and namespace projects are: "plain"
	// (default) or "collection" (collection projects, 4.13+). With
	// CollectionTag set, a collection parent aggregates only the children
	// carrying that tag (add it to Tags to tag every workload project).
	Parents       string `yaml:"parents"`
	CollectionTag string `yaml:"collectionTag"`
	// AutoCreate lets an upload create the workload's project. Unset means
	// true; false needs every project to exist beforehand.
	AutoCreate *bool `yaml:"autoCreate"`
	// Tags are added to the tags of every workload project (cluster:,
	// namespace:, kind: and runtime: tags are always set).
	Tags []string `yaml:"tags"`
	// OnTombstone is what a deleted or no-longer-serving workload does to
	// its project: "deactivate" (default), "delete" or "keep".
	OnTombstone string `yaml:"onTombstone"`

	// RequestTimeout bounds each HTTP request; default 30s.
	RequestTimeout time.Duration `yaml:"requestTimeout"`
	// ProcessingTimeout bounds the wait for Dependency-Track to import an
	// uploaded BOM; default 5m. PollInterval is the longest pause between
	// two looks at the upload's token; default 2s.
	ProcessingTimeout time.Duration `yaml:"processingTimeout"`
	PollInterval      time.Duration `yaml:"pollInterval"`

	// CompressAbove: a BOM of more bytes than this goes gzip-compressed (a
	// multipart upload whose bom part is application/gzip) to a server
	// that reads compressed parts (5.1); 4.x and 5.0 read the part as it
	// is, and always get it plain. 0 means DefaultCompressAbove (64 KiB);
	// -1 never compresses.
	CompressAbove int64 `yaml:"compressAbove"`
}

// withDefaults fills the unset keys.
func (c Config) withDefaults() Config {
	c.ProjectName = cmp.Or(c.ProjectName, DefaultProjectName)
	c.ProjectVersion = cmp.Or(c.ProjectVersion, DefaultProjectVersion)
	c.ClusterProject = cmp.Or(c.ClusterProject, DefaultClusterProject)
	c.NamespaceProject = cmp.Or(c.NamespaceProject, DefaultNamespaceProject)
	c.ParentVersion = cmp.Or(c.ParentVersion, DefaultParentVersion)
	c.OnTombstone = cmp.Or(c.OnTombstone, TombstoneDeactivate)
	c.RequestTimeout = cmp.Or(c.RequestTimeout, DefaultRequestTimeout)
	c.ProcessingTimeout = cmp.Or(c.ProcessingTimeout, DefaultProcessingTimeout)
	c.PollInterval = cmp.Or(c.PollInterval, DefaultPollInterval)
	c.CompressAbove = cmp.Or(c.CompressAbove, DefaultCompressAbove)
	return c
}

func (c Config) hierarchy() bool  { return c.Hierarchy == nil || *c.Hierarchy }
func (c Config) parents() string  { return cmp.Or(c.Parents, ParentsPlain) }
func (c Config) autoCreate() bool { return c.AutoCreate == nil || *c.AutoCreate }

// sample is the workload templates are tried on by Validate.
var sample = schemas.Workload{Cluster: "c", Namespace: "ns", APIVersion: "apps/v1", Kind: "Deployment", Name: "n", UID: "u"}

// Validate checks the configuration without any I/O; errors name the key.
func (c Config) Validate() error {
	var errs []error
	if err := c.urlError(); err != nil {
		errs = append(errs, err)
	}
	switch {
	case c.APIKeyFile == "" && c.APIKeyEnv == "":
		errs = append(errs, errors.New("apiKeyFile or apiKeyEnv: set one"))
	case c.APIKeyFile != "" && c.APIKeyEnv != "":
		errs = append(errs, errors.New("apiKeyFile and apiKeyEnv: set one, not both"))
	}
	d := c.withDefaults()
	for _, t := range []struct{ key, text string }{
		{"projectName", d.ProjectName}, {"projectVersion", d.ProjectVersion},
		{"clusterProject", d.ClusterProject}, {"namespaceProject", d.NamespaceProject},
	} {
		tpl, err := parseTemplate(t.key, t.text)
		if err == nil {
			_, err = render(tpl, sample)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", t.key, err))
		}
	}
	if strings.TrimSpace(d.ParentVersion) == "" {
		errs = append(errs, errors.New("parentVersion: must not be blank"))
	}
	for i, tag := range c.Tags {
		if strings.TrimSpace(tag) == "" || strings.Contains(tag, ",") {
			errs = append(errs, fmt.Errorf("tags[%d]: %q: want a non-blank tag without commas", i, tag))
		}
	}
	errs = append(errs, c.parentsErrors()...)
	switch d.OnTombstone {
	case TombstoneDeactivate, TombstoneDelete, TombstoneKeep:
	default:
		errs = append(errs, fmt.Errorf("onTombstone: %q: want deactivate, delete or keep", c.OnTombstone))
	}
	if c.CompressAbove < -1 {
		errs = append(errs, fmt.Errorf("compressAbove: %d: want a size in bytes, 0 for the default (%d), or -1 to never compress", c.CompressAbove, DefaultCompressAbove))
	}
	for key, v := range map[string]time.Duration{
		"requestTimeout": c.RequestTimeout, "processingTimeout": c.ProcessingTimeout, "pollInterval": c.PollInterval,
	} {
		if v < 0 {
			errs = append(errs, fmt.Errorf("%s: negative", key))
		}
	}
	return errors.Join(errs...)
}

// urlError checks url: an http or https URL of the API server itself,
// without credentials or a query.
func (c Config) urlError() error {
	switch u, err := url.Parse(c.URL); {
	case c.URL == "":
		return errors.New("url: required")
	case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "":
		return fmt.Errorf("url: %q is not an http or https URL", c.URL)
	case strings.Trim(u.Path, "/") != "":
		return fmt.Errorf("url: path %q: the Dependency-Track client addresses /api at the root of the host; point url at the API server itself", u.Path)
	case u.User != nil || u.RawQuery != "":
		return errors.New("url: must not carry credentials or a query")
	}
	return nil
}

// parentsErrors checks parents and what goes with it (hierarchy,
// collectionTag).
func (c Config) parentsErrors() []error {
	var errs []error
	switch c.parents() {
	case ParentsPlain:
		if c.CollectionTag != "" {
			errs = append(errs, errors.New("collectionTag: only for parents: collection"))
		}
	case ParentsCollection:
		if !c.hierarchy() {
			errs = append(errs, errors.New("parents: collection needs hierarchy on"))
		}
		if strings.ContainsAny(c.CollectionTag, ",") || (c.CollectionTag != "" && strings.TrimSpace(c.CollectionTag) == "") {
			errs = append(errs, fmt.Errorf("collectionTag: %q: want a non-blank tag without commas", c.CollectionTag))
		}
	default:
		errs = append(errs, fmt.Errorf("parents: %q: want plain or collection", c.Parents))
	}
	return errs
}

// templateData is what the name templates see.
type templateData struct {
	Cluster, Namespace, Kind, APIVersion, Name, UID string
}

func parseTemplate(name, text string) (*template.Template, error) {
	return template.New(name).Option("missingkey=error").Parse(text)
}

// render executes tpl for w; a blank result is an error.
func render(tpl *template.Template, w schemas.Workload) (string, error) {
	var b strings.Builder
	err := tpl.Execute(&b, templateData{
		Cluster: w.Cluster, Namespace: w.Namespace, Kind: w.Kind, APIVersion: w.APIVersion, Name: w.Name, UID: w.UID,
	})
	if err != nil {
		return "", err
	}
	out := strings.TrimSpace(b.String())
	if out == "" {
		return "", errors.New("renders blank")
	}
	return out, nil
}
