package main

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"go.uber.org/zap"

	"github.com/bomstream/bomstream/config"
	"github.com/bomstream/bomstream/inventory"
	"github.com/bomstream/bomstream/inventory/api"
	stored "github.com/bomstream/bomstream/inventory/findings"
	"github.com/bomstream/bomstream/inventory/follow"
	"github.com/bomstream/bomstream/process"
	"github.com/bomstream/bomstream/schemas"
)

// apiHook adds routes (s.Handle) or query fields (s.Extend) to the
// inventory API of a process, before it serves; p is the process's
// pipeline. Policy findings add /api/v1/findings this way (env.apiHooks).
type apiHook func(ctx context.Context, s *api.Server, p *process.Pipeline) error

// apiFlag names the flags of the API and where each goes in api.Config.
var apiFlags = []struct {
	name, usage string
	field       func(*api.Config) *string
}{
	{"api-listen", "serve the read-only inventory API at ADDR, e.g. 127.0.0.1:8080; beyond loopback it needs --api-token-file or --api-client-ca (env BOMSTREAM_API_LISTEN)",
		func(c *api.Config) *string { return &c.Listen }},
	{"api-token-file", "file holding the bearer token API clients must send (env BOMSTREAM_API_TOKEN_FILE)",
		func(c *api.Config) *string { return &c.TokenFile }},
	{"api-client-ca", "PEM CA file: API clients must present a certificate it signed (needs --api-tls-cert) (env BOMSTREAM_API_CLIENT_CA)",
		func(c *api.Config) *string { return &c.ClientCA }},
	{"api-tls-cert", "the API's TLS certificate (PEM)", func(c *api.Config) *string { return &c.TLSCert }},
	{"api-tls-key", "the API's TLS key (PEM)", func(c *api.Config) *string { return &c.TLSKey }},
}

// bindAPI adds the API's flags to a command that serves it (run, sink).
func bindAPI(cmd *cobra.Command) {
	for _, f := range apiFlags {
		cmd.Flags().String(f.name, "", f.usage)
		config.FromEnv(cmd.Flags(), f.name)
	}
}

// apiConfig is cfg with the API flags that were set.
func apiConfig(cmd *cobra.Command, cfg api.Config) api.Config {
	for _, f := range apiFlags {
		if fl := cmd.Flags().Lookup(f.name); fl != nil && fl.Changed {
			*f.field(&cfg) = fl.Value.String()
		}
	}
	return cfg
}

// startAPI serves the inventory API when the stages serve it and it is
// configured: it loads the index from BOMS, keeps it current (a
// follow.Follower, as the findings index beside it), and serves
// until ctx ends. stop waits for the end. A process that works through the
// data directory's owner serves none.
func startAPI(ctx context.Context, cmd *cobra.Command, e *env, p *process.Pipeline, st process.Parts, log *zap.Logger) (stop func() error, err error) {
	cfg := apiConfig(cmd, p.Config().API)
	if !st.API || cfg.Listen == "" {
		return func() error { return nil }, nil
	}
	ln, err := api.Listen(cfg)
	if err != nil {
		return nil, err
	}
	ix := inventory.New()
	start := time.Now()
	if _, err := ix.Load(ctx, p.Bus().Reader()); err != nil {
		ln.Close()
		return nil, fmt.Errorf("inventory api: %w", err)
	}
	log = log.With(zap.String("stage", "api"))
	log.Info("inventory loaded", zap.Int("workloads", ix.Stats().Workloads), zap.Duration("took", time.Since(start)))
	p.FindingsIndex = stored.NewIndex()
	go follow.New(p.Bus().Reader(), schemas.StreamFindings, p.FindingsIndex).Run(ctx, func(err error) { log.Warn("findings not current", zap.Error(err)) })
	srv, err := api.New(cfg, ix, p.Bus().Reader())
	if err == nil {
		for _, h := range append([]apiHook{findingsAPIHook, webAPIHook(ix)}, e.apiHooks...) {
			if err = h(ctx, srv, p); err != nil {
				break
			}
		}
	}
	if err != nil {
		ln.Close()
		return nil, fmt.Errorf("inventory api: %w", err)
	}
	done := make(chan error, 1)
	go follow.New(p.Bus().Reader(), schemas.StreamBOMs, ix).Run(ctx, func(err error) { log.Warn("inventory not current", zap.Error(err)) })
	go func() { done <- srv.Serve(ctx, ln) }()
	log.Info("inventory api listening", zap.String("addr", ln.Addr().String()))
	if e.apiAddr != nil {
		e.apiAddr <- ln.Addr().String()
	}
	return func() error { return <-done }, nil
}
