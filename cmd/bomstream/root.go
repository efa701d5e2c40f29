package main

import (
	"context"
	"io"

	"github.com/spf13/cobra"

	"github.com/bomstream/bomstream/process"
	"github.com/bomstream/bomstream/sinks"
)

// env is everything a command takes from the process: its output streams, its
// environment variables, the sink types it knows, and (for tests) where to
// report the bound address of the HTTP endpoint.
type env struct {
	stdout, stderr io.Writer
	getenv         func(string) string
	sinks          sinks.Registry
	httpAddr       chan<- string
	apiAddr        chan<- string // the inventory API's bound address (tests)
}

// run builds the command tree and executes it; it is main without the exit, so
// tests drive the CLI exactly as a user does.
func run(ctx context.Context, args []string, e *env) error {
	root := newRoot(e)
	root.SetArgs(args)
	return root.ExecuteContext(ctx)
}

// newRoot is the command tree, writing to e's output streams.
func newRoot(e *env) *cobra.Command {
	root := &cobra.Command{
		Use:   "bomstream",
		Short: "AI-BOMs for the models and inference engines running in Kubernetes",
		Example: `  bomstream run --manifests deploy/ --once
  bomstream run --kubeconfig ~/.kube/config --api-listen 127.0.0.1:8080
  bomstream find --runtime 'vllm<0.8.5'`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetOut(e.stdout)
	root.SetErr(e.stderr)
	root.AddCommand(versionCmd(), renderCmd(), runCmd(e), transformerCmd(e), sinkCmd(e), replayCmd(e), historyCmd(e), getCmd(e), dlqCmd(e), checkCmd(e), rerenderCmd(e))
	root.AddCommand(collectorCmd(e)) // the cluster source (collector.go)
	root.AddCommand(findCmd(e))      // the inventory (find.go)
	root.AddCommand(findingsCmd(e))  // policy findings (findings.go)
	root.AddCommand(verifyCmd(e))    // signed AI-BOM attestations (verify.go)
	root.AddCommand(webCmd(e))       // the web inventory (web.go, package inventory/web)
	root.AddCommand(explainCmd(e))   // why a workload serves or not (explain.go)
	return root
}

func versionCmd() *cobra.Command {
	return &cobra.Command{
		Use:     "version",
		Short:   "Print the bomstream version",
		Example: `  bomstream version`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := io.WriteString(cmd.OutOrStdout(), "bomstream "+process.Version()+"\n")
			return err
		},
	}
}
