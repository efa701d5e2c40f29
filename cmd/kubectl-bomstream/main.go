// Command kubectl-bomstream is the kubectl plugin of bomstream: on the
// PATH, `kubectl bomstream find|get|history` asks the in-cluster
// inventory API through the kubeconfig. See package kubeplugin and
// docs/inventory.md.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/bomstream/bomstream/kubeplugin"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := kubeplugin.Run(ctx, os.Args[1:], kubeplugin.Env{Stdout: os.Stdout, Stderr: os.Stderr, Getenv: os.Getenv})
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "kubectl bomstream:", err)
		os.Exit(1)
	}
}
