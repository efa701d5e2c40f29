//go:build !linux

package process

import "errors"

// releaseStartupPages is Linux only (see memory_linux.go).
func releaseStartupPages() (int, error) {
	return 0, errors.New("not supported on this system")
}
