// Package files is the manifest source of the collector: it turns YAML or JSON
// manifests on disk into the same WorkloadChange events the cluster watch
// emits, so that `bomstream render` and `bomstream run --manifests DIR` see
// exactly what the collector would.
//
// Each document is read by collector/manifest (which knows files, lines and
// `kind: List`), normalized by collector.Normalizer into Inputs (manifests
// have no uid, so the normalizer derives a stable one from
// cluster/namespace/kind/name, and no digests can be resolved), and wrapped in
// a WorkloadChange observed at the file's modification time. Documents that
// are not workloads become Notes; unreadable documents become errors naming
// the file and line. Neither stops the other documents. What the reader
// skips (a named pipe, a device, a file over manifest.Limits) is in
// Loaded.Skipped; a workload last read from a file skipped for its size is
// not taken for deleted.
//
// Every document read is also what the workloads' links see (collector.Lookup
// over the load): the ConfigMaps a pod mounts and the NIMCache a NIMService
// names, in any file under the path. Secrets are never handed out.
package files
