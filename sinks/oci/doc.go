// Package oci is the sink that attaches BOMs to the container images they
// describe, as OCI 1.1 referrers in the images' registries, through
// oras-go.
//
// For each image of a BOM whose manifest digest was resolved from a
// running pod (sinks.BOM.Images), Export pushes one artifact into the
// image's own repository, or into the configured repository:
//
//	manifest  application/vnd.oci.image.manifest.v1+json
//	          artifactType  application/vnd.cyclonedx+json
//	          subject       the image manifest (resolved in the image's repository: media type, size)
//	          config        {} typed application/vnd.cyclonedx+json
//	          layers        the BOM, media type application/vnd.cyclonedx+json, title bom.cdx.json
//	          annotations   org.opencontainers.image.created (the event's time), dev.bomstream.bomHash,
//	                        dev.bomstream.workload (<cluster>/<namespace>/<kind>/<name>), dev.bomstream.uid
//
// Nothing in it depends on when or by whom it is pushed, so one BOM makes
// one manifest digest. Referrers are history: a superseded BOM
// (sinks.BOM.Superseded) is pushed like any other, and what reads as an
// image's latest BOM is the one created last. Export first lists the image's referrers with the
// CycloneDX artifact type and stops there when the manifest is among them:
// a re-push writes nothing. Otherwise it uploads the blobs the repository
// lacks and the manifest. Where the registry has no referrers API, oras-go
// keeps the referrers tag schema (an index tagged sha256-<hex> of the
// subject) and deletes the index it replaces; a registry that refuses the
// delete leaves the old index untagged, with a warning. Pushes that add a
// referrer to one subject are serialised in the process.
//
// Images with no digest, a digest that does not parse or a reference that
// names no repository are skipped: counted in
// bomstream_sink_oci_images_skipped_total{reason} and logged. Pushed and
// already present artifacts are counted in
// bomstream_sink_oci_artifacts_total{result}.
//
// Tombstone writes nothing: a referrer records which BOM an image manifest
// had in a workload at a time, which stays true when the workload is gone,
// and a tombstone names no image. It is idempotent by construction.
//
// Credentials come from a docker config.json (dockerConfig), read again
// when it changes; without one the sink is anonymous. Errors are
// classified for the runner: 401 and 403 are permanent and say what to fix
// in dockerConfig, a missing image manifest or repository is permanent,
// 408, 429, 5xx, timeouts and connection errors are transient. With
// several images, the error is transient when any part of it is. Check
// pings the registries it knows of before BOMs arrive and proves push
// access to the configured repository. Locate (sinks.Locator) names,
// without I/O, the subjects a version's BOM is a referrer of
// (registry/repository@digest) and the artifact types. Package ocitest
// runs three registries in-process for tests.
package oci
