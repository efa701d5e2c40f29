// Package process is one bomstream process: it composes the stages, runs
// them under a supervisor, drains them, and answers the commands of other
// processes. The command in cmd/bomstream declares commands and flags, and
// calls into this package for everything else.
//
// # Building a process
//
// A [Config] holds the whole configuration; [Load] reads the defaults, the
// file and the BOMSTREAM_* variables into it. [Parts] says which stages a
// command runs: the source, the transformer, the sinks, the findings stage.
// [Run] starts the log and the HTTP endpoint, builds a [Pipeline] with
// [New], and hands it to the command's body.
//
// # Stages
//
// Every part that works until the process ends is a [Stage]: a name, a Run
// and a health report. The transformer ([service.Service]), each sink's
// runner ([runner.Runner]) and the findings stage ([findings.Stage]) are
// stages, and so is the cluster source ([kube.Collector]). [Pipeline.Run]
// keeps a table of the consuming stages and runs each under a supervisor.
// A stage that fails or panics is restarted with backoff, and /readyz
// says so meanwhile; the other stages go on.
//
// A stage that consumes a stream is also a [Redriver]: it takes its dead
// letters back. [Redrive] finds the stage by the name a dead letter
// carries, in the same table.
//
// # Flows
//
// [Serve] is `bomstream run`: it checks the store, then runs the stages
// with a cluster or a manifests directory as the source. With --once it
// syncs once, waits until every consumer has drained, and prints a
// summary. [RunCollector] is the collector alone, kept small. [Render]
// and [ExplainFiles] read manifests with no stream at all.
//
// # The owner of a data directory
//
// Only one process opens an embedded store. Commands that attach to it
// ([Replay], [Redrive], [Rerender]) send a control request to that
// process, which does the work where its sinks and ledgers live. When no
// process owns the store, they do the work themselves.
package process
