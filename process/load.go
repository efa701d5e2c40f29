package process

import (
	"context"
	"fmt"
	"io"
	"runtime/debug"
	"time"

	"go.uber.org/zap/zapcore"

	"github.com/bomstream/bomstream/schemas"
	"github.com/bomstream/bomstream/sinks"
	"github.com/bomstream/bomstream/transformer"
)

// Version is the module version stamped by the Go toolchain, or "dev" for
// a build from a work tree.
func Version() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "dev"
}

// DefaultConfig is the embedded default: data in ./bomstream-data, BOMs as
// files in ./boms.
func DefaultConfig() Config { return defaultConfig() }

// Load is the configuration before the flags: the defaults, then the file
// (when named), then the BOMSTREAM_* variables getenv sets.
func Load(file string, getenv func(string) string) (Config, error) {
	cfg := defaultConfig()
	if file != "" {
		if err := loadConfigFile(&cfg, file); err != nil {
			return cfg, err
		}
	}
	if err := applyEnv(&cfg, getenv); err != nil {
		return cfg, err
	}
	return cfg, nil
}

// RendererConfig is the transformer's configuration of c.
func RendererConfig(c Config) transformer.Config { return c.rendererConfig() }

// CheckSink runs the preflight checks of the configured sink named name
// once (bomstream sink check) and prints them to out: can it reach its
// store, does it hold the permissions it needs. It opens no stream and
// touches no data directory.
func CheckSink(ctx context.Context, env Env, cfg Config, name string, out io.Writer) error {
	cfg = withDefaultSinks(cfg)
	if err := cfg.Validate(env.Sinks); err != nil {
		return fmt.Errorf("invalid configuration:\n%w", err)
	}
	sel, err := selectSinks(cfg.Sinks, []string{name})
	if err != nil {
		return err
	}
	sc := sel[0]
	scfg, err := env.Sinks.Decode(sc.Type, sc.Config)
	if err != nil {
		return fmt.Errorf("sinks %s: %w", sc.Name, err)
	}
	log := NewLogger(cfg.Log, zapcore.Lock(zapcore.AddSync(env.Stderr)))
	s, err := env.Sinks.New(ctx, sc.Type, sc.Name, scfg, sinks.Deps{Log: log, Getenv: env.Getenv, SpecVersion: sc.SpecVersion})
	if err != nil {
		return err
	}
	defer s.Close()
	checker, ok := s.(sinks.Checker)
	if !ok {
		fmt.Fprintf(out, "sink %s (%s) has no checks\n", sc.Name, sc.Type)
		return nil
	}
	cctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	failed := 0
	for _, ch := range checker.Check(cctx) {
		if ch.Err != nil {
			failed++
			fmt.Fprintf(out, "FAIL  %s: %s\n", ch.Name, schemas.RedactText(ch.Err.Error()))
		} else {
			fmt.Fprintf(out, "ok    %s\n", ch.Name)
		}
	}
	if failed > 0 {
		return fmt.Errorf("sink %s: %d checks failed", sc.Name, failed)
	}
	return nil
}
