// Package file is the sink that writes BOMs into a directory tree, for the
// embedded default, for debugging, and for GitOps pipelines that commit the
// tree.
//
// Each workload has one directory, <dir>/<cluster>/<namespace>/<kind>/<name>
// (a cluster-scoped workload uses "_" as its namespace), holding:
//
//	<bomhash-hex>.cdx.json  one file per distinct BOM, named by the hash of its bytes
//	latest.cdx.json         the current BOM: a hard link to its <bomhash-hex>.cdx.json,
//	                        absent while the workload is deleted or not serving
//	tombstone.json          present while it is: {"reason","changeSeq","time","bomHash"},
//	                        bomHash naming the BOM that was current until then
//
// The tree is all the state there is: the runner tells the sink about order
// (sinks.BOM.Superseded, sinks.Tombstone.Stale), so the sink keeps no
// record of versions. What it learns of a workload directory the first time
// it looks (which files are there; temporary files a crash left are
// removed then) it keeps in memory, and updates with its own writes. A BOM
// therefore costs about four system calls: its file (open, write, close)
// and the link, plus a look at its directory once per process.
//
// Durability is group-committed: the exports in flight at one moment share
// one flush of the file system (syncfs(2) on Linux), and no Export returns
// before the flush that covers it. Under load (the last flush covered more
// than one export) a flush starts no sooner than five times the last one's
// duration (at least 1 ms, at most FlushInterval, 10 ms) after the one
// before: slow flushes are made fewer and cover more exports; a lone export
// is flushed at once.
// `fsync: false` (Config.Fsync) skips the flush, at the price of losing
// the last exports on a machine crash (not a process crash).
//
// A BOM file is written in place, not renamed into place: nothing points at
// it until latest.cdx.json does, and its name is its hash, so a file torn by a
// crash is noticed (its bytes do not hash to its name) and written again by
// the next Export of that BOM. latest.cdx.json is swapped atomically (a link
// under a temporary name, renamed), and, being a hard link, reads the same
// with cat, in Git and through object-store syncs. tombstone.json is written
// only once latest.cdx.json is gone, and goes before a new one is linked:
// whatever a crash interrupts, the two are never there together, and the
// redelivered call completes the step.
//
// A superseded BOM is kept as history (its file) and leaves latest alone; an
// Export after a tombstone makes the workload current again; a stale
// tombstone, and one of a workload with no directory, change nothing.
//
// Path segments come from Kubernetes names, which are DNS subdomains, but
// any segment that could escape the tree ("", ".", "..", or one containing
// a slash, backslash or NUL) is rejected with a permanent error.
//
// One Sink serialises writes per workload directory, keeps what it knows in
// memory, and is safe for concurrent use; it assumes it is the only writer
// of its tree (the process that owns the data directory). Locate
// (sinks.Locator) names, without I/O, a version's file and, for the
// current version, latest.cdx.json.
package file
