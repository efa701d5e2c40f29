// Package manifest reads Kubernetes manifests from YAML or JSON files into
// plain objects, remembering where each one came from.
//
// A file is split into its YAML documents; each document is parsed on its own
// with the go.yaml.in/yaml/v3 Node API, so that every object keeps the file
// and 1-based line it starts on, and one malformed document cannot hide the
// documents around it. Each document becomes a map[string]any whose values are
// only map[string]any, []any, string, int64, float64, bool and nil, the same
// shape an unstructured object from the API server has. Empty and comment-only
// documents are skipped; a `kind: List` (or a `*List` kind such as
// DeploymentList) is expanded into its items, each with the line of the item.
//
// Partial results: Parse and ReadPath return every object they could read
// together with an error (errors.Join) that names each document they could
// not, as "file:line: reason". A caller that wants all-or-nothing checks the
// error; a caller that wants the good objects (the collector's manifest
// source does) uses them and reports the error.
//
// Bounded input: Read opens regular files only (a symlink is followed to
// one). A named pipe, a device, a socket or a directory named like a
// manifest is skipped with a Skip saying what it is, and is never opened for
// reading: a pipe would block the walk, /dev/zero would feed it without end.
// The kind of file is checked before it is opened and again on the opened
// file, which is opened non-blocking. A file larger than Limits.MaxFileBytes
// (default 16 MiB) is skipped unread, and the read itself goes through a
// limit, so a file growing meanwhile cannot exceed it; past
// Limits.MaxDocuments documents (default 10,000) the rest of a file is
// skipped. ReadPath, for all-or-nothing callers, reports skips as errors.
package manifest
