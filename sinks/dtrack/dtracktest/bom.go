package dtracktest

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"slices"
	"sort"
	"strings"

	"github.com/klauspost/compress/zstd"
	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/bomstream/bomstream/schemas"
)

// uploadReq is a BOM upload, from either endpoint, after mapping.
type uploadReq struct {
	project        *string // UUID mode when non-nil
	projectName    *string
	projectVersion *string
	tags           []string // nil: no projectTags given
	autoCreate     bool
	parentUUID     *string
	parentName     *string
	parentVersion  *string
	isLatest       bool
	isActive       *bool // 5.1: sets the project's active state, also of an existing one
	multipart      bool
	encoding       string // the multipart bom part's Content-Type header, as sent
}

// bomSubmitFields are the properties of vo/BomSubmitRequest.java.
var bomSubmitFields = []string{"project", "projectName", "projectVersion", "projectTags", "autoCreate",
	"parentUUID", "parentName", "parentVersion", "isLatestProjectVersion", "bom"}

func (s *Server) knownSubmitField(field string) bool {
	switch field {
	case "projectTags", "isLatestProjectVersion":
		return s.feat.tags
	case "isLatest": // 4.14.0 and 5.x; isLatestProjectVersion is its alias
		return s.feat.isLatest
	case "isActive":
		return s.feat.isActive
	}
	return slices.Contains(bomSubmitFields, field)
}

// putBOM is PUT /api/v1/bom.
func (s *Server) putBOM(w http.ResponseWriter, r *http.Request) {
	perms := s.authorize(w, r, BOMUpload)
	if perms == nil {
		return
	}
	if !isMediaType(r, "application/json") {
		w.WriteHeader(http.StatusUnsupportedMediaType)
		return
	}
	data, err := io.ReadAll(r.Body)
	if err != nil {
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	body, ok := s.mapSubmit(w, data)
	if !ok {
		return
	}
	req := body.uploadReq()
	if vs := body.violations(req); len(vs) > 0 {
		writeViolations(w, vs...)
		return
	}
	content, err := base64.StdEncoding.DecodeString(*body.Bom)
	if err != nil {
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	s.upload(w, perms, req, content)
}

// submitBody is the JSON body of PUT /api/v1/bom (vo/BomSubmitRequest.java).
type submitBody struct {
	Project, ProjectName, ProjectVersion  *string
	ProjectTags                           []tagJSON
	AutoCreate, IsLatestProjectVersion    bool
	ParentUUID, ParentName, ParentVersion *string
	IsActive                              *bool
	Bom                                   *string
}

// mapSubmit maps data onto a submitBody as the API server's JSON mapper
// does: unknown fields, a base64 BOM over PutLimit and a missing bom are
// refused before any value is read, then the fields are read in key order.
// It answers the 400 itself and reports false on failure.
func (s *Server) mapSubmit(w http.ResponseWriter, data []byte) (submitBody, bool) {
	var body submitBody
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		writeMappingProblem(w, err.Error())
		return body, false
	}
	keys := make([]string, 0, len(raw))
	for k := range raw {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v := raw[k]
		if !s.knownSubmitField(k) {
			writeMappingProblem(w, fmt.Sprintf(`Unrecognized field %q (class org.dependencytrack.resources.v1.vo.BomSubmitRequest), not marked as ignorable`, k))
			return body, false
		}
		if k == "bom" && len(v) > PutLimit+2 && v[0] == '"' {
			var bom string
			if err := json.Unmarshal(v, &bom); err == nil && len(bom) > PutLimit {
				writeMappingProblem(w, fmt.Sprintf(`The BOM is too large to be transmitted safely via Base64 encoded JSON value. Please use the "POST /api/v1/bom" endpoint with Content-Type "multipart/form-data" instead. Original cause: String value length (%d) exceeds the maximum allowed (%d, from `+"`StreamReadConstraints.getMaxStringLength()`"+`) (through reference chain: org.dependencytrack.resources.v1.vo.BomSubmitRequest["bom"])`, len(bom), PutLimit))
				return body, false
			}
		}
	}
	if _, ok := raw["bom"]; !ok {
		writeMappingProblem(w, "Missing required creator property 'bom' (index 9)")
		return body, false
	}
	fields := map[string]any{
		"project": &body.Project, "projectName": &body.ProjectName, "projectVersion": &body.ProjectVersion,
		"projectTags": &body.ProjectTags, "autoCreate": &body.AutoCreate, "parentUUID": &body.ParentUUID,
		"parentName": &body.ParentName, "parentVersion": &body.ParentVersion,
		"isLatestProjectVersion": &body.IsLatestProjectVersion, "bom": &body.Bom,
		"isLatest": &body.IsLatestProjectVersion, "isActive": &body.IsActive,
	}
	for _, k := range keys {
		if err := json.Unmarshal(raw[k], fields[k]); err != nil {
			writeMappingProblem(w, fmt.Sprintf("%s (through reference chain: org.dependencytrack.resources.v1.vo.BomSubmitRequest[%q])", err, k))
			return body, false
		}
	}
	return body, true
}

// uploadReq is the upload the body asks for.
func (body submitBody) uploadReq() uploadReq {
	req := uploadReq{
		project: body.Project, projectName: trimmed(body.ProjectName), projectVersion: trimmed(body.ProjectVersion),
		autoCreate: body.AutoCreate, parentUUID: body.ParentUUID, parentName: trimmed(body.ParentName),
		parentVersion: trimmed(body.ParentVersion), isLatest: body.IsLatestProjectVersion, isActive: body.IsActive,
	}
	if body.ProjectTags != nil {
		req.tags = []string{}
		for _, t := range body.ProjectTags {
			req.tags = append(req.tags, t.Name)
		}
	}
	return req
}

// violations is the bean validation of the body, property by property, in
// the resource's order.
func (body submitBody) violations(req uploadReq) []violation {
	var vs []violation
	if req.project != nil {
		if !isUUID(*req.project) {
			vs = append(vs, violation{Message: "The project must be a valid 36 character UUID", Template: "The project must be a valid 36 character UUID", Path: "project", Value: req.project})
		}
	} else {
		vs = append(vs, notBlank("projectName", req.projectName)...)
		vs = append(vs, notBlank("projectVersion", req.projectVersion)...)
	}
	switch {
	case body.Bom == nil:
		vs = append(vs, violation{Message: "must not be null", Template: "{jakarta.validation.constraints.NotNull.message}", Path: "bom"})
	case !isPaddedBase64(*body.Bom):
		vs = append(vs, violation{Message: "The BOM must be Base64 encoded", Template: "The BOM must be Base64 encoded", Path: "bom", Value: body.Bom})
	}
	return vs
}

// postBOM is POST /api/v1/bom (multipart/form-data).
func (s *Server) postBOM(w http.ResponseWriter, r *http.Request) {
	perms := s.authorize(w, r, BOMUpload)
	if perms == nil {
		return
	}
	mt, params, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || mt != "multipart/form-data" || params["boundary"] == "" {
		w.WriteHeader(http.StatusUnsupportedMediaType)
		return
	}
	mr := multipart.NewReader(r.Body, params["boundary"])
	fields := map[string]string{}
	var boms [][]byte
	encoding := ""
	for {
		part, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		b, err := io.ReadAll(part)
		if err != nil {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		if name := part.FormName(); name == "bom" {
			if len(boms) == 0 {
				encoding = part.Header.Get("Content-Type")
			}
			boms = append(boms, b)
		} else if _, seen := fields[name]; !seen {
			fields[name] = string(b)
		}
	}
	field := func(k string) *string {
		if v, ok := fields[k]; ok {
			return &v
		}
		return nil
	}
	req := uploadReq{
		project: field("project"), projectName: trimmed(field("projectName")),
		projectVersion: trimmed(field("projectVersion")), autoCreate: fields["autoCreate"] == "true",
		parentUUID: field("parentUUID"), parentName: trimmed(field("parentName")),
		parentVersion: trimmed(field("parentVersion")), isLatest: fields["isLatest"] == "true", multipart: true,
		encoding: encoding,
	}
	if v, ok := fields["isActive"]; ok && s.feat.isActive {
		active := v == "true"
		req.isActive = &active
	}
	if v := strings.TrimSpace(fields["projectTags"]); v != "" {
		for t := range strings.SplitSeq(v, ",") {
			if t = strings.TrimSpace(t); t != "" {
				req.tags = append(req.tags, t)
			}
		}
	}
	if len(boms) == 0 && s.feat.v5 {
		writeText(w, http.StatusBadRequest, "No BOM file provided.")
		return
	}
	if len(boms) == 0 {
		// The resource loops over the bom parts; with none it answers an
		// empty 200 after resolving (and maybe creating) the project.
		s.upload(w, perms, req, nil)
		return
	}
	s.upload(w, perms, req, boms[0])
}

// upload resolves (or creates) the project and processes content, the
// common part of both endpoints. content nil means "no bom part".
func (s *Server) upload(w http.ResponseWriter, perms map[string]bool, req uploadReq, content []byte) {
	s.mu.Lock()
	p, fail := s.uploadProject(perms, req)
	switch {
	case fail != nil:
		s.mu.Unlock()
		fail(w)
		return
	case p == nil:
		s.mu.Unlock()
		writeText(w, http.StatusNotFound, "The project could not be found.")
		return
	case content == nil:
		s.mu.Unlock()
		w.WriteHeader(http.StatusOK)
		return
	case p.CollectionLogic != CollectionNone && s.feat.v5:
		s.mu.Unlock()
		writeText(w, http.StatusBadRequest, "BOM cannot be uploaded to a collection project.")
		return
	case p.CollectionLogic != CollectionNone:
		s.mu.Unlock()
		writeText(w, http.StatusBadRequest, "BOM cannot be uploaded to collection project.")
		return
	}
	// maybeBindTags: request tags replace the project's, but changing them
	// needs PORTFOLIO_MANAGEMENT (5.x: or PORTFOLIO_MANAGEMENT_UPDATE);
	// without it they are left alone.
	if req.tags != nil {
		tags := normalizeTags(req.tags)
		if !slices.Equal(tags, p.Tags) && anyOf(perms, s.manage("update")...) {
			p.Tags = tags
		}
	}
	if req.isActive != nil && *req.isActive != p.Active {
		s.setActive(p, *req.isActive)
	}
	rules := make([]RejectFunc, 0, len(s.rejects))
	for _, f := range s.rejects {
		rules = append(rules, f)
	}
	s.mu.Unlock()

	content, err := s.decode(req.encoding, content)
	if err != nil {
		// An IOException reading the part: logged, 500 with no body.
		w.WriteHeader(http.StatusInternalServerError)
		return
	}
	if pr := s.validate(content, rules); pr != nil {
		writeProblem(w, *pr)
		return
	}
	token := newUUID()
	if s.feat.v5 {
		token = newUUIDv7()
	}
	s.mu.Lock()
	if s.projects[p.UUID] != p { // deleted meanwhile
		s.mu.Unlock()
		writeText(w, http.StatusNotFound, "The project could not be found.")
		return
	}
	s.enqueue(p.UUID, job{token: token, content: content})
	s.uploads[schemas.BomHash(content)]++
	s.mu.Unlock()
	if s.feat.v5 {
		writeJSON(w, http.StatusOK, map[string]string{"token": token, "projectUuid": p.UUID})
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"token": token})
}

// uploadProject resolves the project of an upload, creating it when asked
// and allowed; nil when there is none. A refusal comes back as fail, which
// answers it once s.mu is released. s.mu is held.
func (s *Server) uploadProject(perms map[string]bool, req uploadReq) (p *project, fail func(http.ResponseWriter)) {
	if req.project != nil {
		return s.projects[*req.project], nil
	}
	p = s.byName(str(req.projectName), str(req.projectVersion))
	if p != nil || !req.autoCreate {
		return p, nil
	}
	if !s.mayCreate(perms) {
		return nil, func(w http.ResponseWriter) {
			writeText(w, http.StatusUnauthorized, "The principal does not have permission to create project.")
		}
	}
	var parent *project
	if req.parentUUID != nil || req.parentName != nil {
		if parent, fail = s.uploadParent(req); fail != nil {
			return nil, fail
		}
	}
	p = &project{
		UUID: newUUID(), Name: str(req.projectName), Version: str(req.projectVersion),
		Classifier: "APPLICATION", Tags: normalizeTags(req.tags), Active: true, IsLatest: req.isLatest,
		CollectionLogic: CollectionNone,
	}
	if parent != nil {
		p.Parent = parent.UUID
	}
	if req.isActive != nil && !*req.isActive {
		s.setActive(p, false)
	}
	// Committed here, before the BOM is validated.
	s.add(p)
	return p, nil
}

// uploadParent resolves the parent an upload names for the project it
// creates: it must exist and be active. s.mu is held.
func (s *Server) uploadParent(req uploadReq) (*project, func(http.ResponseWriter)) {
	var parent *project
	if req.parentUUID != nil {
		if !req.multipart && !isUUID(*req.parentUUID) {
			return nil, func(w http.ResponseWriter) {
				writeViolations(w, violation{Message: "The parent UUID must be a valid 36 character UUID", Template: "The parent UUID must be a valid 36 character UUID", Path: "parentUUID", Value: req.parentUUID})
			}
		}
		parent = s.projects[*req.parentUUID]
	} else {
		parent = s.byName(str(req.parentName), str(req.parentVersion))
	}
	if parent == nil {
		text := "The parent component could not be found."
		if s.feat.v5 {
			text = "The parent project could not be found."
		}
		return nil, func(w http.ResponseWriter) { writeText(w, http.StatusNotFound, text) }
	}
	if !parent.Active && s.feat.v5 {
		// ProjectQueryManager.createProject throws IllegalArgumentException,
		// which 5.x maps nowhere: Alpine's GlobalExceptionHandler answers.
		return nil, func(w http.ResponseWriter) {
			writeText(w, http.StatusInternalServerError, "Uncaught internal server error")
		}
	}
	if !parent.Active {
		return nil, func(w http.ResponseWriter) {
			writeProblem(w, problem{Status: http.StatusBadRequest, Title: "Illegal argument provided", Detail: "An inactive Parent cannot be selected as parent"})
		}
	}
	return parent, nil
}

// validate is CycloneDxValidator.validate plus the test's reject rules; it
// returns the 400 problem, or nil.
func (s *Server) validate(content []byte, rules []RejectFunc) *problem {
	invalid := func(detail string, errs []string) *problem {
		return &problem{Status: http.StatusBadRequest, Title: "The uploaded BOM is invalid", Detail: detail, Errors: errs}
	}
	if s.opts.DisableValidation {
		return nil
	}
	var head struct {
		SpecVersion *string `json:"specVersion"`
	}
	dec := json.NewDecoder(bytes.NewReader(content))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return invalid("BOM is neither valid JSON nor XML", nil)
	}
	if err := json.Unmarshal(content, &head); err != nil {
		return invalid("BOM is neither valid JSON nor XML", nil)
	}
	if head.SpecVersion == nil {
		return invalid("Unable to determine schema version from JSON", nil)
	}
	switch v := *head.SpecVersion; v {
	case "1.0", "1.1":
		return invalid("JSON is not supported for specVersion "+v, nil)
	case "1.2", "1.3", "1.4", "1.5":
		// Accepted; the double holds only the 1.6 schema.
	case "1.6":
		if !s.feat.spec16 {
			return invalid("Unrecognized specVersion 1.6", nil)
		}
		if err := s.validator.ValidateBOM(content); err != nil {
			return invalid("Schema validation failed", schemaErrors(err))
		}
	case "1.7":
		if !s.feat.spec17 {
			return invalid("Unrecognized specVersion 1.7", nil)
		}
		val, err := s.v17()
		if err != nil {
			return &problem{Status: http.StatusInternalServerError, Title: "dtracktest: no CycloneDX 1.7 schema", Detail: err.Error()}
		}
		if err := val.ValidateBOM(content); err != nil {
			return invalid("Schema validation failed", schemaErrors(err))
		}
	default:
		return invalid("Unrecognized specVersion "+v, nil)
	}
	for _, f := range rules {
		if errs := f(content); len(errs) > 0 {
			return invalid("Schema validation failed", errs)
		}
	}
	return nil
}

// schemaErrors lists the leaf errors of a schema validation failure as
// "<json path>: <message>", the way the API server's validator prints them
// ("$.components[0].type: does not have a value in the enumeration [...]").
func schemaErrors(err error) []string {
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return []string{"$: " + err.Error()}
	}
	var out []string
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) == 0 {
			msg := "invalid"
			if o := e.BasicOutput(); o.Error != nil {
				msg = o.Error.String()
			}
			line := jsonPath(e.InstanceLocation) + ": " + msg
			if !slices.Contains(out, line) {
				out = append(out, line)
			}
			return
		}
		for _, c := range e.Causes {
			walk(c)
		}
	}
	walk(ve)
	return out
}

func jsonPath(loc []string) string {
	var b strings.Builder
	b.WriteString("$")
	for _, t := range loc {
		if t != "" && strings.Trim(t, "0123456789") == "" {
			b.WriteString("[" + t + "]")
		} else {
			b.WriteString("." + t)
		}
	}
	return b.String()
}

// isPaddedBase64 matches BomSubmitRequest's pattern
// ^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$ without
// a regular expression over 20 MB.
func isPaddedBase64(s string) bool {
	if len(s)%4 != 0 {
		return false
	}
	pad := len(s) - len(strings.TrimRight(s, "="))
	if pad > 2 {
		return false
	}
	for i := 0; i < len(s)-pad; i++ {
		c := s[i]
		if !('A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '+' || c == '/') {
			return false
		}
	}
	return true
}

// decode reads a multipart bom part as BomResource.uploadBom does on 5.1
// (main): by the part's Content-Type header compared as a whole string,
// "application/gzip" and "application/x-gzip" are gunzipped,
// "application/zstd" and "application/x-zstd" zstd-decoded, anything else
// (a parameter included) taken as it is. A part that does not decode is an
// IOException, which the caller answers 500. The other lines, and PUT,
// take the bytes as they are: a compressed part is then not a BOM, and
// validation refuses it ("BOM is neither valid JSON nor XML").
func (s *Server) decode(encoding string, b []byte) ([]byte, error) {
	if !s.feat.compressed {
		return b, nil
	}
	switch encoding {
	case "application/gzip", "application/x-gzip":
		zr, err := gzip.NewReader(bytes.NewReader(b))
		if err != nil {
			return nil, err
		}
		return io.ReadAll(io.LimitReader(zr, 1<<30))
	case "application/zstd", "application/x-zstd":
		zr, err := zstd.NewReader(bytes.NewReader(b))
		if err != nil {
			return nil, err
		}
		defer zr.Close()
		return io.ReadAll(io.LimitReader(zr, 1<<30))
	}
	return b, nil
}

// trimmed is TrimmedStringDeserializer: surrounding blanks go.
func trimmed(p *string) *string {
	if p == nil {
		return nil
	}
	v := strings.TrimSpace(*p)
	return &v
}
