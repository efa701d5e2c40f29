// Package web serves the inventory as pages people read: the people who
// ask "which models run where, since when" and do not run kubectl
// (security reviewers, model governance, auditors).
//
// Pages, mounted beside the JSON API on the same api.Server (Register), so
// they share its listener and its guard: open on loopback only, else a
// bearer token (a browser sends it once, at /login, and keeps it in an
// HttpOnly cookie) or client certificates:
//
//	GET /                    the inventory: every workload with cluster,
//	                         namespace, kind, runtime@version, models,
//	                         confidence, open findings and last change;
//	                         the filters are find's (inventory.Fields) and
//	                         live in the URL, so a view can be shared;
//	                         sort=COLUMN (-COLUMN descending), page=N
//	GET /workloads/{cluster}/{namespace}/{kind}/{name}
//	                         one workload: the AI-BOM of a version as people
//	                         read it (package bomview), its timeline (edits,
//	                         tombstones, revivals, in change order), the diff
//	                         of any two versions (from=SEQ&to=SEQ), the raw
//	                         CycloneDX and where each sink holds it
//	GET /findings            policy findings, open or resolved, by rule and
//	                         namespace, each linked to its workload
//	GET /fleet               counts by runtime and version, model and
//	                         cluster, and changes per day, as SVG charts
//	                         (package chart) with the same figures in tables
//
// Everything a page needs is embedded (templates, one stylesheet); pages
// carry no script and load nothing from elsewhere (the Content-Security-
// Policy forbids it), so they work in a closed network and with
// JavaScript off; charts show their figures on hover through SVG titles.
// The theme follows the system's light or dark setting.
//
// Data comes from the same places as the API's: the inventory index for
// lists and timelines (no BOM body is read to draw the inventory; when the
// order is by name only the page's entries are built), BOMS for the bodies
// a workload page shows and compares, a findings index (findings.Index,
// read from FINDINGS in the background and followed as it is written,
// package inventory/follow; a page of findings reads only its own events
// back), and a Locator for where
// the sinks hold a version. The fleet's figures are kept until the
// inventory index moves. What
// a page shows of a BOM is what the BOM holds: the transformer keeps
// secrets out of it, and the pages add none.
package web
