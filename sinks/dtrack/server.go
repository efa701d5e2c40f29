package dtrack

import (
	"fmt"
	"strconv"
	"strings"
)

// server is what the sink knows of the API server from its version: the
// release line and what that line does differently, as DEPENDENCY-TRACK.md
// says point by point.
type server struct {
	version string
	v5      bool // 5.x: new wordings, fine-grained permissions, no collectionLogic NONE
	// collections: collection projects (4.13.0).
	collections bool
	// spec17: JSON specVersion 1.7 accepted (4.14.4 on 4.x, 5.1 on 5.x).
	spec17 bool
	// isActive: the upload sets the project's active state (5.1).
	isActive bool
	// gzip: a multipart bom part labelled application/gzip is gunzipped
	// (5.1); elsewhere it would be read as the BOM itself.
	gzip bool
}

func serverOf(version string) server {
	return server{
		version:     version,
		v5:          versionAtLeast(version, "5.0.0"),
		collections: versionAtLeast(version, "4.13.0"),
		spec17:      versionAtLeast(version, "5.1.0") || (!versionAtLeast(version, "5.0.0") && versionAtLeast(version, "4.14.4")),
		isActive:    versionAtLeast(version, "5.1.0"),
		gzip:        versionAtLeast(version, "5.1.0"),
	}
}

// usable says why the configuration cannot work with srv, or nil.
func (s *Sink) usable(srv server) error {
	switch {
	case !versionAtLeast(srv.version, MinVersion):
		return fmt.Errorf("Dependency-Track %s at %s is older than %s, the oldest version this sink supports: upgrade it", srv.version, s.cfg.URL, MinVersion)
	case s.spec == "1.7" && !srv.spec17:
		return fmt.Errorf("Dependency-Track %s at %s does not accept CycloneDX 1.7 (4.14.4 and 5.1 are the first that do): set specVersion: \"1.6\" for this sink, or upgrade", srv.version, s.cfg.URL)
	case s.cfg.Parents == ParentsCollection && !srv.collections:
		return fmt.Errorf("parents: collection needs collection projects, which came with Dependency-Track 4.13.0; %s at %s has none: set parents: plain, or upgrade", srv.version, s.cfg.URL)
	}
	return nil
}

// features names what the sink uses of srv, for the log and `sink check`.
func (srv server) features(cfg Config, spec string) []string {
	line := "4.x"
	if srv.v5 {
		line = "5.x"
	}
	out := []string{"line " + line, "CycloneDX " + cmpOr(spec, "1.6")}
	if cfg.hierarchy() {
		out = append(out, "parents "+cfg.parents())
	}
	if srv.isActive {
		out = append(out, "isActive on upload")
	} else {
		out = append(out, "reactivation by PATCH")
	}
	if srv.gzip && cfg.CompressAbove >= 0 {
		out = append(out, fmt.Sprintf("gzip above %d bytes", cfg.CompressAbove))
	}
	return append(out, "export tag "+exportTagPrefix+"<changeSeq>:<bomHash>")
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// versionAtLeast compares dotted versions ("4.13.6", "5.1.0-SNAPSHOT").
func versionAtLeast(v, min string) bool {
	parse := func(s string) [3]int {
		var out [3]int
		s, _, _ = strings.Cut(s, "-")
		for i, p := range strings.SplitN(s, ".", 3) {
			out[i], _ = strconv.Atoi(p)
		}
		return out
	}
	a, b := parse(v), parse(min)
	for i := range a {
		if a[i] != b[i] {
			return a[i] > b[i]
		}
	}
	return true
}
