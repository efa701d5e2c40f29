package transformer

import (
	"regexp"
	"strings"

	"github.com/bomstream/bomstream/schemas/imageref"
)

// modelClaim is one place a model is named.
type modelClaim struct {
	value     string
	hf        bool // the source only ever holds Hugging Face ids
	conf      string
	how       string // "flag --model", "env MODEL_ID", "positional", "field storageUri", "image"
	locator   string
	revision  string
	simulated string
	adapter   bool // a LoRA adapter
	// path is the local path the server loads the model from, when the
	// claim was linked to its source (an image volume, a download);
	// pathLocator is where the server is given it.
	path, pathLocator string
	// weak: the claim never makes a BOM on its own (an image volume no
	// argument names).
	weak bool
}

// Model location kinds.
const (
	locHF         = "huggingface"
	locPath       = "path"
	locName       = "name"
	locUnresolved = "unresolved"
	locNIMImage   = "nim-image"
	locImage      = "image" // baked into an image named after it
	locURL        = "url"
)

// hfCacheDir is a Hugging Face hub cache directory of a repository, maybe
// one of its snapshots.
var hfCacheDir = regexp.MustCompile(`(?:^|/)models--([^/]+?)--([^/]+?)(?:/snapshots/([0-9a-f]{40}))?(?:/|$)`)

var uriKinds = []struct{ prefix, kind string }{
	{"pvc://", "pvc"}, {"gs://", "gcs"}, {"s3://", "s3"}, {"oci://", "oci"},
	{"azureblob://", "azure"}, {"https://", locURL}, {"http://", locURL},
}

// classifyModel names a model value: a Hugging Face id ("org/name", hf://,
// huggingface://, huggingface.co URLs; bare names only when hf is set), a
// local path, a storage URI, an unresolved reference, or a bare name. rev
// is the revision a Hugging Face URI pins (hf://org/name:rev or @rev).
func classifyModel(v string, hf bool) (id, kind, rev string) {
	v = strings.TrimSpace(v)
	if unresolvedRef(v) {
		return v, locUnresolved, ""
	}
	v = withoutUserinfo(v)
	// lower is compared with lower-case prefixes, its ASCII letters
	// folded: it is strings.ToLower(v) but for them.
	lower := v
	if !isASCII(v) {
		lower = strings.ToLower(v)
	}
	if id, kind, rev, ok := classifyHFURI(v, lower); ok {
		return id, kind, rev
	}
	for _, u := range uriKinds {
		if foldedHasPrefix(lower, u.prefix) {
			return v, u.kind, ""
		}
	}
	if i := strings.Index(v, "://"); i > 0 {
		return v, strings.ToLower(v[:i]), ""
	}
	return classifyPathOrName(v, hf)
}

// classifyHFURI names a Hugging Face URI (hf://, huggingface://,
// huggingface.co URLs, hf:org/name); ok is false when v is none. lower is
// v with its ASCII letters lower-cased.
func classifyHFURI(v, lower string) (id, kind, rev string, ok bool) {
	for _, p := range []string{"hf://", "huggingface://", "https://huggingface.co/", "http://huggingface.co/", "huggingface.co/"} {
		if !foldedHasPrefix(lower, p) {
			continue
		}
		rest := strings.TrimSuffix(v[len(p):], ".git")
		parts := strings.SplitN(rest, "/", 3)
		if len(parts) >= 2 && strings.HasSuffix(p, "://") {
			// hf://org/name:rev, hf://org/name@rev[/path]
			if i := strings.IndexAny(parts[1], ":@"); i > 0 {
				parts[1], rev = parts[1][:i], parts[1][i+1:]
			}
		}
		if len(parts) >= 2 && hfPart(parts[0]) && hfPart(parts[1]) {
			return parts[0] + "/" + strings.TrimSuffix(parts[1], ".git"), locHF, rev, true
		}
		if len(parts) >= 1 && hfPart(parts[0]) && p == "hf://" {
			return parts[0], locHF, rev, true
		}
		return v, locURL, "", true
	}
	// hf:org/name, as DeepSparse's --model_path takes it.
	if len(v) > 3 && foldedHasPrefix(lower, "hf:") && !strings.HasPrefix(v[3:], "/") {
		if org, name, found := strings.Cut(v[3:], "/"); found && hfPart(org) && hfPart(name) {
			return v[3:], locHF, "", true
		}
	}
	return "", "", "", false
}

// classifyPathOrName names a value that is no URI: a local path (a Hugging
// Face cache directory names its repository), org/name, or a bare name.
func classifyPathOrName(v string, hf bool) (id, kind, rev string) {
	if strings.HasPrefix(v, "/") || strings.HasPrefix(v, "./") || strings.HasPrefix(v, "../") || strings.HasPrefix(v, "~") {
		// A Hugging Face cache directory names its repository:
		// .../models--meta-llama--Llama-3.1-8B-Instruct[/snapshots/REV].
		if m := hfCacheDir.FindStringSubmatch(v); m != nil && hfPart(m[1]) && hfPart(m[2]) {
			return m[1] + "/" + m[2], locHF, m[3]
		}
		return v, locPath, ""
	}
	if org, name, ok := strings.Cut(v, "/"); ok {
		if hfPart(org) && hfPart(name) {
			return v, locHF, ""
		}
		// org/name:QUANT picks a file of a GGUF repository (llama.cpp's
		// -hf bartowski/Llama-3.2-3B-Instruct-GGUF:Q4_K_M): the model is
		// the repository.
		if base, tag, ok := strings.Cut(name, ":"); ok && hfPart(org) && hfPart(base) && hfPart(tag) {
			return org + "/" + base, locHF, ""
		}
		return v, locPath, ""
	}
	if hf && hfPart(v) {
		return v, locHF, ""
	}
	return v, locName, ""
}

// isASCII reports whether s is all ASCII.
func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

// foldedIs reports whether s, its ASCII letters lower-cased, is lower.
func foldedIs(s, lower string) bool {
	if len(s) != len(lower) {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != lower[i] {
			return false
		}
	}
	return true
}

// foldedHasPrefix reports whether s, its ASCII letters lower-cased, starts
// with prefix.
func foldedHasPrefix(s, prefix string) bool {
	return len(s) >= len(prefix) && foldedIs(s[:len(prefix)], prefix)
}

// hfPart: a Hugging Face org or repo name: [A-Za-z0-9] then [A-Za-z0-9._-], at
// most 96 bytes, no "..".
func hfPart(s string) bool {
	if s == "" || len(s) > 96 || strings.Contains(s, "..") {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		alnum := 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
		if !alnum && (i == 0 || c != '.' && c != '_' && c != '-') {
			return false
		}
	}
	return true
}

// modelInfo is what the rules make of a model value.
type modelInfo struct {
	ignored       bool
	id, kind, rev string
}

// classify is what the rules make of a model value: ignored, or its id,
// location kind and pinned revision; hf says the value can only be a
// Hugging Face id. Not memoized: three ignore patterns and string tests,
// 1-3% of a render.
func (r *rules) classify(v string, hf bool) modelInfo {
	if r.ignoredModel(v) {
		return modelInfo{ignored: true}
	}
	id, kind, rev := classifyModel(v, hf)
	return modelInfo{id: id, kind: kind, rev: rev}
}

// modelRefPrefix starts the bom-ref of a model: "model:" and its key.
const modelRefPrefix = "model:"

// modelRefOf is the bom-ref of the model id of location kind kind:
// modelRefPrefix, then its key "kind:id", the id lower-cased for a
// Hugging Face id (which is case-insensitive). The key is
// ref[len(modelRefPrefix):].
func modelRefOf(kind, id string) string {
	if kind != locHF {
		return modelRefPrefix + kind + ":" + id
	}
	var b strings.Builder
	b.Grow(len(modelRefPrefix) + len(kind) + 1 + len(id))
	b.WriteString(modelRefPrefix)
	b.WriteString(kind)
	b.WriteByte(':')
	for i := 0; i < len(id); i++ {
		c := id[i]
		if c >= 0x80 {
			// Not ASCII (no Hugging Face id is): as strings.ToLower does.
			b.WriteString(strings.ToLower(id[i:]))
			break
		}
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		b.WriteByte(c)
	}
	return b.String()
}

// addModel records a model claim of the component cd.
func (r *rules) addModel(cd *compDetect, d *detection, m modelClaim) {
	mi := r.classify(m.value, m.hf)
	if mi.ignored {
		return
	}
	id, kind := mi.id, mi.kind
	if kind == locHF && m.path == "" && strings.HasPrefix(m.value, "/") {
		m.path = m.value // a cache directory of the repository
	}
	switch m.how {
	case "image":
		kind = locNIMImage
	case "image name":
		kind = locImage
	}
	ref := modelRefOf(kind, id)
	key := ref[len(modelRefPrefix):]
	if m.conf == confDeclared && kind == locUnresolved {
		m.conf = confUnresolved
	}
	mh, ok := d.models.get(key)
	if !ok {
		mh = &modelHit{key: key, ref: ref, name: id, kind: kind, hf: kind == locHF, conf: m.conf}
		mh.proofs = mh.proofRoom[:0]
		if kind == "oci" {
			if img, err := imageref.ParseImage(id[len("oci://"):]); err == nil {
				mh.oci = &img
			}
		}
		d.models.put(key, mh)
	}
	mh.conf = stronger(mh.conf, m.conf)
	mh.strong = mh.strong || !m.weak && strongModel(kind, id, m.how)
	mh.proofs.add(proof{conf: m.conf, value: m.how + " " + m.value, locator: m.locator})
	if m.revision == "" {
		m.revision = mi.rev
	}
	if m.revision != "" && kind == locHF {
		mh.revisions.add(m.revision)
	}
	if m.path != "" {
		mh.setProp(propPrefix+"model:path", m.path)
		if m.pathLocator != "" && m.pathLocator != m.locator {
			mh.proofs.add(proof{conf: m.conf, value: "path " + m.path, locator: m.pathLocator})
		}
	}
	if m.simulated != "" {
		mh.setProp(propPrefix+"model:simulatedBy", m.simulated)
	}
	if m.adapter {
		mh.setProp(propPrefix+"model:adapter", "lora")
	}
	cd.models.add(key)
}

// setProp sets the property name (propPrefix included) of the model.
func (m *modelHit) setProp(name, value string) {
	if m.props == nil {
		m.props = map[string]string{}
	}
	m.props[name] = value
}

// modelFileExts are the extensions of model files (weights, engines,
// exported graphs).
var modelFileExts = []string{".gguf", ".ggml", ".safetensors", ".bin", ".pt", ".pth", ".onnx", ".engine", ".plan",
	".pb", ".tflite", ".h5", ".keras", ".joblib", ".pkl", ".mar", ".nemo", ".llamafile", ".mlmodel"}

// strongModel reports a model reference strong enough to give a workload a
// BOM without any serving runtime: an organisation/name id, a model-store URI
// (hf://, s3://, gs://, pvc://, oci://, azureblob://), a model file path, a
// model an image bakes in, or any value of a kind field that names a model.
// A bare word ("llama3", "default") or a plain directory in an env var or a
// flag is not.
func strongModel(kind, id, how string) bool {
	if strings.HasPrefix(how, "field") || how == "image" || how == "image name" {
		return true
	}
	switch kind {
	case locHF:
		return strings.Contains(id, "/")
	case "pvc", "gcs", "s3", "oci", "azure", locNIMImage, locImage:
		return true
	case locPath:
		lower := strings.ToLower(id)
		for _, ext := range modelFileExts {
			if strings.HasSuffix(lower, ext) {
				return true
			}
		}
	}
	return false
}

// withoutUserinfo drops the user part of a URI (s3://anonymous@bucket/...,
// or what the collector left of a credential there): a model's source is
// named without it.
func withoutUserinfo(v string) string {
	scheme, rest, ok := strings.Cut(v, "://")
	if !ok || strings.EqualFold(scheme, "oci") {
		// An image reference has no user part: "@" starts a digest.
		return v
	}
	host, path, _ := strings.Cut(rest, "/")
	if i := strings.LastIndexByte(host, '@'); i >= 0 {
		host = host[i+1:]
		if path != "" || strings.HasSuffix(rest, "/") {
			return scheme + "://" + host + "/" + path
		}
		return scheme + "://" + host
	}
	return v
}

// unresolvedRef reports a value still holding a variable reference.
func unresolvedRef(s string) bool {
	return strings.Contains(s, "$(") || strings.Contains(s, "${") || (strings.IndexByte(s, '$') >= 0 && dollarName(s))
}

// dollarName reports a $ followed by the start of a shell variable name.
func dollarName(s string) bool {
	for i := 0; i+1 < len(s); i++ {
		if s[i] == '$' {
			c := s[i+1]
			if c == '_' || 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' {
				return true
			}
		}
	}
	return false
}
