// Package kube is the cluster source of the collector. It watches a Kubernetes
// API server and publishes a [schemas.WorkloadChange] whenever a workload's
// inputs change, and a tombstone when one is deleted.
//
// A [Collector], built by [New], does the work. [Collector.Run] watches until
// its context ends, and [Collector.Once] makes one pass and returns. With
// leader election (the default, [LeaderElectionConfig]), only the replica
// holding a Lease watches and publishes. The Lease is the only object the
// collector writes.
//
// Which kinds are watched is data. Every workload or owner kind of the profiles
// ([collector.Normalizer.Kinds]) that discovery finds served is watched at one
// version. Built-in kinds use typed informers, kinds that matter only for their
// owner references use metadata-only informers, and third-party workloads use
// dynamic ones. Before an object is cached, a transform replaces it by a
// compact one, so memory follows what BOMs need. CustomResourceDefinitions are
// watched too: a CRD installed or deleted starts or stops its watch without a
// restart.
//
// Each cached object goes into an object graph of owners and children.
// [collector.Normalizer.RollUp] finds the top-level workload it belongs to, and
// that workload's uid joins a debounced queue. For a workload taken from the
// queue, the collector completes its [collector.Draft] with the ConfigMaps it
// reads. It adds the image digests its pods report ([collector.Digests]) and
// hands the event to [collector.Reconciler.Observe]. The reconciler publishes
// only when the input hash differs from the last one.
//
// ConfigMaps are watched once the workload kinds have listed. Only the data of
// those that an object in scope reads is kept, and a change of one queues
// exactly the workloads that read it. Secrets are never read.
//
// Noise publishes nothing. Replica counts, status, resourceVersion and
// annotations are not inputs. A pod that restarts with the same image digest
// leaves the digest set unchanged.
//
// On start the collector reads the last state of its cluster from CHANGES
// ([collector.Reconciler.Load]) and lists the cluster. It then publishes what
// changed and tombstones the workloads it owns that are gone.
// [Config.Reconciled] is called after that first pass of each watch session.
// Lost visibility is not deletion: a kind that is not watched, not synced or
// degraded never gets tombstones. Deletions seen by the watch are written every
// [Config.TombstoneInterval], as one pass through the reconciler's guard
// against mass deletion.
//
// Each kind is supervised on its own. A failing or forbidden list, watch or
// probe marks that kind degraded in [Collector.Health], in metrics and in the
// logs. It never stops the other kinds.
package kube
