// Package findings is the read side of policy findings: it answers what
// FINDINGS holds, and never writes it. The findings stage (package
// github.com/bomstream/bomstream/findings) writes one finding set per
// workload and BOM version that changes something.
//
// Readers: List and ListPage (the current state of every finding, for
// `bomstream findings list` and Handler, /api/v1/findings), OpenFor (the
// open findings of given workloads, for `bomstream find --findings`), and
// Index, which reads FINDINGS once and follows it, keeping per finding its
// state, rule, severity, subject and the sequence of the message that
// holds it, grouped by workload, for readers that ask often: the web pages
// and /api/v1/findings count the open findings of each row and list a page
// of findings from it, in List's order, reading back only the page's
// messages.
//
// WorkloadState reads one workload's last finding set (or its events in
// the layout before finding sets); the stage decides its next set from it.
package findings
