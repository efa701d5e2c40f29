//go:build unix

package file

import (
	"errors"
	"io/fs"
	"syscall"
)

// The sink writes small files at a high rate, so it writes them with plain
// system calls: an *os.File would add a non-blocking mode change and a
// poller registration (two more calls) and a cleanup to every file.

// writeFile writes data to a file opened at path with flags (O_WRONLY and
// O_CLOEXEC are added), mode 0644. Errors are *fs.PathError, so
// errors.Is(err, fs.ErrExist) and fs.ErrNotExist work as with os.
func writeFile(path string, flags int, data []byte) error {
	fd, err := open(path, flags|syscall.O_WRONLY|syscall.O_CLOEXEC)
	if err != nil {
		return &fs.PathError{Op: "open", Path: path, Err: err}
	}
	for len(data) > 0 && err == nil {
		var n int
		n, err = syscall.Write(fd, data)
		switch {
		case errors.Is(err, syscall.EINTR):
			err = nil
		case err == nil && n == 0:
			err = syscall.EIO
		case err == nil:
			data = data[n:]
		}
	}
	if cerr := syscall.Close(fd); err == nil && cerr != nil && !errors.Is(cerr, syscall.EINTR) {
		err = cerr
	}
	if err != nil {
		return &fs.PathError{Op: "write", Path: path, Err: err}
	}
	return nil
}

func open(path string, flags int) (int, error) {
	for {
		fd, err := syscall.Open(path, flags, 0o644)
		if !errors.Is(err, syscall.EINTR) {
			return fd, err
		}
	}
}

// createNew writes a new file at path; fs.ErrExist if there is one.
func createNew(path string, data []byte) error {
	return writeFile(path, syscall.O_CREAT|syscall.O_EXCL, data)
}
