// Package dtrack is the sink that keeps each workload's AI-BOM in
// Dependency-Track, through DependencyTrack/client-go, held to the API
// contract in ../shared/docs/DEPENDENCY-TRACK.md.
//
// Every workload has one project, named by templates over its identity
// (default "<cluster>/<namespace>/<kind>/<name>", version "current"). With
// the hierarchy on (the default) it sits under a project per namespace
// ("<cluster>/<namespace>"), itself under a project per cluster
// ("<cluster>"); the sink creates those parents when missing and caches
// their UUIDs. An export goes like this:
//
//	lookup project ──▶ ensure parents ──▶ PUT /api/v1/bom (autoCreate, parentUUID, tags, base64 BOM)
//	                                          │  or multipart POST when the base64 form is over 20,000,000 characters,
//	                                          │  or, on 5.1 above compressAbove bytes, with the bom part gzip-compressed
//	                                          ▼
//	                         poll GET /api/v1/event/token/{token} and the project's lastBomImport
//	                                          │  imported: lastBomImport moved
//	                                          ▼
//	                         PATCH active (and parent) when the project was inactive or elsewhere
//
// Dependency-Track processes an upload asynchronously and its token answers
// processing:false for success, failure and unknown tokens alike, so the
// import is confirmed by the project's lastBomImport moving; a token that
// ends without that is a processing failure, which retrying the same bytes
// cannot fix (permanent). The wait is bounded (processingTimeout) and
// survives an outage: errors while polling do not end it, and when it does
// end unconfirmed the token is kept, so that the retry waits again instead
// of uploading a second time. An Export of the BOM this process last
// imported into an untouched project is a no-op: the token and the import
// this process saw, per project, are all the state the sink keeps. Order is
// the runner's. Dependency-Track replaces a project's components with each
// upload, so the sink keeps only the latest state (SinkType.LatestOnly: the
// runner skips superseded BOMs; one that comes anyway changes nothing); the
// history stays in the stream.
//
// The sink speaks both release lines (server.go): it reads the version
// when it connects and recognises the 4.x and the 5.x wording of every
// error it acts on. A parent deleted or deactivated behind its back (4.x:
// 404 "... parent component ..." or 400; 5.x: 404 "... parent project ..."
// or 500 "Uncaught internal server error") is repaired and the upload tried
// once more. With parents: collection the cluster and namespace projects
// are collection projects, never an upload target. On 5.1 the upload's
// isActive reactivates a project; elsewhere a PATCH does. Only 5.1 reads a
// compressed bom part (application/gzip): 4.x and 5.0 would take the gzip
// bytes for the BOM and refuse it, so they never get one.
//
// Each project carries the tags cluster:<name>, namespace:<name>,
// kind:<kind>, runtime:<name> for each serving runtime in the BOM, the
// configured ones, lower-cased, and the export tag
// bomstream-export:<changeSeq>:<bomHash hex> (upload.go): Dependency-Track
// binds an upload's tags when it accepts it, so a process restarted after
// an upload it did not record finds the BOM already there and does not
// upload it again. The upload replaces the tags (Dependency-Track does so
// only for a key holding PORTFOLIO_MANAGEMENT, or _UPDATE on 5.x); what it
// does not apply to an existing project (parent, tags, latest flag) one
// PATCH sets, always with active and isLatest, since PATCH takes an absent
// active as true and an absent isLatest as false. A tombstone deactivates
// the project (PATCH with active false and isLatest as it was), deletes
// it, or keeps it, then deactivates its parents when no child of theirs is
// active (listing the children page by page); a later BOM of the same
// workload reactivates them. A stale tombstone
// (sinks.Tombstone.Stale: the workload was re-created under its name and
// its new BOM came first) is ignored. The order flags are about names: with
// templates that name projects by .UID they do not apply, and are not read.
//
// Errors: 401 and 403 are permanent and name the permission the key lacks;
// a collection project, a server that refuses the configured CycloneDX
// version (sinks.Deps.SpecVersion 1.7 before 4.14.4, and on 5.0), and
// parents: collection on 4.12 are permanent;
// a 404 for the project (autoCreate off) and every 400 (the schema errors
// Dependency-Track lists, a collection project, ...) are permanent and carry
// the server's reason; 5xx, 408, 429, timeouts and connection errors are
// transient. The API key, read from a file or an environment variable, is
// only ever put in the X-Api-Key header.
//
// The sink connects lazily: client-go reads /api/version when it is built,
// so New never fails because the server is down. Check (sinks.Checker)
// reports whether the server answers with version 4.12.0 or later (and
// names it, with the features in use), whether the key is valid, and which
// needed permission its team lacks, by both names on 5.x. Locate
// (sinks.Locator) names, without I/O, the project (name and version, and
// the server's base URL) that holds the workload's current version.
package dtrack
