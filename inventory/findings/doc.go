// Package findings is the read side of policy findings. It answers what
// FINDINGS holds and never writes it: the findings stage, package
// [github.com/bomstream/bomstream/findings], writes one finding set per
// workload and BOM version that changes something.
//
// The readers take a [Store] (a *stream.Bus). [List] and [ListPage] read
// the current state of every finding, for `bomstream findings list`.
// [OpenFor] reads the open findings of given workloads, one direct read
// each, for `find --findings` and a workload's page. [WorkloadState]
// reads one workload's last set; the stage decides its next set from it.
//
// An [Index] keeps what readers that ask often need: per finding its
// state, rule, severity, subject and the sequence of the message holding
// it. It loads FINDINGS once, then a follow.Follower keeps it current.
// [Index.Select] counts and picks a page in List's order, and
// [Selection.Events] reads back only the page's messages. [Handler] serves
// /api/v1/findings from the index once it has loaded, else from the
// stream.
//
// Stores written before finding sets hold one subject per finding. Every
// reader still reads them, preferring a workload's set when it has one.
package findings
