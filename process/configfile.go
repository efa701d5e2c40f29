package process

import (
	"fmt"
	"os"

	"github.com/bomstream/bomstream/config"
)

// loadConfigFile merges a YAML file over c. config.Decode checks every key
// against the configuration's fields, so that an unknown key is reported
// with its path and line and the keys that would be known there
// (`line 3: stream.dataDri: unknown key (known here: dataDir, listen, ...)`),
// and a value of the wrong type with its path, instead of Go's type names.
func loadConfigFile(c *Config, path string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("config %s: %w", path, err)
	}
	if _, err := config.Decode(b, c); err != nil {
		return fmt.Errorf("config %s:\n%w", path, err)
	}
	return nil
}
