// Package kube is the cluster source of the collector: it watches a
// Kubernetes API server and publishes a WorkloadChange whenever a workload's
// inputs change, and a tombstone when one is deleted.
//
// The flow, for one object:
//
//	API server --list/watch--> informer --transform--> object (identity, controller
//	                                         |          reference, and either the
//	                                         |          workload's Inputs or the pod's
//	                                         |          images and imageIDs)
//	                                         v
//	                                      object graph (uid -> object, owner -> children)
//	                                         |  collector.Normalizer.RollUp: the
//	                                         |  top-level workload the object belongs to
//	                                         v
//	                                      queue of workload uids (debounced)
//	                                         |  Inputs + collector.Digests of its pods
//	                                         v
//	                                      collector.Reconciler.Observe: publish when
//	                                      the input hash differs from the last one
//
// Which kinds are watched is data: every workload or owner kind of the
// profiles (collector.Normalizer.Kinds) that discovery finds served, each at
// one version (its group's preferred one when the profile reads it).
// Built-in kinds use typed informers (protobuf); a ReplicaSet and the Grove
// or Knative objects, which matter only for their owner references, use
// metadata-only informers; third-party workloads use dynamic informers. A
// transform function replaces every object by a compact one before it is
// cached, and list requests stream (client-go's WatchListClient), so memory
// follows what BOMs need. Nothing is queued before the first pass, which
// reads the whole graph, and Config.Reconciled tells the process when that
// pass is done and the garbage of the initial list can go back to the
// system. CustomResourceDefinitions are watched (metadata
// only), and any change re-runs discovery: a CRD that is installed is
// watched within seconds, one that is deleted stops its watch, with no
// restart. Where CRDs cannot be listed (the namespace-restricted mode),
// discovery is polled instead.
//
// ConfigMaps are inputs (configmaps.go): the collector keeps a Draft of
// each workload (collector.Draft) and completes it with the ConfigMaps it
// reads each time it decides it. It watches ConfigMaps once the workload
// kinds have listed, and keeps the data of those an object in scope reads,
// and of no other; a change of one queues exactly the workloads that read
// it. Secrets are never read.
//
// Noise publishes nothing: replica counts, status, resourceVersion and
// annotations are not inputs, and a pod that restarts or is rescheduled with
// the same image digest leaves the digest set unchanged (collector.Digests
// keeps the last published digests while no pod reports one).
//
// On start the collector reads the last state of every workload of its
// cluster from CHANGES (collector.Reconciler.Load), lists the cluster, and
// reconciles: changed workloads are published, the ones it owns that are
// gone get tombstones. Lost visibility is not deletion: a kind that is not
// watched, not synced, or degraded never gets tombstones; deletions seen by
// the watch are written every TombstoneInterval as one pass through the
// reconciler's guard against mass deletion.
//
// Each kind is supervised on its own (health.go): a failing or forbidden
// list or watch, or a failing uncached single-object GET of a third-party
// kind (a conversion webhook that is down, which list and watch served from
// the API server's cache do not show), marks that kind degraded in
// bomstream_watch_healthy{kind}, bomstream_watch_errors_total{kind}, the
// logs and Collector.Health, and never stops the other kinds. Every API
// request is counted in bomstream_kube_requests_total{verb,resource}.
//
// With leader election (the default), only the replica holding a Lease
// watches and publishes; the Lease is the only object the collector writes.
//
// Where things are: collector.go (Collector, Once, Run, a leading
// session); lease.go (leader election); session.go (one watch session:
// clients, start, the live loop, discovery, probes); watch.go and scope.go
// (informers, namespaces); object.go (the compact cached objects); graph.go
// (the object graph the watches fill); links.go (links, claims, generic
// owners); configmaps.go (the ConfigMaps workloads read); decide.go (the
// queue of workloads, their events, tombstones);
// health.go; client.go (client configuration, request metrics).
package kube
