package manifest

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strconv"
	"syscall"
)

// Defaults of Limits.
const (
	DefaultMaxFileBytes = 16 << 20
	DefaultMaxDocuments = 10000
)

// Limits bounds what Read takes in from one file. The zero value is usable:
// a zero field takes its default.
type Limits struct {
	// MaxFileBytes is the largest file read; a larger one is skipped unread.
	// Default DefaultMaxFileBytes (16 MiB).
	MaxFileBytes int64
	// MaxDocuments is the number of YAML documents read from one file; the
	// documents after it are skipped. Default DefaultMaxDocuments.
	MaxDocuments int
}

// Validate reports every negative field.
func (l Limits) Validate() error {
	var errs []error
	if l.MaxFileBytes < 0 {
		errs = append(errs, fmt.Errorf("MaxFileBytes: %d is negative", l.MaxFileBytes))
	}
	if l.MaxDocuments < 0 {
		errs = append(errs, fmt.Errorf("MaxDocuments: %d is negative", l.MaxDocuments))
	}
	return errors.Join(errs...)
}

func (l Limits) withDefaults() Limits {
	if l.MaxFileBytes <= 0 {
		l.MaxFileBytes = DefaultMaxFileBytes
	}
	if l.MaxDocuments <= 0 {
		l.MaxDocuments = DefaultMaxDocuments
	}
	return l
}

// Skip is a file, or the rest of one, that Read left out on purpose.
type Skip struct {
	File string
	// Line is where reading stopped in a file read in part; 0 when the
	// whole file was skipped.
	Line   int
	Reason string
	// Unread says the file may hold objects that were not read (it is too
	// large, or has too many documents), as opposed to a file that holds no
	// manifest at all (a named pipe, a device).
	Unread bool
}

func (s Skip) String() string {
	if s.Line > 0 {
		return s.File + ":" + strconv.Itoa(s.Line) + ": " + s.Reason
	}
	return s.File + ": " + s.Reason
}

// errTooLarge: a file grew past the limit while it was read.
var errTooLarge = errors.New("larger than the limit")

// load returns the bytes of the regular file path, or why it is skipped.
// What path is, is decided before it is opened (a named pipe opened for
// reading blocks until a writer comes, a device may have side effects), and
// checked again on the opened file, which is opened non-blocking so that a
// regular file replaced by a pipe in between cannot block either. The read
// goes through a limit, so a file that grows meanwhile cannot exceed it.
func load(path string, maxBytes int64) ([]byte, *Skip, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, nil, err
	}
	if skip := irregular(path, fi); skip != nil {
		return nil, skip, nil
	}
	if skip := oversized(path, fi.Size(), maxBytes); skip != nil {
		return nil, skip, nil
	}
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	ofi, err := f.Stat()
	if err != nil {
		return nil, nil, err
	}
	if skip := irregular(path, ofi); skip != nil {
		return nil, skip, nil
	}
	if skip := oversized(path, ofi.Size(), maxBytes); skip != nil {
		return nil, skip, nil
	}
	data, err := readAtMost(f, ofi.Size(), maxBytes)
	if errors.Is(err, errTooLarge) {
		return nil, &Skip{File: path, Unread: true, Reason: "grew over the limit of " + size(maxBytes) + " while it was read; not read"}, nil
	}
	return data, nil, err
}

// irregular returns the skip of a path that is not a regular file.
func irregular(path string, fi fs.FileInfo) *Skip {
	if fi.Mode().IsRegular() {
		return nil
	}
	what := kind(fi.Mode())
	if target, err := os.Readlink(path); err == nil {
		what = "symlink to " + target + ", " + what
	}
	return &Skip{File: path, Reason: "not a regular file (" + what + "); not read"}
}

func kind(m fs.FileMode) string {
	switch {
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a block device"
	case m.IsDir():
		return "a directory"
	}
	return "an irregular file"
}

func oversized(path string, n, maxBytes int64) *Skip {
	if n <= maxBytes {
		return nil
	}
	return &Skip{File: path, Unread: true, Reason: "is " + strconv.FormatInt(n, 10) + " bytes, over the limit of " + size(maxBytes) + "; not read"}
}

// size writes a limit as it is usually given: "16 MiB", "64 KiB", "100 bytes".
func size(n int64) string {
	switch {
	case n > 0 && n%(1<<20) == 0:
		return strconv.FormatInt(n>>20, 10) + " MiB"
	case n > 0 && n%(1<<10) == 0:
		return strconv.FormatInt(n>>10, 10) + " KiB"
	}
	return strconv.FormatInt(n, 10) + " bytes"
}

// readAtMost reads r to its end, or fails with errTooLarge as soon as it has
// read more than maxBytes. hint is the expected size.
func readAtMost(r io.Reader, hint, maxBytes int64) ([]byte, error) {
	buf := make([]byte, 0, min(max(hint, 0), maxBytes)+1)
	lr := io.LimitReader(r, maxBytes+1)
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := lr.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if int64(len(buf)) > maxBytes {
			return buf, errTooLarge
		}
		if errors.Is(err, io.EOF) {
			return buf, nil
		}
		if err != nil {
			return buf, err
		}
	}
}
