//go:build !linux

package file

import (
	"os"
	"syscall"
)

// flushFS makes the writes durable where syncfs(2) does not exist: sync(2)
// on Unix systems, which flushes every file system.
func flushFS(d *os.File) error {
	syscall.Sync()
	return d.Sync()
}
