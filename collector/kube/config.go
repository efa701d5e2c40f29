package kube

import (
	"errors"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"
)

// DefaultNamespaceSelector is the label a namespace carries to opt in.
const DefaultNamespaceSelector = "bomstream.dev/enabled=true"

// Config is the cluster watch. The zero value watches the namespaces labelled
// bomstream.dev/enabled=true with the kubeconfig of the environment (or the
// in-cluster service account), with leader election on.
type Config struct {
	// Cluster names the cluster in every identity; required (set from the
	// top-level cluster setting).
	Cluster string `yaml:"-"`
	// Kubeconfig is a kubeconfig file; empty uses $KUBECONFIG, then
	// ~/.kube/config, then the in-cluster service account.
	Kubeconfig string `yaml:"kubeconfig"`
	// Context is the kubeconfig context; empty uses the current one.
	Context string `yaml:"context"`
	// NamespaceSelector selects the namespaces watched (cluster-wide mode),
	// default bomstream.dev/enabled=true.
	NamespaceSelector string `yaml:"namespaceSelector"`
	// AllNamespaces watches every namespace, whatever its labels.
	AllNamespaces bool `yaml:"allNamespaces"`
	// Namespaces, when set, is the namespace-restricted mode: only these
	// namespaces are watched, each with namespaced list/watch (a Role in each
	// is enough), and CRDs are found by polling discovery instead of
	// watching CustomResourceDefinitions.
	Namespaces []string `yaml:"namespaces"`
	// LeaderElection makes one replica of several the one that publishes.
	LeaderElection LeaderElectionConfig `yaml:"leaderElection"`
	// ProbeInterval is how often each third-party kind is read with an
	// uncached single-object GET, which fails when its conversion webhook is
	// down while list and watch keep being served (default 30s).
	ProbeInterval time.Duration `yaml:"probeInterval"`
	// DiscoveryInterval is how often discovery is polled for CRDs coming and
	// going where CustomResourceDefinitions cannot be watched (default 1m;
	// with the CRD watch, discovery runs only when a CRD changes).
	DiscoveryInterval time.Duration `yaml:"discoveryInterval"`
	// SyncTimeout bounds each wait for the caches before the first pass
	// (the workload kinds', then the ConfigMaps'); a kind not synced by
	// then is reconciled when it is (default 1m).
	SyncTimeout time.Duration `yaml:"syncTimeout"`
	// WatchTimeout is the server-side timeout asked for each watch; a longer
	// one means fewer requests when idle (default 30m, at least 5m).
	WatchTimeout time.Duration `yaml:"watchTimeout"`
	// Debounce delays the publish after a change so that a burst (a rollout,
	// pods coming up) is one decision (default 250ms).
	Debounce time.Duration `yaml:"debounce"`
	// TombstoneInterval is how often the deletions seen by the watch are
	// written, as one pass through the reconciler's guard (default 2s).
	TombstoneInterval time.Duration `yaml:"tombstoneInterval"`
	// MaxTombstoneShare and ConfirmTombstones are the reconciler's guard
	// against a mass deletion (collector.ReconcilerConfig).
	MaxTombstoneShare float64 `yaml:"maxTombstoneShare"`
	ConfirmTombstones bool    `yaml:"confirmTombstones"`
	// QPS and Burst limit the client (defaults 20 and 40).
	QPS   float32 `yaml:"qps"`
	Burst int     `yaml:"burst"`
	// Reconciled, when set, is called after the first pass of each watch
	// session: the cluster has been listed and reconciled, and what the
	// initial list allocated is garbage. The collector process returns
	// memory to the system there.
	Reconciled func() `yaml:"-"`
}

// LeaderElectionConfig is the Lease that elects the publishing replica.
type LeaderElectionConfig struct {
	// Disabled turns leader election off (a single replica, or run --once).
	Disabled bool `yaml:"disabled"`
	// Namespace of the Lease; default $POD_NAMESPACE, the in-cluster
	// namespace, else "default".
	Namespace string `yaml:"namespace"`
	// Name of the Lease; default bomstream-collector-<cluster>.
	Name string `yaml:"name"`
	// Identity of this replica; default hostname plus a random suffix.
	Identity      string        `yaml:"identity"`
	LeaseDuration time.Duration `yaml:"leaseDuration"` // default 15s
	RenewDeadline time.Duration `yaml:"renewDeadline"` // default 10s
	RetryPeriod   time.Duration `yaml:"retryPeriod"`   // default 2s
}

func (c Config) withDefaults() Config {
	if c.NamespaceSelector == "" && !c.AllNamespaces {
		c.NamespaceSelector = DefaultNamespaceSelector
	}
	if c.ProbeInterval == 0 {
		c.ProbeInterval = 30 * time.Second
	}
	if c.DiscoveryInterval == 0 {
		c.DiscoveryInterval = time.Minute
	}
	if c.SyncTimeout == 0 {
		c.SyncTimeout = time.Minute
	}
	if c.WatchTimeout == 0 {
		c.WatchTimeout = 30 * time.Minute
	}
	if c.Debounce == 0 {
		c.Debounce = 250 * time.Millisecond
	}
	if c.TombstoneInterval == 0 {
		c.TombstoneInterval = 2 * time.Second
	}
	if c.QPS == 0 {
		c.QPS = 20
	}
	if c.Burst == 0 {
		c.Burst = 40
	}
	le := &c.LeaderElection
	if le.Name == "" {
		le.Name = "bomstream-collector-" + c.Cluster
	}
	if le.LeaseDuration == 0 {
		le.LeaseDuration = 15 * time.Second
	}
	if le.RenewDeadline == 0 {
		le.RenewDeadline = 10 * time.Second
	}
	if le.RetryPeriod == 0 {
		le.RetryPeriod = 2 * time.Second
	}
	return c
}

// Validate names the first invalid fields, as kubernetes.FIELD.
func (c Config) Validate() error {
	var errs []error
	d := c.withDefaults()
	if c.Cluster == "" {
		errs = append(errs, fmt.Errorf("kubernetes: cluster: required"))
	}
	if len(c.Namespaces) > 0 && (c.AllNamespaces || c.NamespaceSelector != "") {
		errs = append(errs, fmt.Errorf("kubernetes.namespaces: give either a list of namespaces or namespaceSelector/allNamespaces"))
	}
	if c.AllNamespaces && c.NamespaceSelector != "" {
		errs = append(errs, fmt.Errorf("kubernetes.allNamespaces: set together with namespaceSelector"))
	}
	for i, ns := range c.Namespaces {
		if msgs := validation.IsDNS1123Label(ns); len(msgs) > 0 {
			errs = append(errs, fmt.Errorf("kubernetes.namespaces[%d]: %q: %s", i, ns, msgs[0]))
		}
	}
	if d.NamespaceSelector != "" {
		if _, err := labels.Parse(d.NamespaceSelector); err != nil {
			errs = append(errs, fmt.Errorf("kubernetes.namespaceSelector: %w", err))
		}
	}
	for name, v := range map[string]time.Duration{
		"probeInterval": c.ProbeInterval, "discoveryInterval": c.DiscoveryInterval, "syncTimeout": c.SyncTimeout,
		"watchTimeout": c.WatchTimeout, "debounce": c.Debounce, "tombstoneInterval": c.TombstoneInterval,
		"leaderElection.leaseDuration": c.LeaderElection.LeaseDuration,
		"leaderElection.renewDeadline": c.LeaderElection.RenewDeadline,
		"leaderElection.retryPeriod":   c.LeaderElection.RetryPeriod,
	} {
		if v < 0 {
			errs = append(errs, fmt.Errorf("kubernetes.%s: negative", name))
		}
	}
	if c.WatchTimeout != 0 && c.WatchTimeout < 5*time.Minute {
		errs = append(errs, fmt.Errorf("kubernetes.watchTimeout: %s is below 5m", c.WatchTimeout))
	}
	le := d.LeaderElection
	if !le.Disabled && !(le.LeaseDuration > le.RenewDeadline && le.RenewDeadline > le.RetryPeriod) {
		errs = append(errs, fmt.Errorf("kubernetes.leaderElection: want leaseDuration > renewDeadline > retryPeriod, got %s, %s, %s",
			le.LeaseDuration, le.RenewDeadline, le.RetryPeriod))
	}
	if c.LeaderElection.Namespace != "" {
		if msgs := validation.IsDNS1123Label(c.LeaderElection.Namespace); len(msgs) > 0 {
			errs = append(errs, fmt.Errorf("kubernetes.leaderElection.namespace: %q: %s", c.LeaderElection.Namespace, msgs[0]))
		}
	}
	if c.MaxTombstoneShare < 0 {
		errs = append(errs, fmt.Errorf("kubernetes.maxTombstoneShare: negative"))
	}
	if c.QPS < 0 || c.Burst < 0 {
		errs = append(errs, fmt.Errorf("kubernetes.qps, burst: negative"))
	}
	return errors.Join(errs...)
}
