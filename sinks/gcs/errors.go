package gcs

import (
	"errors"
	"fmt"
	"net/http"

	"cloud.google.com/go/storage"
	"google.golang.org/api/googleapi"

	"github.com/bomstream/bomstream/sinks"
)

// op is what the sink was doing with an object, for the error text and the
// permission a 403 names.
type op int

const (
	opCreate  op = iota // create-only upload of an immutable object
	opReplace           // upload over an existing object (latest, tombstone)
	opRead              // object metadata read
	opDelete            // tombstone removal
)

func (o op) String() string {
	return [...]string{"create", "replace", "read", "delete"}[o]
}

// permission is the IAM permission the operation needs.
func (o op) permission() string {
	switch o {
	case opCreate:
		return "storage.objects.create"
	case opReplace:
		return "storage.objects.create and storage.objects.delete (replacing an object deletes its previous generation)"
	case opRead:
		return "storage.objects.get"
	default:
		return "storage.objects.delete"
	}
}

// grant is what to give the sink's identity on the bucket: the predefined
// role that holds every permission the sink uses.
const grant = "roles/storage.objectUser"

func isPrecondition(err error) bool {
	var ge *googleapi.Error
	return errors.As(err, &ge) && ge.Code == http.StatusPreconditionFailed
}

// classify turns an error of an operation on object name into the sink's
// error: permanent where retrying cannot help (credentials, permissions, a
// missing bucket, a rejected request), transient otherwise (429, 5xx,
// timeouts, connection errors). nil stays nil.
func (s *Sink) classify(err error, o op, name string) error {
	if err == nil {
		return nil
	}
	where := fmt.Sprintf("%s gs://%s/%s", o, s.bucket, name)
	if errors.Is(err, storage.ErrBucketNotExist) {
		return sinks.Permanent(fmt.Errorf("%s: bucket %s does not exist: %w", where, s.bucket, err))
	}
	var ge *googleapi.Error
	if !errors.As(err, &ge) {
		return fmt.Errorf("%s: %w", where, err)
	}
	msg := ge.Message
	if msg == "" {
		msg = http.StatusText(ge.Code)
	}
	switch c := ge.Code; {
	case c == http.StatusUnauthorized:
		return sinks.Permanent(fmt.Errorf("%s: credentials rejected (401 %s): check credentialsFile, GOOGLE_APPLICATION_CREDENTIALS or the workload identity binding: %w", where, msg, err))
	case c == http.StatusForbidden:
		return sinks.Permanent(fmt.Errorf("%s: permission denied (403 %s): the sink's identity needs %s on bucket %s (grant %s): %w", where, msg, o.permission(), s.bucket, grant, err))
	case c == http.StatusNotFound && o != opRead:
		return sinks.Permanent(fmt.Errorf("%s: bucket %s not found (404): create it or fix bucket: %w", where, s.bucket, err))
	case c == http.StatusRequestTimeout, c == http.StatusTooManyRequests, c == http.StatusConflict, c >= 500:
		return fmt.Errorf("%s: %d %s: %w", where, c, msg, err)
	case c >= 400:
		return sinks.Permanent(fmt.Errorf("%s: rejected (%d %s): %w", where, c, msg, err))
	}
	return fmt.Errorf("%s: %w", where, err)
}
