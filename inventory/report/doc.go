// Package report prints what the inventory answers, for people and for
// scripts, the same way wherever the answer comes from: `bomstream find`
// and `history` reading the stream, and the kubectl plugin reading the
// HTTP API (package inventory/api).
//
// Entries prints the workloads a query selects as a table, JSON (the items
// of /api/v1/workloads) or CSV; History prints a workload's versions,
// oldest first; Summary prints one workload's version in effect. Times are
// printed exactly enough (RFC 3339 with every fractional digit the time
// has) that `get --at` given the printed text finds that version.
package report
