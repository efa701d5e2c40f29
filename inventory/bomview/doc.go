// Package bomview turns a BOM body as bomstream renders it into a view
// people read on a web page, and compares two versions of it.
//
// # Reading
//
// Read parses a CycloneDX 1.6 or 1.7 JSON body (what the transformer
// renders and the sinks export) with encoding/json into a View: the
// workload (metadata.component, whose properties hold bomstream:cluster,
// namespace, kind, uid and inputHash), then the components in four
// sections, each in BOM order:
//
//   - Runtimes: a bom-ref starting with "runtime:" (runtime:vllm@0.9.2,
//     or runtime:vllm when no version is known);
//   - Models: type machine-learning-model;
//   - Images: type container;
//   - Others: anything else.
//
// Every component keeps all its properties in BOM order (Component.Property
// reads the values of one name), and the ones a reader looks for first are
// lifted into fields: the roles (bomstream:role, sorted and unique), the
// confidence, the resolved image digests (bomstream:image:digest but
// "unresolved") and the model revisions (bomstream:model:revision and
// bomstream:model:digest). The evidence is flattened to one Evidence per
// identity method, with the identity's field and concluded value, and the
// occurrences to their locations. Dependencies are kept as written, by ref.
// Nested components are not read: bomstream writes none.
//
// Read refuses a body that is not a CycloneDX BOM (its bomFormat is not
// "CycloneDX": the error wraps ErrNotCycloneDX), of another specVersion,
// with a component without a bom-ref or two components of one bom-ref.
// Its errors read as a path to what is wrong, "bom: components[3]: json:
// cannot unmarshal number ...", and wrap the encoding/json error.
//
// # Comparing
//
// Compare matches the components of two views by bom-ref. One only in the
// newer is Added, one only in the older Removed (both sorted by section,
// runtimes first, then bom-ref), one in both whose content differs is a
// Change listing each field that differs (sorted by field name): type,
// group, name, version, purl, each hash algorithm ("hash:SHA-256"), each
// property name ("property:bomstream:image:digest"), "roles", "evidence",
// "locations" and "dependsOn". Multi-valued fields compare as sorted
// lists, so the order they are written in does not count. The
// bomstream:role properties are the field "roles", not "property:...".
// The metadata.component is compared the same way into Diff.Workload:
// its bomstream:inputHash changes with every new version. The serial
// number and timestamp are not compared.
//
// What the bom-ref holds decides what a change looks like, and the
// transformer (transformer/components.go, transformer/bom.go) names
// components so:
//
//   - a model is "model:<location-kind>:<id>" (the Hugging Face id lower
//     cased), without its revision: a new revision keeps the bom-ref and is
//     a Change of "property:bomstream:model:revision", "version" and
//     "purl". An oci:// model's id is its reference, tag or digest
//     included (model:oci:oci://quay.io/org/m:1.0);
//   - a runtime is "runtime:<name>@<version>": a new version changes the
//     bom-ref;
//   - an image is "container:<reference as written>", the digest only when
//     the reference is written with one; the digest the cluster resolved
//     is the property bomstream:image:digest (and the version, purl and
//     SHA-256 hash). A new digest under the same tag keeps the bom-ref and
//     is a Change of "property:bomstream:image:digest"; a new tag changes
//     the bom-ref.
//
// So that a new version of one thing reads as one change and not as a
// removal and an addition, Compare pairs a removed component with an added
// one when they are the only removed and the only added component of
// their section, type and name. The name of a runtime is its title
// ("vLLM", for runtime:vllm@0.19.0 and runtime:vllm@0.20.0), of an image
// its repository ("docker.io/vllm/vllm-openai", for every tag), of a model
// its id; an oci:// model's name is taken without its digest, so that a
// new digest of one tag pairs but a new tag (often another model of one
// catalog repository) does not. A pair is one Change under the newer
// bom-ref with the field "ref" (old -> new) besides the others ("version",
// "property:bomstream:model:revision", ...). Two vLLM runtimes removed and
// two added are not paired: Compare cannot tell which became which.
// The dependsOn of the older version are read through the pairs before
// they are compared, so that a runtime whose model was renamed shows no
// dependsOn change of its own; a FieldChange of dependsOn shows both lists
// as written.
//
// Compare is deterministic and pure: the same views give equal Diffs.
package bomview
