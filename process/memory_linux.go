//go:build linux

package process

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// releaseStartupPages takes the pages of the executable out of this
// process's resident set and returns how many bytes of mappings it advised.
//
// Linux maps an executable's pages from the page cache in large folios
// (up to 2 MiB), so touching one function maps its neighbours too: after
// start nearly the whole binary counts as resident, most of it code that ran
// once. The executable's code mapping (r-x) is advised MADV_NOHUGEPAGE and
// MADV_RANDOM, so that what runs later is mapped back 64 KiB at a time (the
// kernel's fault-around) rather than 2 MiB, and MADV_DONTNEED, which unmaps
// its pages (they stay in the page cache, clean, for anyone to use or the
// kernel to reclaim); its pages cannot differ from the file, so nothing is
// lost. The read-only data mapping (r--) is left alone, like the writable
// data segment: advising it away crashed one run in four
// (TestReleaseStartupPages: a jump to address 0 in the garbage collector's
// mark termination) once the binary linked the Sigstore and KMS modules,
// where the code mapping alone never did in 40 runs.
func releaseStartupPages() (int, error) {
	exe, err := os.Readlink("/proc/self/exe")
	if err != nil {
		return 0, fmt.Errorf("executable: %w", err)
	}
	f, err := os.Open("/proc/self/maps")
	if err != nil {
		return 0, fmt.Errorf("mappings: %w", err)
	}
	defer f.Close()
	var (
		total int
		errs  []error
	)
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		start, end, ok := readOnlyMapping(sc.Text(), exe)
		if !ok {
			continue
		}
		for _, advice := range []int{unix.MADV_NOHUGEPAGE, unix.MADV_RANDOM, unix.MADV_DONTNEED} {
			if _, _, e := unix.Syscall(unix.SYS_MADVISE, start, end-start, uintptr(advice)); e != 0 {
				errs = append(errs, fmt.Errorf("madvise %x-%x: %w", start, end, e))
			}
		}
		total += int(end - start)
	}
	if err := sc.Err(); err != nil {
		errs = append(errs, fmt.Errorf("mappings: %w", err))
	}
	return total, errors.Join(errs...)
}

// readOnlyMapping parses one line of /proc/self/maps ("start-end perms
// offset dev inode path") and reports the range when it maps file path's
// code: readable and executable, not writable.
func readOnlyMapping(line, path string) (start, end uintptr, ok bool) {
	fields := strings.Fields(line)
	if len(fields) < 6 || strings.Join(fields[5:], " ") != path {
		return 0, 0, false
	}
	perms := fields[1]
	if len(perms) < 4 || perms[0] != 'r' || perms[1] == 'w' || perms[2] != 'x' {
		return 0, 0, false
	}
	lo, hi, found := strings.Cut(fields[0], "-")
	if !found {
		return 0, 0, false
	}
	s, err1 := strconv.ParseUint(lo, 16, 64)
	e, err2 := strconv.ParseUint(hi, 16, 64)
	if err1 != nil || err2 != nil || e <= s {
		return 0, 0, false
	}
	return uintptr(s), uintptr(e), true
}
