package transformer

import "strings"

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

var uriKinds = []struct{ prefix, kind string }{
	{"pvc://", "pvc"}, {"gs://", "gcs"}, {"s3://", "s3"}, {"oci://", "oci"},
	{"azureblob://", "azure"}, {"https://", locURL}, {"http://", locURL},
}

// classifyModel names a model value: a Hugging Face id ("org/name", hf://,
// huggingface.co URLs; bare names only when hf is set), a local path, a
// storage URI, an unresolved reference, or a bare name.
func classifyModel(v string, hf bool) (id, kind string) {
	v = strings.TrimSpace(v)
	if unresolvedRef(v) {
		return v, locUnresolved
	}
	lower := strings.ToLower(v)
	for _, p := range []string{"hf://", "https://huggingface.co/", "http://huggingface.co/", "huggingface.co/"} {
		if strings.HasPrefix(lower, p) {
			rest := strings.TrimSuffix(v[len(p):], ".git")
			parts := strings.SplitN(rest, "/", 3)
			if len(parts) >= 2 && hfPart(parts[0]) && hfPart(parts[1]) {
				return parts[0] + "/" + strings.TrimSuffix(parts[1], ".git"), locHF
			}
			if len(parts) >= 1 && hfPart(parts[0]) && p == "hf://" {
				return parts[0], locHF
			}
			return v, locURL
		}
	}
	for _, u := range uriKinds {
		if strings.HasPrefix(lower, u.prefix) {
			return v, u.kind
		}
	}
	if i := strings.Index(v, "://"); i > 0 {
		return v, strings.ToLower(v[:i])
	}
	if strings.HasPrefix(v, "/") || strings.HasPrefix(v, "./") || strings.HasPrefix(v, "../") || strings.HasPrefix(v, "~") {
		return v, locPath
	}
	if org, name, ok := strings.Cut(v, "/"); ok {
		if hfPart(org) && hfPart(name) {
			return v, locHF
		}
		return v, locPath
	}
	if hf && hfPart(v) {
		return v, locHF
	}
	return v, locName
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
	id, kind, key string
}

func (r *rules) classify(v string, hf bool) *modelInfo {
	if r.ignoredModel(v) {
		return &modelInfo{ignored: true}
	}
	id, kind := classifyModel(v, hf)
	key := kind + ":" + id
	if kind == locHF {
		key = kind + ":" + strings.ToLower(id)
	}
	return &modelInfo{id: id, kind: kind, key: key}
}

// addModel records a model claim of the component cd.
func (r *rules) addModel(cd *compDetect, d *detection, m modelClaim) {
	mi := r.cache.model(r, m.value, m.hf)
	if mi.ignored {
		return
	}
	id, kind, key := mi.id, mi.kind, mi.key
	if m.conf == confDeclared && kind == locUnresolved {
		m.conf = confUnresolved
	}
	switch m.how {
	case "image":
		kind = locNIMImage
		key = kind + ":" + id
	case "image name":
		kind = locImage
		key = kind + ":" + id
	}
	mh, ok := d.models.get(key)
	if !ok {
		mh = d.sc.modelPool.get()
		mh.key, mh.name, mh.kind, mh.hf, mh.conf = key, id, kind, kind == locHF, m.conf
		d.models.put(key, mh)
	}
	mh.conf = stronger(mh.conf, m.conf)
	mh.strong = mh.strong || strongModel(kind, id, m.how)
	mh.proofs.add(proof{conf: m.conf, value: m.how + " " + m.value, locator: m.locator})
	if m.revision != "" && kind == locHF {
		mh.revisions.add(m.revision)
	}
	if m.simulated != "" {
		if mh.props == nil {
			mh.props = map[string]string{}
		}
		mh.props["bomstream:model:simulatedBy"] = m.simulated
	}
	if m.adapter {
		if mh.props == nil {
			mh.props = map[string]string{}
		}
		mh.props["bomstream:model:adapter"] = "lora"
	}
	cd.models.add(key)
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

// strongModel reports whether some model of d stands alone.
func (d *detection) strongModel() bool {
	for _, m := range d.models.items {
		if m.strong {
			return true
		}
	}
	return false
}
