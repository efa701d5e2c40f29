package process

import (
	"runtime/debug"

	"github.com/bomstream/bomstream/config"
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
// (when named), then the BOMSTREAM_* variables of settings that have no
// flag (env; a flag's own variable sets the flag, [config.Env.SetFlags]).
func Load(file string, env config.Env) (Config, error) {
	cfg := defaultConfig()
	if file != "" {
		if err := loadConfigFile(&cfg, file); err != nil {
			return cfg, err
		}
	}
	if err := applyEnv(&cfg, env); err != nil {
		return cfg, err
	}
	return cfg, nil
}

// RendererConfig is the transformer's configuration of c.
func RendererConfig(c Config) transformer.Config { return c.rendererConfig() }
