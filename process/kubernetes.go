package process

import "github.com/bomstream/bomstream/collector/kube"

// kubeConfig is the kubernetes: section with the top-level cluster name,
// which names the cluster in every identity the collector writes.
func (c Config) kubeConfig() kube.Config {
	k := c.Kubernetes
	k.Cluster = c.Cluster
	return k
}
