package main

import (
	"context"

	"github.com/spf13/cobra"
	"go.uber.org/zap"

	"github.com/bomstream/bomstream/config"
	"github.com/bomstream/bomstream/inventory/api"
	"github.com/bomstream/bomstream/process"
)

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

// startAPI serves the inventory API, the findings API and the web pages
// (process.ServeAPI) when the command serves them and --api-listen or the
// configuration names an address. A process that works through the data
// directory's owner serves none.
func startAPI(ctx context.Context, cmd *cobra.Command, e *env, p *process.Pipeline, st process.Parts, log *zap.Logger) (stop func() error, err error) {
	cfg := apiConfig(cmd, p.Config().API)
	if !st.API || cfg.Listen == "" {
		return func() error { return nil }, nil
	}
	return process.ServeAPI(ctx, cfg, p, e.apiAddr, log)
}
