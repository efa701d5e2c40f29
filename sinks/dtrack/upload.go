package dtrack

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"slices"
	"strconv"
	"strings"

	dtrack "github.com/DependencyTrack/client-go"
	"github.com/google/uuid"
	"github.com/klauspost/compress/gzip"

	"github.com/bomstream/bomstream/sinks"
)

// exportTagPrefix starts the tag that records, on the project, the version
// of the workload the sink last uploaded there:
// "bomstream-export:<changeSeq>:<hex of the bomHash>". It goes with the
// upload's projectTags, which Dependency-Track binds when it accepts the
// upload (before it validates and imports the BOM), so that a process that
// dies between the upload and its ledger write finds, on restart, that the
// BOM it is about to upload is already there and uploads nothing.
const exportTagPrefix = "bomstream-export:"

// exportTag is the tag recording b as uploaded.
func exportTag(b sinks.BOM) string {
	return exportTagPrefix + strconv.FormatUint(b.ChangeSeq, 10) + ":" + strings.TrimPrefix(b.BomHash, "sha256:")
}

// exported reads the export tag among tags: the bomHash it records, or "".
func exported(tags []dtrack.Tag) string {
	for _, t := range tags {
		if rest, ok := strings.CutPrefix(t.Name, exportTagPrefix); ok {
			if _, hex, ok := strings.Cut(rest, ":"); ok {
				return "sha256:" + hex
			}
		}
	}
	return ""
}

// withoutExportTag is tags less the export tag, as names.
func withoutExportTag(tags []dtrack.Tag) []string {
	var out []string
	for _, t := range tags {
		if !strings.HasPrefix(t.Name, exportTagPrefix) {
			out = append(out, t.Name)
		}
	}
	return out
}

// uploadBody is PUT /api/v1/bom's body: client-go's request lacks isActive
// (5.1), so the sink writes it. isLatestProjectVersion is the name every
// line from 4.12 reads (4.14 and 5.x also take isLatest, as an alias).
type uploadBody struct {
	ProjectName    string       `json:"projectName"`
	ProjectVersion string       `json:"projectVersion"`
	ProjectTags    []dtrack.Tag `json:"projectTags"`
	AutoCreate     bool         `json:"autoCreate"`
	ParentUUID     *uuid.UUID   `json:"parentUUID,omitempty"`
	IsLatest       bool         `json:"isLatestProjectVersion"`
	IsActive       *bool        `json:"isActive,omitempty"`
	BOM            string       `json:"bom"`
}

// upload sends the BOM with PUT, or with multipart POST when its base64
// form is over PutLimit or it goes compressed, and returns the event
// token. A BOM over CompressAbove bytes goes gzip-compressed to a server
// that reads compressed parts (5.1), and never to another: 4.x and 5.0
// would take the gzip bytes for the BOM. The request carries the project's
// tags with the export tag, the parent and the latest flag (applied only
// when the upload creates the project: imported fixes the others), and on
// 5.1 isActive, which reactivates an existing project.
func (s *Sink) upload(ctx context.Context, t target, b sinks.BOM, parent *uuid.UUID) (string, error) {
	body := uploadBody{
		ProjectName: t.name, ProjectVersion: t.version, AutoCreate: s.cfg.autoCreate(),
		ProjectTags: s.tags(t, b), ParentUUID: parent, IsLatest: true,
	}
	srv := s.srv()
	if srv.isActive {
		active := true
		body.IsActive = &active
	}
	var out struct {
		Token string `json:"token"`
	}
	what := "upload bom"
	var err error
	switch {
	case srv.gzip && s.cfg.CompressAbove >= 0 && int64(len(b.Body)) > s.cfg.CompressAbove:
		what = "upload bom (multipart, gzip)"
		err = s.postMultipart(ctx, body, b.Body, true, &out)
		s.m.uploads.WithLabelValues("multipart-gzip").Inc()
	case base64.StdEncoding.EncodedLen(len(b.Body)) <= PutLimit:
		body.BOM = base64.StdEncoding.EncodeToString(b.Body)
		_, err = s.call(ctx, http.MethodPut, "/api/v1/bom", body, &out)
		s.m.uploads.WithLabelValues("put").Inc()
	default:
		what = "upload bom (multipart)"
		err = s.postMultipart(ctx, body, b.Body, false, &out)
		s.m.uploads.WithLabelValues("multipart").Inc()
	}
	if err != nil {
		return "", s.uploadError(err, what, t)
	}
	if out.Token == "" {
		return "", fmt.Errorf("%s: Dependency-Track answered without a token", what)
	}
	return out.Token, nil
}

// tags are the workload project's tags for b: the target's, the runtimes
// the BOM names, and the export tag.
func (s *Sink) tags(t target, b sinks.BOM) []dtrack.Tag {
	all := slices.Concat(t.tags, runtimes(b.Body), []string{exportTag(b)})
	return normalizeTags(all)
}

// postMultipart is POST /api/v1/bom: the same fields as form fields (the
// latest flag is "isLatest" there, tags one comma-separated field), and the
// BOM as a file part: raw, or gzip-compressed with the part's Content-Type
// application/gzip, the one header 5.1 decompresses by.
func (s *Sink) postMultipart(ctx context.Context, body uploadBody, bom []byte, gz bool, out any) error {
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	names := make([]string, len(body.ProjectTags))
	for i, t := range body.ProjectTags {
		names[i] = t.Name
	}
	fields := [][2]string{
		{"projectName", body.ProjectName}, {"projectVersion", body.ProjectVersion},
		{"autoCreate", strconv.FormatBool(body.AutoCreate)}, {"isLatest", strconv.FormatBool(body.IsLatest)},
		{"projectTags", strings.Join(names, ",")},
	}
	if body.ParentUUID != nil {
		fields = append(fields, [2]string{"parentUUID", body.ParentUUID.String()})
	}
	if body.IsActive != nil {
		fields = append(fields, [2]string{"isActive", strconv.FormatBool(*body.IsActive)})
	}
	for _, f := range fields {
		if err := mw.WriteField(f[0], f[1]); err != nil {
			return err
		}
	}
	if err := writeBOMPart(mw, bom, gz); err != nil {
		return err
	}
	if err := mw.Close(); err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimSuffix(s.cfg.URL, "/")+"/api/v1/bom", &buf)
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", mw.FormDataContentType())
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", userAgent)
	_, err = s.send(req, out)
	return err
}

// writeBOMPart adds the bom file part to mw, gzip-compressed when gz.
func writeBOMPart(mw *multipart.Writer, bom []byte, gz bool) error {
	if !gz {
		fw, err := mw.CreateFormFile("bom", "bom.json")
		if err == nil {
			_, err = fw.Write(bom)
		}
		return err
	}
	h := textproto.MIMEHeader{}
	h.Set("Content-Disposition", `form-data; name="bom"; filename="bom.json.gz"`)
	h.Set("Content-Type", "application/gzip")
	fw, err := mw.CreatePart(h)
	if err != nil {
		return err
	}
	zw := gzip.NewWriter(fw)
	if _, err := zw.Write(bom); err != nil {
		return err
	}
	return zw.Close()
}

// errParent marks an upload refused because of its parent: missing
// (deleted behind the sink's back) or inactive. The caller repairs the
// parents and uploads once more.
type errParent struct{ err error }

func (e errParent) Error() string { return e.err.Error() }
func (e errParent) Unwrap() error { return e.err }

// uploadError classifies a refused upload, recognising the wording of
// every line it acts on.
func (s *Sink) uploadError(err error, what string, t target) error {
	code, msg := apiStatus(err)
	switch {
	case code == http.StatusNotFound && msg == textProjectNotFound:
		return sinks.Permanent(fmt.Errorf("%s: the project does not exist and autoCreate is off (404 %q): create it in Dependency-Track, or set autoCreate: true", what, msg))
	case code == http.StatusNotFound && (msg == textParentNotFound4 || msg == textParentNotFound5),
		code == http.StatusBadRequest && isDetail(msg, textInactiveParent):
		return errParent{fmt.Errorf("%s: parent project: Dependency-Track answered %d %q", what, code, msg)}
	case code == http.StatusInternalServerError && msg == textUncaught && t.cluster.name != "":
		// 5.x answers an inactive parent so (no mapper for the
		// IllegalArgumentException); with a parent in the request, look.
		return errParent{fmt.Errorf("%s: Dependency-Track answered 500 %q, as 5.x does for an inactive parent", what, msg)}
	case code == http.StatusBadRequest && (msg == textCollection4 || msg == textCollection5):
		return sinks.Permanent(fmt.Errorf("%s: %s is a collection project, which takes no BOM (400 %q): name workload projects apart from the cluster and namespace projects, or make it a plain project", what, t, msg))
	}
	return classify(err, what, PermBOMUpload)
}
