// Command bomstream keeps a CycloneDX AI-BOM for every model-serving workload
// and exports it to the configured sinks. See README.md.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	// The CA roots for TLS (GCS, Dependency-Track, OCI registries, NATS) when
	// the system has none, as in the scratch image (deploy/image): crypto/x509
	// falls back to this bundle only then.
	_ "golang.org/x/crypto/x509roots/fallback"

	"github.com/bomstream/bomstream/sinks/registry"
	"github.com/bomstream/bomstream/sinks/stdout"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	reg := registry.Builtin()
	reg[stdout.Type] = stdout.TypeFor(os.Stdout)
	err := run(ctx, os.Args[1:], &env{stdout: os.Stdout, stderr: os.Stderr, getenv: os.Getenv, sinks: reg})
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "bomstream:", err)
		os.Exit(1)
	}
}
