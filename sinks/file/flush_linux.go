package file

import (
	"os"

	"golang.org/x/sys/unix"
)

// flushFS writes every dirty file and directory entry of the file system
// that holds d to disk: one syncfs(2) for a whole batch of exports.
func flushFS(d *os.File) error {
	return unix.Syncfs(int(d.Fd()))
}
