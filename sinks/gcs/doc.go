// Package gcs is the sink that keeps BOMs in a Google Cloud Storage bucket,
// through cloud.google.com/go/storage.
//
// Each workload has one folder, named by the path template (default
// "{{ .Prefix }}/{{ .Cluster }}/{{ .Namespace }}/{{ .Kind }}/{{ .Name }}/{{ .BOMHash }}.cdx.json";
// a cluster-scoped workload uses "_" as its namespace), holding:
//
//	<bomhash-hex>.cdx.json  one immutable object per distinct BOM, created once (ifGenerationMatch=0)
//	latest.cdx.json         a copy of the current BOM
//	tombstone.json          present while the workload is gone or serves no model
//
// Every object carries the metadata bomHash, inputHash, workload, uid,
// changeSeq, streamSeq and time (the event's); the tombstone also its
// reason ("deleted" or "not-serving").
//
// Order is the runner's (see sinks.Sink): the sink keeps no version record
// and compares no change sequences. Export writes the immutable object
// with the create-only precondition. A 412 there means the object exists:
// when its metadata, size and MD5 are those of this BOM (a retry whose
// first answer was lost, a replay) that is success, and anything else is a
// permanent error, since immutable objects are never rewritten. A
// superseded BOM (sinks.BOM.Superseded) stops there: history. Otherwise
// Export makes latest.cdx.json a copy of it, unless its metadata says it
// is one already (this bomHash at this change sequence), and deletes the
// tombstone, which revives the workload. Tombstone writes the marker
// unless it is there already (this change sequence and reason), and
// ignores a stale tombstone (sinks.Tombstone.Stale) and one of a workload
// with no latest object. The order flags are about names: with a folder
// per uid ({{ .UID }} in pathTemplate) they do not apply, and are not read.
//
// A replay of BOMs already stored writes nothing: each immutable object
// answers 412, latest holds the BOM already, and the markers are there.
//
// Errors are classified for the runner, which owns retries (the client's
// own are off): 401 and 403 are permanent and name the missing permission,
// a missing bucket is permanent, 412 is handled as above, 408, 409, 429,
// 5xx, timeouts and connection errors are transient. Check proves the permissions on a probe
// object of its own. Locate (sinks.Locator) names, without I/O, a
// version's object and, for the current version, latest.cdx.json, as
// gs://bucket/object with a Cloud console link when the endpoint is
// Google's. Package gcstest runs fake-gcs-server in-process for tests.
package gcs
