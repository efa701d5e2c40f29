package inventory

import (
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/bomstream/bomstream/schemas/versions"
)

// Fields are the names of the query's fields, as `find` flags and API
// query parameters: the same names, the same meaning.
var Fields = []string{"at", "changed-since", "cluster", "digest", "image", "inferred-only", "kind", "model", "namespace", "runtime", "state", "unpinned"}

var hexDigits = regexp.MustCompile(`^(sha256:)?[0-9a-fA-F]{12,64}$`)

// ParseQuery reads a query from field names to values (URL query
// parameters; find's flags). now is the time durations count back from
// (at=72h). The error names the field and the value at fault.
func ParseQuery(fields map[string][]string, now time.Time) (Query, error) {
	return ParseQueryWith(fields, now, nil)
}

// Extension reads the values of a field a caller adds to the query's own
// (findings=true): it sets up the query, typically its Check. The error
// names what is wrong with the values; ParseQueryWith adds the field.
type Extension func(values []string, q *Query) error

// ParseQueryWith is ParseQuery with extra fields, read after the query's
// own ones, in name order.
func ParseQueryWith(fields map[string][]string, now time.Time, ext map[string]Extension) (Query, error) {
	var q Query
	var errs []error
	var extra []string
	bad := func(field, v string, err error) {
		errs = append(errs, fmt.Errorf("%s %q: %w", field, v, err))
	}
	for _, f := range slices.Sorted(maps.Keys(fields)) {
		vals := fields[f]
		if _, ok := ext[f]; ok {
			extra = append(extra, f) // after the query's own fields
			continue
		}
		if !slices.Contains(Fields, f) {
			known := append(slices.Clone(Fields), slices.Collect(maps.Keys(ext))...)
			slices.Sort(known)
			errs = append(errs, fmt.Errorf("unknown field %q (known: %s)", f, strings.Join(known, ", ")))
			continue
		}
		for _, v := range vals {
			v = strings.TrimSpace(v)
			if err := q.set(f, v, now); err != nil {
				bad(f, v, err)
			}
		}
	}
	for _, f := range extra {
		if err := ext[f](fields[f], &q); err != nil {
			errs = append(errs, fmt.Errorf("%s %q: %w", f, strings.Join(fields[f], ","), err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return Query{}, fmt.Errorf("query: %w", err)
	}
	q.compile()
	return q, nil
}

// set reads one value of field f.
func (q *Query) set(f, v string, now time.Time) error {
	if v == "" && f != "unpinned" && f != "inferred-only" {
		return errors.New("empty")
	}
	var err error
	switch f {
	case "model":
		q.Models = append(q.Models, v)
	case "runtime":
		var r versions.Range
		if r, err = versions.ParseRange(v); err == nil {
			q.Runtimes = append(q.Runtimes, r)
		}
	case "digest":
		if !hexDigits.MatchString(v) {
			return errors.New("not a digest: sha256:<hex>, or at least 12 hex digits of one")
		}
		q.Digests = append(q.Digests, strings.ToLower(v))
	case "image":
		if err = validImage(v); err == nil {
			q.Images = append(q.Images, v)
		}
	case "cluster":
		q.Clusters = append(q.Clusters, v)
	case "namespace":
		q.Namespaces = append(q.Namespaces, v)
	case "kind":
		q.Kinds = append(q.Kinds, v)
	case "unpinned":
		q.Unpinned, err = parseBool(v)
	case "inferred-only":
		q.InferredOnly, err = parseBool(v)
	case "changed-since":
		q.ChangedSince, err = ParseTime(v, now)
	case "at":
		q.At, err = ParseTime(v, now)
	case "state":
		err = q.setState(v)
	}
	return err
}

func (q *Query) setState(v string) error {
	switch v {
	case StateServing, StateDeleted, StateNotServing:
		q.States = append(q.States, v)
	case "all":
		q.States = append(q.States, StateServing, StateDeleted, StateNotServing)
	case "gone":
		q.States = append(q.States, StateDeleted, StateNotServing)
	default:
		return errors.New("not serving, deleted, not-serving, gone (both) or all")
	}
	return nil
}

func parseBool(v string) (bool, error) {
	if v == "" {
		return true, nil
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return false, errors.New("not true or false")
	}
	return b, nil
}

// ParseTime reads a point in time as `get --at` does: RFC 3339, a date
// (2006-01-02, UTC), a time without zone (UTC), or a duration back from
// now (72h).
func ParseTime(s string, now time.Time) (time.Time, error) {
	if d, err := time.ParseDuration(s); err == nil {
		return now.Add(-d), nil
	}
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05", "2006-01-02"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t, nil
		}
	}
	return time.Time{}, errors.New("neither RFC 3339, a date, nor a duration such as 72h")
}
