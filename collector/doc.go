// Package collector turns Kubernetes objects into the Inputs of a BOM, and
// publishes them on CHANGES when they change.
//
// Two sources feed it. The manifest source reads files with
// [github.com/bomstream/bomstream/collector/manifest] and turns them into
// events in [github.com/bomstream/bomstream/collector/files]. The cluster
// source, [github.com/bomstream/bomstream/collector/kube], watches a live
// cluster. Both hand each object to the same [Normalizer].
//
// [Normalizer.Normalize] finds the object's kind profile, which says which
// parts of that kind are components, containers, roles and model or runtime
// fields. It reads the object's identity, components, containers and fields
// into [schemas.Inputs]. [schemas.InputHash] hashes them, and
// [schemas.NewObserved] wraps them in a [schemas.WorkloadChange]. Only the
// cluster source fills the image digests, from the pods [Normalizer.RollUp]
// assigns to a workload ([Digests]).
//
// A [Reconciler] then publishes a workload only when its input hash changed,
// and tombstones the workloads that are gone. A tombstone is an event that says
// the workload is gone ([schemas.WorkloadChange.IsTombstone]). Each event names
// the source instance that wrote it, and a source tombstones only the workloads
// it owns. A workload its source cannot see, such as one of a kind that failed
// to list, is never tombstoned. A pass that would tombstone more than
// [ReconcilerConfig.MaxTombstoneShare] of them (half, by default) is held until
// confirmed.
//
// Kind profiles are data. The built-in table, profiles.yaml, is embedded and
// covers the Kubernetes workloads and the common model-serving operators.
// [Config.ProfilesFile] adds kinds or replaces built-in ones without a release.
// An object of a kind no profile describes is read by the pod templates it
// holds. One that holds none is read, in manifests, by the facts its fields
// state, and is [ErrUnknownKind] when it states none. An object with no BOM of
// its own, such as a Service or a ReplicaSet controlled by a Deployment, is
// [ErrNotWorkload]. In a cluster, a pod whose owners end at a kind with no
// profile belongs to that owner ([Normalizer.Generic]).
//
// A workload may read other objects: a NIMService its NIMCache, an
// InferenceService its KServe runtime, an Argo Rollout the Deployment it takes
// over. [Normalizer.NormalizeWith] sees them through a [Lookup] and copies what
// they contribute into the Inputs. Editing such an object is then a change of
// the workload. ConfigMaps are read the same way: what a container takes from
// one is read as if it stood in the manifest. [Normalizer.Draft] reads an
// object and names the ConfigMaps it reads, and [Normalizer.Complete] applies
// them. A ConfigMap edit thus changes exactly the workloads that read it.
// Secrets are never looked up.
//
// A container's ports, HTTP probes and accelerators are inputs too, and so are
// the volumes that can carry a model. Replica counts, status, resourceVersion
// and rollout settings are never read, so they cannot move the input hash. Nor
// can a rotated credential, whose value is never kept.
//
// Everything is kept by allow-list, so secrets never leave Normalize. This
// holds for init, sidecar and ephemeral containers too, and for those an
// operator makes from a custom resource:
//
//   - A flag keeps its value only when a detection rule reads it
//     ([schemas.DeclaredArguments], plus [Config.ArgAllow]). Every other value
//     becomes [Redacted].
//   - Command lines are read by [cmdline] as the transformer reads them. Shell
//     scripts are parsed by [cmdline.ParseShell] and redacted word by word, so
//     quoting cannot hide a value.
//   - Env keeps literal values only for allow-listed model and engine variables
//     that do not look like a credential. A secretKeyRef, or a Secret's envFrom,
//     keeps names only.
//   - Labels keep allow-listed keys only, and annotations are never read.
//   - Kept argument values, label values and kind fields also pass
//     [schemas.RedactText], which redacts tokens, URL userinfo and queries, and
//     auth headers.
//
// The Inputs are deterministic: components, containers and fields come in a
// fixed order, so the same object always gives the same hash. They are also
// bounded by [Config.Bounds], so that every event and its BOM fit a stream
// message. Each cut leaves a [schemas.FieldTruncated] mark with the sha256 of
// the redacted whole, so an edit past the cut still changes the hash. A
// workload's identity is never cut.
package collector
