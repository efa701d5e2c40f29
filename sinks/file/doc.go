// Package file is the sink that writes BOMs into a directory tree, for the
// embedded default, for debugging, and for GitOps pipelines that commit the
// tree.
//
// Each workload has one directory, <dir>/<cluster>/<namespace>/<kind>/<name>
// (a cluster-scoped workload uses "_" as its namespace), holding:
//
//	<bomhash-hex>.cdx.json  one immutable file per distinct BOM, created once and never rewritten
//	latest.cdx.json         a copy of the newest BOM (by change sequence), replaced atomically
//	latest.json             which BOM latest.cdx.json is: {"bomHash","changeSeq","streamSeq","time","uid"}
//	deleted.json            present while the workload is gone: {"changeSeq","streamSeq","time","uid"}
//
// Every file is written to a temporary file in the same directory, fsynced,
// then linked (immutable files: create-only) or renamed (the others) into
// place, and the directory is fsynced: a reader never sees half a file.
// The option `fsync: false` (Config.Fsync) skips the fsyncs, which spares
// four waits on the disk per BOM, at the price of losing the last exports on
// a machine crash (see Config.Fsync); the default stays durable. The
// latest BOM is a copy rather than a symlink so that it reads the same with
// cat, through object-store syncs and in Git, which do not all follow links.
//
// Export of a BOM whose change sequence is older than latest.json's keeps
// the immutable file (history) but leaves latest alone; an Export newer than
// deleted.json revives the workload by removing the marker; a tombstone older
// than the latest BOM of the same name (a workload re-created under its old
// name) is ignored. Path segments come from Kubernetes names, which are DNS
// subdomains, but any segment that could escape the tree ("", ".", "..", or
// one containing a slash, backslash or NUL) is rejected with a permanent error.
//
// One Sink serialises writes per workload directory and is safe for
// concurrent use; two processes writing the same tree are not coordinated.
package file
