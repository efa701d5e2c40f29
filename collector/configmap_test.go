package collector

import (
	"encoding/json"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/bomstream/bomstream/schemas"
)

// recordingLookup is a testLookup that records the kinds it was asked for.
type recordingLookup struct {
	testLookup
	mu    sync.Mutex
	kinds []string
}

func (l *recordingLookup) Get(apiVersion, kind, ns, name string) (map[string]any, bool) {
	l.mu.Lock()
	l.kinds = append(l.kinds, kind+"/"+name)
	l.mu.Unlock()
	return l.testLookup.Get(apiVersion, kind, ns, name)
}

func (l *recordingLookup) List(apiVersion, kind, ns string) []map[string]any {
	l.mu.Lock()
	l.kinds = append(l.kinds, kind)
	l.mu.Unlock()
	return l.testLookup.List(apiVersion, kind, ns)
}

// The secrets of configMapManifest: none may reach the Inputs.
var configMapSecrets = []string{
	"sk-cm-0123456789abcdef", "hf_cmTokenValue0123456789", "cm-password-in-url", "secret-data-value",
	"sk-config-file-0123456789", "hf_configFileToken012345", "script-token-0123456789", "heredoc-secret-value",
	"sk-argsenv-0123456789", "c2VjcmV0LWRhdGEtdmFsdWU=",
}

const configMapManifest = `
apiVersion: apps/v1
kind: Deployment
metadata: {name: tgi, namespace: ml}
spec:
  template:
    spec:
      containers:
      - name: server
        image: ghcr.io/huggingface/text-generation-inference:3.3.4
        command: ["/bin/bash", "/scripts/run"]
        env:
        - name: MAX_MODEL_LEN
          valueFrom: {configMapKeyRef: {name: model-config, key: max-len}}
        - name: OTHER
          valueFrom: {configMapKeyRef: {name: model-config, key: API_KEY}}
        - name: GONE
          valueFrom: {configMapKeyRef: {name: model-config, key: no-such-key}}
        - name: MODEL_REVISION
          valueFrom: {configMapKeyRef: {name: no-such-map, key: rev, optional: true}}
        - name: HF_TOKEN
          valueFrom: {secretKeyRef: {name: hf, key: token}}
        - name: VLLM_ADDITIONAL_ARGS
          valueFrom: {configMapKeyRef: {name: model-config, key: extra}}
        envFrom:
        - configMapRef: {name: model-config}
        - prefix: APP_
          configMapRef: {name: model-config}
        - secretRef: {name: hf}
        volumeMounts:
        - {name: scripts, mountPath: /scripts}
        - {name: vllm, mountPath: /etc/vllm/config.yaml, subPath: config.yaml}
        - {name: envfile, mountPath: /etc/app}
        - {name: mixed, mountPath: /proj}
        - {name: token, mountPath: /var/run/hf}
      volumes:
      - name: scripts
        configMap: {name: scripts}
      - name: vllm
        configMap: {name: vllm-config}
      - name: envfile
        configMap:
          name: model-config
          items: [{key: server.env, path: conf/server.env}]
      - name: mixed
        projected:
          sources:
          - configMap: {name: vllm-config, items: [{key: settings.json, path: settings.json}]}
          - secret: {name: hf}
      - name: token
        secret: {secretName: hf}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: model-config, namespace: ml}
data:
  MODEL_ID: meta-llama/Llama-3.1-8B-Instruct
  API_KEY: sk-cm-0123456789abcdef
  HF_TOKEN: hf_cmTokenValue0123456789
  MODEL_PATH: https://user:cm-password-in-url@models.example.com/llama
  max-len: "8192"
  extra: --max-model-len 4096 --api-key sk-argsenv-0123456789
  server.env: |
    # the server's settings
    export MODEL_ID=Qwen/Qwen2.5-7B-Instruct
    HF_TOKEN="hf_configFileToken012345"
    NUM_SHARD=2
---
apiVersion: v1
kind: ConfigMap
metadata: {name: scripts, namespace: ml}
data:
  run: |
    text-generation-launcher --model-id "$MODEL_ID" --api-key 'script-token-0123456789' \
      --port 8080
    cat <<EOF > /tmp/x
    heredoc-secret-value
    EOF
  start.sh: |
    exec text-generation-launcher --model-id=mistralai/Mistral-7B-v0.1
  README.md: "how to run it"
  template.jinja: "{{ messages }}"
---
apiVersion: v1
kind: ConfigMap
metadata: {name: vllm-config, namespace: ml}
data:
  config.yaml: |
    model: Qwen/Qwen3-8B
    api-key: sk-config-file-0123456789
    tensor-parallel-size: 2
    nested:
      max_model_len: 16384
      served-model-name: [qwen, qwen-8b]
    download-dir: /models
  settings.json: '{"model_id": "BAAI/bge-small-en-v1.5", "hf_token": "hf_configFileToken012345"}'
---
apiVersion: v1
kind: Secret
metadata: {name: hf, namespace: ml}
data: {token: c2VjcmV0LWRhdGEtdmFsdWU=}
stringData: {token: secret-data-value}
`

// A ConfigMap's values are read as if they stood in the manifest: a
// configMapKeyRef by the env allow-list, an envFrom's variables (prefix
// applied, in key order), the files its volumes put where the container
// sees them (a script redacted word by word, a configuration file cut to
// its allow-listed keys); a missing ConfigMap or key keeps the names only,
// and no Secret is ever asked for.
func TestConfigMapsAreInputs(t *testing.T) {
	n := newNormalizer(t, Config{})
	objs := parseObjs(t, configMapManifest)
	lookup := &recordingLookup{testLookup: objs}
	in := normalizeWith(t, n, objs[0], lookup)
	for _, k := range lookup.kinds {
		if strings.HasPrefix(k, "Secret") {
			t.Errorf("looked up %s", k)
		}
	}
	b, _ := json.Marshal(in)
	for _, s := range configMapSecrets {
		if strings.Contains(string(b), s) {
			t.Errorf("%q reached the inputs", s)
		}
	}
	ct := in.Components[0].Containers[0]
	wantEnv := []schemas.EnvVar{
		{Name: "MAX_MODEL_LEN", Value: "8192", From: &schemas.KeyRef{Kind: "configMap", Name: "model-config", Key: "max-len"}},
		{Name: "OTHER", Redacted: true, From: &schemas.KeyRef{Kind: "configMap", Name: "model-config", Key: "API_KEY"}},
		{Name: "GONE", From: &schemas.KeyRef{Kind: "configMap", Name: "model-config", Key: "no-such-key"}},
		{Name: "MODEL_REVISION", From: &schemas.KeyRef{Kind: "configMap", Name: "no-such-map", Key: "rev"}},
		{Name: "HF_TOKEN", From: &schemas.KeyRef{Kind: "secret", Name: "hf", Key: "token"}},
		{Name: "VLLM_ADDITIONAL_ARGS", Value: "--max-model-len 4096 --api-key REDACTED", From: &schemas.KeyRef{Kind: "configMap", Name: "model-config", Key: "extra"}},
	}
	if !reflect.DeepEqual(ct.Env, wantEnv) {
		t.Errorf("env:\n%s\nwant\n%s", js(ct.Env), js(wantEnv))
	}
	from := func(k string) *schemas.KeyRef {
		return &schemas.KeyRef{Kind: "configMap", Name: "model-config", Key: k}
	}
	gives := func(prefix string) []schemas.EnvVar {
		return []schemas.EnvVar{
			{Name: prefix + "API_KEY", Redacted: true, From: from("API_KEY")},
			{Name: prefix + "HF_TOKEN", Redacted: true, From: from("HF_TOKEN")},
			{Name: prefix + "MODEL_ID", Value: map[bool]string{true: "meta-llama/Llama-3.1-8B-Instruct"}[prefix == ""], Redacted: prefix != "", From: from("MODEL_ID")},
			{Name: prefix + "MODEL_PATH", Redacted: true, From: from("MODEL_PATH")},
			{Name: prefix + "extra", Redacted: true, From: from("extra")},
			{Name: prefix + "max-len", Redacted: true, From: from("max-len")},
			{Name: prefix + "server.env", Redacted: true, From: from("server.env")},
		}
	}
	wantFrom := []schemas.EnvSource{
		{Kind: "configMap", Name: "model-config", Env: gives("")},
		{Kind: "configMap", Name: "model-config", Prefix: "APP_", Env: gives("APP_")},
		{Kind: "secret", Name: "hf"},
	}
	if !reflect.DeepEqual(ct.EnvFrom, wantFrom) {
		t.Errorf("envFrom:\n%s\nwant\n%s", js(ct.EnvFrom), js(wantFrom))
	}
	wantFiles := []schemas.File{
		{Path: "/etc/app/conf/server.env", Locator: `ConfigMap/model-config:data["server.env"]`, Kind: schemas.FileConfig,
			Text: "MODEL_ID=Qwen/Qwen2.5-7B-Instruct\nNUM_SHARD=2"},
		{Path: "/etc/vllm/config.yaml", Locator: `ConfigMap/vllm-config:data["config.yaml"]`, Kind: schemas.FileConfig,
			Text: "model=Qwen/Qwen3-8B\ntensor-parallel-size=2\nnested.max_model_len=16384\nnested.served-model-name[0]=qwen\nnested.served-model-name[1]=qwen-8b"},
		{Path: "/proj/settings.json", Locator: `ConfigMap/vllm-config:data["settings.json"]`, Kind: schemas.FileConfig,
			Text: "model_id=BAAI/bge-small-en-v1.5"},
		{Path: "/scripts/run", Locator: "ConfigMap/scripts:data.run", Kind: schemas.FileScript,
			Text: "text-generation-launcher --model-id \"$MODEL_ID\" --api-key REDACTED \\\n\t--port 8080\ncat <<EOF >/tmp/x\nREDACTED\nEOF"},
		{Path: "/scripts/start.sh", Locator: `ConfigMap/scripts:data["start.sh"]`, Kind: schemas.FileScript,
			Text: "exec text-generation-launcher --model-id=mistralai/Mistral-7B-v0.1"},
	}
	if !reflect.DeepEqual(ct.Files, wantFiles) {
		t.Errorf("files:\n%s\nwant\n%s", js(ct.Files), js(wantFiles))
	}

	// Without the ConfigMaps: names only, as the manifest has them.
	bare := normalizeWith(t, n, objs[0], nil).Components[0].Containers[0]
	for _, e := range bare.Env {
		if e.Value != "" || e.Redacted {
			t.Errorf("no ConfigMap, yet %s = %q (redacted %v)", e.Name, e.Value, e.Redacted)
		}
	}
	for _, s := range bare.EnvFrom {
		if s.Env != nil {
			t.Errorf("no ConfigMap, yet envFrom %s gives %v", s.Name, s.Env)
		}
	}
	if bare.Files != nil {
		t.Errorf("no ConfigMap, yet files %v", bare.Files)
	}
}

func js(v any) string {
	b, _ := json.MarshalIndent(v, "", "  ")
	return string(b)
}

// Draft and Complete are NormalizeWith in two steps: the draft names the
// ConfigMaps an object reads, and completing it with a lookup gives what
// NormalizeWith gives; an edit of a key the object reads changes its
// inputs, an edit of one it does not read (or of a value it redacts) does
// not.
func TestDraftComplete(t *testing.T) {
	n := newNormalizer(t, Config{})
	objs := parseObjs(t, configMapManifest)
	d, err := n.Draft(objs[0], "cluster")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := d.ConfigMaps(), []string{"model-config", "no-such-map", "scripts", "vllm-config"}; !reflect.DeepEqual(got, want) {
		t.Errorf("ConfigMaps() = %v, want %v", got, want)
	}
	whole := normalizeWith(t, n, objs[0], testLookup(objs))
	if got := n.Complete(d, testLookup(objs)); !reflect.DeepEqual(got, whole) {
		t.Errorf("Complete differs from NormalizeWith:\n%s\n%s", js(got), js(whole))
	}
	if got := n.Complete(d, nil); !reflect.DeepEqual(got, normalizeWith(t, n, objs[0], nil)) {
		t.Error("Complete without a lookup differs from Normalize")
	}
	base := inputHash(t, whole)
	edit := func(cm, key, value string) string {
		t.Helper()
		again := parseObjs(t, configMapManifest)
		for _, o := range again {
			if o["kind"] == "ConfigMap" && objName(o) == cm {
				o["data"].(map[string]any)[key] = value
			}
		}
		return inputHash(t, n.Complete(d, testLookup(again)))
	}
	if edit("model-config", "MODEL_ID", "meta-llama/Llama-3.2-1B") == base {
		t.Error("a new model in the ConfigMap left the input hash as it was")
	}
	if edit("model-config", "API_KEY", "sk-rotated-0123456789") != base {
		t.Error("a rotated key (redacted) moved the input hash")
	}
	if edit("scripts", "README.md", "other words") != base {
		t.Error("a file that is no input moved the input hash")
	}
	if edit("vllm-config", "config.yaml", "model: Qwen/Qwen3-32B\n") == base {
		t.Error("a new model in the config file left the input hash as it was")
	}

	// An object that reads no ConfigMap is complete as drafted.
	plain := parseObj(t, `{apiVersion: apps/v1, kind: Deployment, metadata: {name: p}, spec: {template: {spec: {containers: [{name: c, image: vllm/vllm-openai:v0.10.0}]}}}}`)
	pd, err := n.Draft(plain, "cluster")
	if err != nil {
		t.Fatal(err)
	}
	if pd.ConfigMaps() != nil || n.Complete(pd, testLookup(objs)) != pd.Inputs() {
		t.Error("a draft that reads no ConfigMap is not complete as it is")
	}
}

// What a file is depends on its name, its first line and whether the
// container runs it; anything that is neither a script nor a mapping nor
// key=value lines is left out.
func TestConfigMapFileKinds(t *testing.T) {
	n := newNormalizer(t, Config{})
	ct := &schemas.Container{Command: []string{"sh", "-c", "cd /cfg && /cfg/boot; echo done"}, Args: []string{"--config", "/cfg/served.yaml"}}
	for _, tc := range []struct {
		path, text, kind, want string
	}{
		{"/cfg/boot", "vllm serve facebook/opt-125m --api-key k-0123456789abcdef0123", schemas.FileScript, "vllm serve facebook/opt-125m --api-key REDACTED"},
		{"/cfg/x.bash", "ollama serve", schemas.FileScript, "ollama serve"},
		{"/cfg/entry", "#!/bin/sh\n# comment\nollama serve", schemas.FileScript, "ollama serve"},
		{"/cfg/broken.sh", "if then fi ((", schemas.FileScript, Redacted},
		{"/cfg/app.ini", "[server]\nmodel = org/m\npassword = hunter2\n", schemas.FileConfig, "server.model=org/m"},
		{"/cfg/empty.yaml", "other: 1\n", schemas.FileConfig, ""},
		{"/cfg/list.json", `["a", "b"]`, "", ""},
		{"/cfg/notes.txt", "just some words", "", ""},
		{"/cfg/model.py", "import os\nprint(os.environ)\n", "", ""},
		// A file given as a flag's value is no script (vllm serve --config).
		{"/cfg/served.yaml", "model: org/m\nport: 8000\n", schemas.FileConfig, "model=org/m\nport=8000"},
		{"/cfg/tpl.jinja", "{% for m in messages %}{{ m }}{% endfor %}", "", ""},
		{"/cfg/alias.yaml", "a: &x {model: org/a}\nb: *x\n", schemas.FileConfig, "a.model=org/a"},
		{"/cfg/multiline.yaml", "model: |\n  org/a\n  org/b\n", schemas.FileConfig, ""},
	} {
		f, ok := n.file(tc.path, "loc", tc.text, ct)
		if !ok {
			if tc.kind != "" {
				t.Errorf("%s: left out, want %s", tc.path, tc.kind)
			}
			continue
		}
		if f.Kind != tc.kind || f.Text != tc.want {
			t.Errorf("%s: %s %q, want %s %q", tc.path, f.Kind, f.Text, tc.kind, tc.want)
		}
	}
}

// Where a ConfigMap's files land: a whole volume, its items, a subPath
// naming one file or a directory of its items, a subPath it does not
// have.
func TestConfigMapFilePaths(t *testing.T) {
	for _, tc := range []struct {
		m    fileMount
		rel  string
		want string
		ok   bool
	}{
		{fileMount{path: "/etc/x"}, "a.yaml", "/etc/x/a.yaml", true},
		{fileMount{path: "/etc/x"}, "conf/a.yaml", "/etc/x/conf/a.yaml", true},
		{fileMount{path: "/etc/x/a.yaml", subPath: "a.yaml"}, "a.yaml", "/etc/x/a.yaml", true},
		{fileMount{path: "/etc/x/a.yaml", subPath: "a.yaml"}, "b.yaml", "", false},
		{fileMount{path: "/etc/c", subPath: "conf/"}, "conf/a.yaml", "/etc/c/a.yaml", true},
		{fileMount{path: "/etc/c", subPath: "conf"}, "confx/a.yaml", "", false},
	} {
		got, ok := tc.m.at(tc.rel)
		if got != tc.want || ok != tc.ok {
			t.Errorf("%+v at %s = %q %v, want %q %v", tc.m, tc.rel, got, ok, tc.want, tc.ok)
		}
	}
}

// A ConfigMap's text is bounded like any input: a long script is cut to
// Bounds.Value with a mark carrying the sha256 of the whole.
func TestConfigMapFilesBounded(t *testing.T) {
	n := newNormalizer(t, Config{Bounds: Bounds{Value: 1 << 10}})
	objs := parseObjs(t, `
apiVersion: apps/v1
kind: Deployment
metadata: {name: long, namespace: ml}
spec:
  template:
    spec:
      containers:
      - name: c
        image: ghcr.io/ggml-org/llama.cpp:server
        volumeMounts: [{name: s, mountPath: /s}]
      volumes: [{name: s, configMap: {name: s}}]
---
apiVersion: v1
kind: ConfigMap
metadata: {name: s, namespace: ml}
data:
  start.sh: "`+strings.Repeat("llama-server --port 8080; ", 200)+`"
`)
	in := normalizeWith(t, n, objs[0], testLookup(objs))
	fs := in.Components[0].Containers[0].Files
	if len(fs) != 1 || len(fs[0].Text) > 1<<10 || !strings.HasPrefix(fs[0].Text, "llama-server --port 8080\n") {
		t.Fatalf("files %v", fs)
	}
	m := marks(in.Components[0].Fields)
	if len(m) != 1 || !strings.Contains(m[0].Value, "whole sha256:") || !strings.HasSuffix(m[0].Locator, ".files") {
		t.Errorf("marks %v", m)
	}
}

// A profile's link to a ConfigMap (a KAITO Workspace's inference.config)
// is read by name with the other ConfigMaps: Draft names it, and Complete
// gives its fields.
func TestConfigMapLinkDrafted(t *testing.T) {
	n := newNormalizer(t, Config{})
	objs := parseObjs(t, `
apiVersion: kaito.sh/v1beta1
kind: Workspace
metadata: {name: ws, namespace: ml}
resource: {instanceType: Standard_NC24ads_A100_v4}
inference:
  preset: {name: phi-4}
  config: ws-config
---
apiVersion: v1
kind: ConfigMap
metadata: {name: ws-config, namespace: ml}
data:
  inference_config.yaml: |
    vllm:
      max-model-len: 4096
`)
	d, err := n.Draft(objs[0], "cluster")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(d.ConfigMaps(), []string{"ws-config"}) {
		t.Fatalf("ConfigMaps() = %v", d.ConfigMaps())
	}
	in := n.Complete(d, testLookup(objs))
	f, ok := in.Field("maxModelLen")
	if !ok || f.Value != "4096" || !strings.HasPrefix(f.Locator, "ConfigMap/ws-config:") {
		t.Errorf("maxModelLen = %+v", f)
	}
}
