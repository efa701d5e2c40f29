// Package schemas is the contract between bomstream's stages.
//
// The collector observes a Kubernetes workload and reduces it to Inputs: the
// normalized facts a BOM is rendered from (identity, pod templates with roles,
// containers, kind-specific fields, owned objects, resolved image digests). It
// wraps them in a WorkloadChange, a CloudEvents 1.0 structured JSON event keyed
// by InputHash, and publishes it on the CHANGES stream. The transformer reads the
// same types back, renders CycloneDX, and names each BOM by its BomHash.
//
// This package has no dependencies on the other stages. It holds:
//
//   - the Go types of the events (WorkloadChange, Inputs and their parts);
//   - CanonicalJSON, InputHash and BomHash, the byte-exact identities that make
//     deduplication and replay work;
//   - the JSON Schema of every event type (json/*.schema.json, embedded) and a
//     Validator that compiles them, and the CycloneDX 1.6 schema, once.
//
// Subjects and message ids of the streams are spelled here too, so that every
// stage names them the same way.
//
// Two small packages beside this one hold words more than one side reads,
// so that none of them imports another's code. Package
// [github.com/bomstream/bomstream/schemas/cmdline] reads a command line:
// the transformer detects with it, the collector redacts with it. Package
// [github.com/bomstream/bomstream/schemas/imageref] reads image references
// and the versions of their tags: the transformer names a BOM's images and
// runtimes with it, the inventory filters and orders them with it.
package schemas
