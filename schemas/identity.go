package schemas

import (
	"errors"
	"fmt"
	"strings"
)

// ErrInvalidWorkload is wrapped by Workload.Validate.
var ErrInvalidWorkload = errors.New("invalid workload identity")

// Validate checks a workload's identity before it becomes part of a subject
// (cluster and uid), a message id, or a path in a sink (namespace, kind,
// name). It is the one place these rules live; NewObserved calls it, and so
// does every source before it publishes a tombstone.
//
//   - cluster and uid: 1-128 characters of [A-Za-z0-9_-] (they are subject
//     tokens: no dots, no wildcards, no spaces);
//   - namespace: empty (cluster-scoped) or a DNS label (RFC 1123, at most 63);
//   - kind: a letter, then letters and digits, at most 63;
//   - apiVersion: "version" or "group/version", no spaces;
//   - name: 1-253 characters, not "." or "..", with no "/", "\", NUL,
//     whitespace or control characters (it names a directory).
func (w Workload) Validate() error {
	fail := func(field, format string, args ...any) error {
		return fmt.Errorf("%w %s: %s: %s", ErrInvalidWorkload, w.String(), field, fmt.Sprintf(format, args...))
	}
	if !token(w.Cluster, 128) {
		return fail("cluster", "%q is not 1-128 characters of [A-Za-z0-9_-]", w.Cluster)
	}
	if !token(w.UID, 128) {
		return fail("uid", "%q is not 1-128 characters of [A-Za-z0-9_-]", w.UID)
	}
	if w.Namespace != "" && !dnsLabel(w.Namespace) {
		return fail("namespace", "%q is not a DNS label", w.Namespace)
	}
	if !kindName(w.Kind) {
		return fail("kind", "%q is not a kind name", w.Kind)
	}
	if !apiVersion(w.APIVersion) {
		return fail("apiVersion", "%q is not VERSION or GROUP/VERSION", w.APIVersion)
	}
	if err := objectName(w.Name); err != "" {
		return fail("name", "%q %s", w.Name, err)
	}
	return nil
}

func token(s string, max int) bool {
	if s == "" || len(s) > max {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

func dnsLabel(s string) bool {
	if s == "" || len(s) > 63 || s[0] == '-' || s[len(s)-1] == '-' {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
			return false
		}
	}
	return true
}

func kindName(s string) bool {
	if s == "" || len(s) > 63 || !(s[0] >= 'a' && s[0] <= 'z' || s[0] >= 'A' && s[0] <= 'Z') {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

func apiVersion(s string) bool {
	if s == "" || len(s) > 253 || strings.Count(s, "/") > 1 || strings.HasPrefix(s, "/") || strings.HasSuffix(s, "/") {
		return false
	}
	for _, r := range s {
		if r <= ' ' || r == 0x7f {
			return false
		}
	}
	return true
}

func objectName(s string) string {
	switch {
	case s == "":
		return "is empty"
	case len(s) > 253:
		return "is longer than 253 characters"
	case s == "." || s == "..":
		return "is a path step"
	}
	for _, r := range s {
		if r == '/' || r == '\\' || r <= ' ' || r == 0x7f || r == 0x85 || r == 0xa0 || r == 0x2028 || r == 0x2029 {
			return fmt.Sprintf("contains %q", r)
		}
	}
	return ""
}
