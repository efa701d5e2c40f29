// Package dtracktest is a Dependency-Track API server for tests: an
// httptest server that answers the routes a BOM exporter uses the way the
// real API server does, status codes, bodies and quirks included, as
// established from its source in ../shared/docs/DEPENDENCY-TRACK.md. No real
// Dependency-Track can run where bomstream is tested; this double's job is to
// fail a client exactly where the real server would.
//
// A test starts one with New, creates API keys with the permissions it wants
// to give, and points the client at URL:
//
//	dt := dtracktest.New(t, dtracktest.Options{})
//	key := dt.NewKey(dtracktest.BOMUpload, dtracktest.ProjectCreationUpload,
//		dtracktest.PortfolioManagement, dtracktest.ViewPortfolio)
//
// What it implements, route by route (the contract table of the document):
//
//	GET    /api/version                    no authentication
//	PUT    /api/v1/bom                     JSON, base64 bom, 20,000,000-character cap
//	POST   /api/v1/bom                     multipart/form-data, raw bom, no cap
//	GET    /api/v1/event/token/{uuid}      (and the deprecated /api/v1/bom/token/{uuid})
//	GET    /api/v1/project?name=           paginated, X-Total-Count
//	GET    /api/v1/project/lookup
//	GET    /api/v1/project/{uuid}
//	GET    /api/v1/project/{uuid}/children
//	PUT    /api/v1/project                 create
//	POST   /api/v1/project                 full update (replace semantics)
//	PATCH  /api/v1/project/{uuid}          partial update, 304 when unchanged
//	DELETE /api/v1/project/{uuid}          recursive
//	GET    /api/v1/team/self               the key's team and permissions
//
// The last route is not in the document's table; it is the one way for an
// API key to learn its own permissions, and its shape is read from
// TeamResource.getSelf and TeamSelfResponse (authentication only,
// {"uuid","name","permissions":[{"name","description"}]}).
//
// Authentication and permissions come first (401 and 403 with empty
// bodies), then body mapping (400 problem+json), then bean validation (400
// JSON array), then project resolution and creation (404 text, 401 text when
// the key may not create projects), then the collection check, tag binding
// and CycloneDX schema validation (400 problem+json with the schema errors;
// an auto-created project stays). Accepted BOMs are processed asynchronously
// per project, in upload order: components are reconciled by identity
// (purl, cpe, swidTagId, group, name, version), so unchanged identities keep
// their UUIDs and missing ones are deleted; lastBomImport and
// lastBomImportFormat are set; a component of type cryptographic-asset fails
// processing, which changes nothing. The token says processing:true from
// upload until the import and Options.AnalysisDelay after it, then false, as
// it does for unknown tokens.
//
// Options.Version selects the server version reported by /api/version and
// the behaviour that depends on it; Lines lists the release lines the
// double speaks (4.12, 4.13, 4.14 as of 4.14.4, 5.0, and 5.1 for what
// `main` has), and lines.go says what each changes, point by point of the
// document: projectTags and isLatestProjectVersion are unknown fields
// before 4.12.0, collectionLogic before 4.13.0, the upload's isLatest
// before 4.14.0 and isActive before 5.1; JSON specVersion 1.6 is rejected
// before 4.11.4, and 1.7 everywhere but 4.14.4+ and 5.1. Only 5.1 decodes
// a multipart bom part by its Content-Type (application/gzip, x-gzip,
// zstd, x-zstd; one that does not decode is an empty 500, as the
// IOException is on main): every other line reads the bytes as the BOM,
// so a compressed part fails validation there. On 5.x: the parent
// errors' new wording (a missing parent's text, an inactive parent's 500),
// the fine-grained PORTFOLIO_MANAGEMENT_CREATE/_UPDATE/_DELETE permissions,
// no collectionLogic NONE (null instead), the upload's projectUuid and
// version 7 tokens, problem documents for an unknown parent in a project
// body, the list's shape and order, and cryptographic-asset components
// imported. CycloneDX 1.6 and 1.7 JSON are schema-validated (1.2 to 1.5
// are accepted unvalidated); XML is not understood.
//
// Controls for tests: Down and Up make every route answer 503 (an outage);
// RejectBOM, Reject and AcceptBOM make uploads of chosen BOMs fail schema
// validation with given errors, and succeed again later; Calls counts
// requests per route, BytesIn their request body bytes, and Lookups the
// lookups of one project; Uploads counts accepted uploads and Processed
// imports per bomHash; Project, Projects and Children show the stored
// state; CreateProject seeds it.
//
// Not implemented: portfolio access control (ACLs are off, as by default),
// Bearer (JWT) authentication, notifications, vulnerability analysis itself,
// services and dependency graphs, XML BOMs.
package dtracktest
