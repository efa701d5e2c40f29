// Package gcs is the sink that keeps BOMs in a Google Cloud Storage bucket,
// through cloud.google.com/go/storage.
//
// Each workload has one folder, named by the path template (default
// "{prefix}/{cluster}/{namespace}/{kind}/{name}/{bomHash}.cdx.json"; a
// cluster-scoped workload uses "_" as its namespace), holding:
//
//	<bomhash-hex>.cdx.json  one immutable object per distinct BOM, created once (ifGenerationMatch=0)
//	latest.cdx.json         a copy of the newest BOM by change sequence
//	tombstone.json          present while the workload is gone or serves no model
//
// Every object carries the metadata bomHash, inputHash, workload, uid,
// changeSeq, streamSeq and time (the event's); the tombstone also its
// reason ("deleted" or "not-serving").
//
// Export writes the immutable object with the create-only precondition. A
// 412 there means the object exists: when its metadata, size and MD5 are
// those of this BOM (a retry whose first answer was lost, a replay) that is
// success, and anything else is a permanent error, since immutable objects
// are never rewritten. Export then moves latest.cdx.json forward: it reads
// the object's metadata, leaves it alone when it holds this version or a
// newer one, and otherwise replaces it under ifGenerationMatch of what it
// read; losing that race (412) reads again and decides again, so an older
// BOM never overwrites a newer one, whatever replicas run. Last, an Export
// newer than the tombstone deletes it (by generation), which revives the
// workload. Tombstone writes the marker the same way, and ignores a
// tombstone of a workload with no latest object or one older than it.
//
// A replay of BOMs already stored writes nothing: each immutable object
// answers 412 and latest is already as new. Errors are classified for the
// runner, which owns retries (the client's own are off): 401 and 403 are
// permanent and name the missing permission, a missing bucket is
// permanent, 412 is handled as above, 408, 409, 429, 5xx, timeouts and
// connection errors are transient. Check proves the permissions on a probe
// object of its own. Package gcstest runs fake-gcs-server in-process for
// tests.
package gcs
