package schemas

// Inputs are the normalized facts about a workload that its BOM is rendered
// from. Everything here is something a BOM would show; replica counts, status,
// resourceVersion, managedFields and rollout knobs are deliberately absent, so
// that InputHash changes exactly when the BOM would.
//
// The collector fills every slice in a stable order (the order of the manifest,
// then by name where the source is a map) so that CanonicalJSON is deterministic.
type Inputs struct {
	Workload   Workload      `json:"workload"`
	Components []Component   `json:"components"`
	Fields     []Field       `json:"fields,omitempty"`
	Owned      []ObjectRef   `json:"owned,omitempty"`
	Digests    []ImageDigest `json:"digests,omitempty"`
	// Source says where the object was read: "cluster", or "file:<path>" when
	// rendering from manifests (no digests can be resolved then).
	Source string `json:"source,omitempty"`
	// Profile is ProfileGeneric when no profile of the workload's kind
	// describes it and the collector read it by its shape (the pod templates
	// it holds) or, in a cluster, through the pods it owns; empty when the
	// kind's own profile read it.
	Profile string `json:"profile,omitempty"`
}

// ProfileGeneric is Inputs.Profile of a workload of a kind that no profile
// describes: no serving pod is left out of the inventory because its
// operator is unknown.
const ProfileGeneric = "generic"

// Component is one pod template of a workload (a Dynamo service, an LWS leader
// or worker template, a KServe predictor, ...) with the roles the kind's
// structure gives it.
type Component struct {
	Name       string      `json:"name"`
	Locator    string      `json:"locator"`
	Roles      []string    `json:"roles,omitempty"`
	Containers []Container `json:"containers"`
	// Fields are component-level kind fields (componentType, modelFormat, ...).
	Fields []Field `json:"fields,omitempty"`
	// Labels holds the pod-template labels whose keys are on the label allow-list.
	Labels map[string]string `json:"labels,omitempty"`
	// Volumes are the pod's volumes that can carry a model from one place to
	// another: image volumes (an OCI image or artifact mounted read-only),
	// and volumes more than one container of the pod mounts (a model an init
	// container downloads for the server). Other volumes are left out.
	Volumes []Volume `json:"volumes,omitempty"`
}

// Volume is one pod volume of Component.Volumes.
type Volume struct {
	Name    string `json:"name"`
	Locator string `json:"locator"`
	// Image is the reference of an image volume (volumes[].image.reference).
	Image string `json:"image,omitempty"`
	// Claim is the PersistentVolumeClaim of a persistentVolumeClaim volume.
	Claim string `json:"claim,omitempty"`
}

// Mount is where a container mounts one of its component's Volumes.
type Mount struct {
	Volume  string `json:"volume"`
	Path    string `json:"path"`
	SubPath string `json:"subPath,omitempty"`
}

// Container is one container of a component. Image is as written ("" when the
// manifest has none, as in a kustomize patch). Locator points at the container
// in the source object, e.g. "spec.template.spec.containers[0]".
type Container struct {
	Name    string `json:"name"`
	Locator string `json:"locator"`
	Init    bool   `json:"init,omitempty"`
	// Sidecar: an init container with restartPolicy Always (a native
	// sidecar), which runs as long as the pod does.
	Sidecar bool        `json:"sidecar,omitempty"`
	Image   string      `json:"image,omitempty"`
	Command []string    `json:"command,omitempty"`
	Args    []string    `json:"args,omitempty"`
	Env     []EnvVar    `json:"env,omitempty"`
	EnvFrom []EnvSource `json:"envFrom,omitempty"`
	// Mounts are the container's mounts of its component's Volumes.
	Mounts []Mount `json:"mounts,omitempty"`
	// Ports are the ports the container declares, in manifest order.
	Ports []Port `json:"ports,omitempty"`
	// Probes are its HTTP probes (readiness, liveness, startup): a server
	// says what it serves by the paths it answers (/v1/models, /health,
	// /v2/health/ready).
	Probes []Probe `json:"probes,omitempty"`
	// Accelerators are, sorted and without repeats: the names of the
	// extended resources the container requests or limits with a quantity
	// other than zero (nvidia.com/gpu, google.com/tpu, amd.com/gpu,
	// habana.ai/gaudi, aws.amazon.com/neuroncore, ...; never cpu, memory,
	// ephemeral-storage, storage or hugepages-*), including an operator's
	// short forms its profile reads (a Dynamo service's
	// resources.limits.gpu is nvidia.com/gpu); "claim:<name>" for each
	// dynamic resource claim it uses; and, for a main (not init)
	// container, "node:<key>" for each key of its pod's nodeSelector that
	// names an accelerator (cloud.google.com/gke-accelerator,
	// nvidia.com/gpu.product, karpenter.k8s.aws/instance-gpu-name, ...: a
	// configurable list). Quantities and label values are not inputs.
	Accelerators []string `json:"accelerators,omitempty"`
	// Files are the files a ConfigMap volume (whole, its items, or one key
	// through subPath; a projected volume's ConfigMap sources) puts in the
	// container, sorted by path: a start script or a configuration file
	// the server reads, scrubbed like any input (scripts word by word as
	// command lines, configuration files to their allow-listed keys).
	// Other files are left out; Secrets are never read.
	Files []File `json:"files,omitempty"`
}

// Port is one declared container port.
type Port struct {
	Name string `json:"name,omitempty"`
	Port int32  `json:"port"`
}

// Probe is one HTTP probe of a container: its kind (readiness, liveness
// or startup), path and port (a number or a port name) as written.
type Probe struct {
	Kind string `json:"kind"`
	Path string `json:"path"`
	Port string `json:"port,omitempty"`
}

// File is one file a ConfigMap volume puts in a container, at Path as the
// container sees it. Locator names the ConfigMap key it came from, as the
// locators of what any linked object contributes do
// ("ConfigMap/<name>:data.<key>", or ConfigMap/<name>:data["<key>"] for
// a key with a dot), so that editing that key is a change of every
// workload that reads it. Kind is FileScript (a .sh or .bash file, one
// whose first line is #!, or one the container's command or args run:
// its Text is redacted word by word like a command line) or FileConfig (a
// YAML or JSON mapping, or key=value lines: its Text is the allow-listed
// keys, "dotted.key.path=value" lines in document order, where a key is
// kept when it names, with dashes and underscores equal, a flag whose
// value the rules read or an allow-listed env name, and its value passes
// the credential checks).
type File struct {
	Path    string `json:"path"`
	Locator string `json:"locator"`
	Kind    string `json:"kind"`
	Text    string `json:"text,omitempty"`
}

// Kinds of File.
const (
	FileScript = "script"
	FileConfig = "config"
)

// EnvVar is one environment variable. Value is kept only for names on the
// allow-list; any other literal value is dropped and Redacted is set. A value
// taken from a Secret keeps the reference's names only; one taken from a
// ConfigMap the collector could read is kept (or dropped and Redacted) like
// a literal one, From still naming the ConfigMap key; a ConfigMap or key
// it could not read keeps the names only.
type EnvVar struct {
	Name     string  `json:"name"`
	Value    string  `json:"value,omitempty"`
	Redacted bool    `json:"redacted,omitempty"`
	From     *KeyRef `json:"from,omitempty"`
}

// KeyRef names a key of a Secret or ConfigMap ("secret" or "configMap"), or a
// field of the pod ("field").
type KeyRef struct {
	Kind string `json:"kind"`
	Name string `json:"name,omitempty"`
	Key  string `json:"key,omitempty"`
}

// EnvSource is an envFrom entry: the referenced object's kind and name.
// For a ConfigMap the collector could read, Env holds the variables it
// gives the container, as if they stood in the manifest (names with the
// prefix, in key order, values only for allow-listed names, each From
// naming the ConfigMap key); a Secret's are never read. Every source is
// kept as listed: Kubernetes' precedence (env over envFrom, a later
// envFrom over an earlier one) is the reader's.
type EnvSource struct {
	Kind   string   `json:"kind"`
	Name   string   `json:"name"`
	Prefix string   `json:"prefix,omitempty"`
	Env    []EnvVar `json:"env,omitempty"`
}

// Field is a kind-specific fact read from the object, under a canonical name
// (backendFramework, modelFormat, runtime, runtimeVersion, storageUri, modelUri,
// modelName, componentType, ...). Locator is where it was read.
type Field struct {
	Name    string `json:"name"`
	Value   string `json:"value"`
	Locator string `json:"locator"`
}

// ObjectRef names an object owned by the workload (a ReplicaSet, a Pod, a
// Grove PodClique, the Deployment an operator created, ...).
type ObjectRef struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Name       string `json:"name"`
	UID        string `json:"uid,omitempty"`
}

// ImageDigest is an image reference resolved from a running pod's
// status.containerStatuses[].imageID.
type ImageDigest struct {
	Image   string `json:"image"`
	Digest  string `json:"digest"`
	Locator string `json:"locator,omitempty"`
}

// Field returns the value of the workload-level field name, if any.
func (in *Inputs) Field(name string) (Field, bool) { return findField(in.Fields, name) }

// Field returns the value of the component-level field name, if any.
func (c *Component) Field(name string) (Field, bool) { return findField(c.Fields, name) }

func findField(fs []Field, name string) (Field, bool) {
	for _, f := range fs {
		if f.Name == name {
			return f, true
		}
	}
	return Field{}, false
}

// DigestOf returns the resolved digest of image, if one is known.
func (in *Inputs) DigestOf(image string) (string, bool) {
	for _, d := range in.Digests {
		if d.Image == image {
			return d.Digest, true
		}
	}
	return "", false
}
