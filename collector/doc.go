// Package collector turns Kubernetes objects into the Inputs of a BOM.
//
// The flow, for one object:
//
//	manifest document or cluster object (map[string]any)
//	  -> kind profile        which parts of this kind are components, containers,
//	                         roles and model/runtime fields (profiles.yaml)
//	  -> Normalizer.Normalize  identity, components, containers, scrubbed
//	                         command/args, allow-listed env, fields
//	  -> schemas.Inputs      hashed by schemas.InputHash
//	  -> schemas.WorkloadChange (schemas.NewObserved), published on CHANGES
//	                         when the input hash of the workload changed
//
// Manifests are read by collector/manifest (files, lines, `kind: List`) and
// turned into events by collector/files. The watch of a live cluster is
// collector/kube (informers driven by the kind profiles, leader election,
// per-kind health); it feeds the same Normalizer, and only it fills
// Inputs.Digests, from the pods RollUp attributes to a workload (Digests).
//
// Both sources hand their events to a Reconciler (reconcile.go), which
// publishes a workload only when its input hash changed and tombstones the
// workloads that are gone. Every event names the source instance that wrote
// it (WorkloadChange.Source), and a source tombstones only the workloads it
// owns; a pass that would tombstone more than a share of them (default half)
// is held until confirmed, and a workload its source cannot see (a kind that
// failed to list) is never tombstoned.
//
// A workload may read other objects (link*.go, lora.go, claim.go): a NIMService its
// NIMCache, an InferenceService the KServe runtime it names or KServe
// selects for its model format (whose containers join its predictor)
// (profile links); a Seldon Server the Models bound to it by name or by the
// capabilities their requirements need (profile bound); an Argo Rollout
// the Deployment its workloadRef names, which becomes part of it and has
// no BOM of its own (profile claims: ownership from that fact, never from
// a kind alone). NormalizeWith sees them through a Lookup (the manifest
// source's documents, or what the cluster source keeps of the kinds others
// read) and copies what they contribute into the Inputs with locators that
// name the linked object, so that editing it is a change of the workload.
// Secrets are never looked up.
//
// ConfigMaps are inputs (configmap.go, configmap_files.go): what a
// container takes from one is read as if it stood in the manifest. A
// configMapKeyRef value and the variables of an envFrom configMapRef
// (EnvSource.Env, prefix applied, in key order) are kept by the env rules
// below; the files a ConfigMap volume puts where the container sees them
// (Container.Files) are kept when they are a start script, redacted word
// by word like a command line, or a configuration file, cut to its
// allow-listed keys; the LoRA adapters a mounted ConfigMap lists become
// component fields (loraAdapter), and a profile's ConfigMap link (a KAITO
// Workspace's inference.config) gives its fields. An object is read in two
// steps: Draft reads it and names the ConfigMaps it reads, Complete
// applies what a Lookup holds of them and bounds the result; the cluster
// source keeps drafts, not objects, and completes a workload's each time
// it decides it, so that a ConfigMap edit changes exactly the workloads
// that read it. A missing ConfigMap or key keeps the names only.
//
// A container's serving facts are inputs too (container_facts.go): its
// declared ports, its HTTP probes' paths and ports, and its accelerators
// (the extended resources it requests or limits, its resource claims, the
// operator short forms its profile reads, and the nodeSelector keys of its
// pod that name an accelerator, Config.AcceleratorLabels). Quantities and
// label values are not.
//
// A pod's volumes that can carry a model are inputs too (volume.go): image
// volumes, and volumes more than one container mounts (a model an init
// container downloads for the server), with the containers' mounts of
// them; the transformer follows a server's model path through them.
//
// Kind profiles are data. The built-in table (profiles.yaml, embedded) covers
// the Kubernetes workloads, Dynamo and Grove, LeaderWorkerSet,
// DisaggregatedSet, KServe, Knative Serving, the NIM operator, the vLLM
// production stack, KubeAI, KAITO (Workspace, InferenceSet,
// MultiRoleInference, RAGEngine), KubeRay, Seldon Core 2 and v1, llmaz,
// OME, OPEA's GMConnector and Argo Rollouts, and lists the kinds that are
// not workloads. Config.ProfilesFile adds kinds
// or replaces built-in ones without a release; the Go code only interprets
// the table. An object of a kind no profile describes (or of a version its
// profile does not read) that holds pod templates is read by them, with
// the generic profile (generic.go); one that holds none is read, in
// manifests, by the facts its fields state (generic_fields.go: containers
// it lists, a model URI, an engine named in the operator's words, an
// accelerator), and is ErrUnknownKind only when it states none of them,
// or when it selects workloads that live elsewhere (a selector: they have
// BOMs of their own). An object with no BOM of its own (a Service, a KServe runtime template, a
// ReplicaSet controlled by a Deployment) is ErrNotWorkload. In a cluster, a
// pod whose owner chain ends at a kind with no profile belongs to that
// owner, known by its owner references alone (Normalizer.Generic), and is
// reported when it may serve (Normalizer.MayServe).
//
// Secrets never leave Normalize. Everything is kept by allow-list:
//
//   - arguments: a flag keeps its value only when a detection rule reads it
//     (schemas.DeclaredArguments, generated from the transformer's rules, plus
//     Config.ArgAllow); every other flag keeps its name and its value becomes
//     Redacted ("--api-key REDACTED", "--password=REDACTED", "-pREDACTED",
//     "X-Api-Key: REDACTED"). Command and args are read as one argv by
//     [cmdline], the reader the transformer detects with: the same program,
//     flags, values and boolean flags. Shell scripts (sh -c, bash -exc, and
//     the argsEnv values such as VLLM_ADDITIONAL_ARGS) are parsed by
//     [cmdline.ParseShell] and redacted word by word: quoting cannot
//     hide a value; assignments keep allow-listed values only, here-documents
//     and comments are dropped, a script that does not parse is replaced
//     whole. Positionals and kept values still pass through
//     schemas.RedactText (tokens, URL userinfo and queries, auth headers);
//   - env: literal values only for allow-listed model and engine variables
//     (and even then dropped when they look like a credential), and the
//     same for the values a ConfigMap gives (configMapKeyRef, envFrom);
//     secretKeyRef and a Secret's envFrom keep names only;
//   - ConfigMap files: scripts as command lines (above), configuration
//     files to the keys a rule reads, their values through RedactText and
//     the credential check;
//   - labels: allow-listed keys only, values through RedactText; annotations
//     are never read;
//   - kind fields and what a linked object contributes: through RedactText.
//
// The same holds for init, sidecar and ephemeral containers and for the
// containers an operator synthesizes from a custom resource. Replica counts,
// status, resourceVersion and rollout knobs are never read, so they cannot
// move the input hash, and neither can a rotated credential.
//
// A namespace no API server would take (a template's KUBEFLOW_NAMESPACE)
// is read as the default one, the text written kept as the field
// namespaceAsWritten: the workload is not lost to a placeholder.
//
// Everything is ordered: components in profile order, then list order, then
// sorted map keys; main containers before init containers, each in manifest
// order; fields by name and locator.
//
// Inputs are bounded (Config.Bounds), so that every event fits a stream
// message and so does its BOM, whatever a manifest holds. The object is
// redacted whole first; then, in the order above, each string is cut to
// Bounds.Value bytes (8 KiB), each list to Bounds.Items items (256), a
// container's command, args, env and envFrom together to Bounds.Container
// bytes (32 KiB), and the whole workload to about Bounds.Workload bytes
// (256 KiB), past which the rest of its containers and components are
// dropped. A container's mounts, ports, probes, accelerators and files
// share its budget (a file's text is one string, cut to Bounds.Value).
// Every cut leaves a mark, a Field named schemas.FieldTruncated in
// the component (or the workload) it is in, whose value says how much was
// kept and gives the sha256 of the whole as redacted: the same object always
// gives the same cut, an edit past the cut still changes the input hash, a
// rotated secret does not. What is kept is a start, so a model flag at the
// start of a huge argument list is still found. A workload's identity is
// never cut: a name longer than Kubernetes allows is an error.
//
// Where things are: config.go (Config); profile.go (profiles.yaml read
// and compiled), path.go (profile paths), kinds.go (Kind, what a watcher
// watches); normalize.go (Normalizer, the
// steps of one object: identity, profile, refusal, Inputs);
// normalize_walk.go (components and fields as a profile reads them);
// normalize_container.go (containers and env); container_facts.go
// (ports, probes, accelerators); pinned.go (images pinned by digest in
// the manifest); serving.go (MayServe); scrub.go (command lines);
// volume.go;
// configmap.go and configmap_files.go (Draft, Complete, what ConfigMaps
// give); link.go (the link, bound and claim rules of profiles),
// link_select.go (finding linked objects), link_contribute.go and
// link_bound.go (what they add), lora.go (LoRA adapters of ConfigMaps),
// claim.go; bound.go and bound_fits.go (Bounds); owners.go, generic.go and
// generic_fields.go (roll-up, generic owners, objects read by their
// fields); reconcile.go.
package collector
