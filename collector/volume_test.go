package collector

import (
	"reflect"
	"strings"
	"testing"

	"github.com/bomstream/bomstream/schemas"
	"github.com/bomstream/bomstream/schemas/cmdline"
)

// --- volumes that can carry a model ---------------------------------------------

const volumesDoc = `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: ml}
spec:
  template:
    spec:
      volumes:
      - name: weights
        image: {reference: "oci://bob:s3cret@registry.example.com/models/llama:1", pullPolicy: IfNotPresent}
      - name: unused-image
        image: {reference: "registry.example.com/models/other:2"}
      - {name: cache, emptyDir: {}}
      - {name: dshm, emptyDir: {medium: Memory}}
      - {name: cfg, configMap: {name: server-config}}
      - {name: data, persistentVolumeClaim: {claimName: weights-pvc}}
      - {name: twice, emptyDir: {}}
      - {name: cache, emptyDir: {medium: Memory}}
      containers:
      - name: server
        image: vllm/vllm-openai:v0.9.0
        volumeMounts:
        - {name: weights, mountPath: /models/llama, readOnly: true}
        - {name: cache, mountPath: /models/cache, subPath: hf}
        - {name: dshm, mountPath: /dev/shm}
        - {name: cfg, mountPath: /etc/server}
        - {name: data, mountPath: /data/hf_abcdefghijklmnopqrstuvwxyz0123}
        - {name: twice, mountPath: /a}
        - {name: twice, mountPath: /b}
        - {name: cache}
      initContainers:
      - name: fetch
        image: python:3.12
        volumeMounts:
        - {name: cache, mountPath: /cache}
        - {name: data, mountPath: /data}
`

func TestVolumesKeptAndDropped(t *testing.T) {
	n := newNormalizer(t, Config{})
	in, err := n.Normalize(parseObj(t, volumesDoc), "cluster")
	if err != nil {
		t.Fatal(err)
	}
	c := in.Components[0]
	const vols = "spec.template.spec.volumes"
	wantVols := []schemas.Volume{
		// image volumes always, the userinfo of the reference removed
		{Name: "weights", Locator: vols + "[0]", Image: "oci://REDACTED@registry.example.com/models/llama:1"},
		{Name: "unused-image", Locator: vols + "[1]", Image: "registry.example.com/models/other:2"},
		// mounted by the init container and the server: the first of its name
		{Name: "cache", Locator: vols + "[2]"},
		{Name: "data", Locator: vols + "[5]", Claim: "weights-pvc"},
	}
	if !reflect.DeepEqual(c.Volumes, wantVols) {
		t.Errorf("volumes:\n%+v\nwant:\n%+v", c.Volumes, wantVols)
	}
	server, fetch := c.Containers[0], c.Containers[1]
	if server.Name != "server" || fetch.Name != "fetch" || !fetch.Init {
		t.Fatalf("containers: %s", shape(in))
	}
	wantServer := []schemas.Mount{
		{Volume: "weights", Path: "/models/llama"},
		{Volume: "cache", Path: "/models/cache", SubPath: "hf"},
		{Volume: "data", Path: "/data/REDACTED"},
	}
	if !reflect.DeepEqual(server.Mounts, wantServer) {
		t.Errorf("server mounts:\n%+v\nwant:\n%+v", server.Mounts, wantServer)
	}
	wantFetch := []schemas.Mount{{Volume: "cache", Path: "/cache"}, {Volume: "data", Path: "/data"}}
	if !reflect.DeepEqual(fetch.Mounts, wantFetch) {
		t.Errorf("fetch mounts:\n%+v\nwant:\n%+v", fetch.Mounts, wantFetch)
	}
}

// A volume one container keeps to itself changes nothing: neither adding
// one nor changing its mount moves the input hash.
func TestVolumesPrivateToOneContainerDoNotCount(t *testing.T) {
	n := newNormalizer(t, Config{})
	base := parseObj(t, volumesDoc)
	h := hash(t, n, base)
	pod := base["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)
	server := pod["containers"].([]any)[0].(map[string]any)
	mounts := server["volumeMounts"].([]any)
	mounts[2].(map[string]any)["mountPath"] = "/dev/shm2" // dshm
	pod["volumes"] = append(pod["volumes"].([]any), map[string]any{"name": "tmp", "emptyDir": map[string]any{}})
	server["volumeMounts"] = append(mounts, map[string]any{"name": "tmp", "mountPath": "/tmp"})
	if got := hash(t, n, base); got != h {
		t.Error("a private volume changed the input hash")
	}
	// A shared one does.
	mounts[1].(map[string]any)["mountPath"] = "/models/cache2"
	if got := hash(t, n, base); got == h {
		t.Error("moving a shared mount did not change the input hash")
	}
}

func TestKeepVolumes(t *testing.T) {
	for _, tc := range []struct {
		name   string
		vols   []schemas.Volume
		cs     [][]schemas.Mount
		want   []string // volume names kept
		mounts [][]schemas.Mount
	}{
		{"no mounts: image volumes only",
			[]schemas.Volume{{Name: "img", Image: "r/m:1"}, {Name: "e"}},
			[][]schemas.Mount{nil},
			[]string{"img"}, [][]schemas.Mount{nil}},
		{"shared and private",
			[]schemas.Volume{{Name: "shared"}, {Name: "shm"}},
			[][]schemas.Mount{{{Volume: "shared", Path: "/s"}, {Volume: "shm", Path: "/dev/shm"}}, {{Volume: "shared", Path: "/t"}}},
			[]string{"shared"}, [][]schemas.Mount{{{Volume: "shared", Path: "/s"}}, {{Volume: "shared", Path: "/t"}}}},
		{"two mounts in one container are one user",
			[]schemas.Volume{{Name: "v"}},
			[][]schemas.Mount{{{Volume: "v", Path: "/a"}, {Volume: "v", Path: "/b"}}, nil},
			nil, [][]schemas.Mount{nil, nil}},
		{"a mount of no volume is dropped",
			[]schemas.Volume{{Name: "img", Image: "r/m:1"}},
			[][]schemas.Mount{{{Volume: "ghost", Path: "/g"}}, {{Volume: "ghost", Path: "/h"}}},
			[]string{"img"}, [][]schemas.Mount{nil, nil}},
		{"a volume without a name",
			[]schemas.Volume{{Image: "r/m:1"}},
			[][]schemas.Mount{nil},
			nil, [][]schemas.Mount{nil}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cs := make([]schemas.Container, len(tc.cs))
			for i, m := range tc.cs {
				cs[i].Mounts = m
			}
			var got []string
			for _, v := range keepVolumes(tc.vols, cs) {
				got = append(got, v.Name)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("kept %q, want %q", got, tc.want)
			}
			for i := range cs {
				if !reflect.DeepEqual(cs[i].Mounts, tc.mounts[i]) {
					t.Errorf("container %d mounts %+v, want %+v", i, cs[i].Mounts, tc.mounts[i])
				}
			}
		})
	}
}

func TestVolumesErrors(t *testing.T) {
	n := newNormalizer(t, Config{})
	obj := deployment(map[string]any{"name": "c", "image": "i:1", "volumeMounts": "x"})
	_, err := n.Normalize(obj, "cluster")
	if err == nil || err.Error() != "ml/Deployment/web: spec.template.spec.containers[0].volumeMounts: expected a list of volume mounts, found a scalar" {
		t.Errorf("mounts not a list: err = %v", err)
	}
	obj = deployment(map[string]any{"name": "c", "image": "i:1"})
	obj["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)["volumes"] = map[string]any{"a": 1}
	_, err = n.Normalize(obj, "cluster")
	if err == nil || err.Error() != "ml/Deployment/web: spec.template.spec.volumes: expected a list of volumes, found a map" {
		t.Errorf("volumes not a list: err = %v", err)
	}
	obj["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)["volumes"] = []any{
		map[string]any{"name": "v", "image": map[string]any{"reference": []any{"x"}}},
	}
	_, err = n.Normalize(obj, "cluster")
	if err == nil || !strings.Contains(err.Error(), "spec.template.spec.volumes[0].image.reference: expected a string, found a list") {
		t.Errorf("reference not a string: err = %v", err)
	}
}

// A component without a volumes rule keeps no mounts.
func TestMountsWithoutVolumes(t *testing.T) {
	n := newNormalizer(t, Config{})
	in, err := n.Normalize(parseObj(t, `
apiVersion: serving.kserve.io/v1beta1
kind: InferenceService
metadata: {name: isvc, namespace: ml}
spec:
  predictor:
    volumes: [{name: shared, emptyDir: {}}]
    containers:
    - {name: a, image: "a:1", volumeMounts: [{name: shared, mountPath: /s}]}
    - {name: b, image: "b:1", volumeMounts: [{name: shared, mountPath: /t}]}
  transformer:
    containers:
    - {name: t, image: "t:1", volumeMounts: [{name: shared, mountPath: /s}]}
`), "cluster")
	if err != nil {
		t.Fatal(err)
	}
	pred, tr := in.Components[0], in.Components[1]
	if len(pred.Volumes) != 1 || pred.Containers[0].Mounts == nil || pred.Containers[1].Mounts == nil {
		t.Errorf("predictor: %+v", pred)
	}
	if tr.Name != "transformer" || tr.Volumes != nil || tr.Containers[0].Mounts != nil {
		t.Errorf("transformer: %+v", tr)
	}
}

// --- downloads: python -c, storage URIs, sh -c in args --------------------------

func TestRedactPythonScript(t *testing.T) {
	r := testRedactor(t)
	hf := "hf_" + strings.Repeat("aB3", 10)
	for _, tc := range []struct {
		name, prog, script, want string
	}{
		{"keywords kept by allow-list", "python3",
			`from huggingface_hub import snapshot_download, login; login(token="` + hf + `"); snapshot_download(repo_id="org/m", revision="abc123", local_dir="/models", token=os.environ["HF_TOKEN"], max_workers=8)`,
			`snapshot_download(local_dir="/models", repo_id="org/m", revision="abc123")`},
		{"a literal token keyword", "python",
			`import huggingface_hub as h; h.snapshot_download("org/m", token="` + hf + `")`,
			`snapshot_download("org/m")`},
		{"several calls, literal positionals", "/usr/bin/python3.11",
			`hf_hub_download("org/m", "config.json", revision="v1"); snapshot_download(repo_id=name)`,
			`hf_hub_download("org/m", "config.json", revision="v1"); snapshot_download()`},
		{"a token as a positional", "python3",
			`snapshot_download("org/m", "` + hf + `")`,
			`snapshot_download("org/m", "REDACTED")`},
		{"userinfo in a value", "python3",
			`snapshot_download(repo_id="org/m", local_dir="s3://k:v@bucket/m")`,
			`snapshot_download(local_dir="s3://REDACTED@bucket/m", repo_id="org/m")`},
		{"no such call", "python3",
			`import os; print(os.environ["HF_TOKEN"]); login(token="` + hf + `")`,
			`REDACTED`},
		{"a longer name is not the call", "python3",
			`my_snapshot_download(repo_id="org/secret-repo", token="t1")`,
			`REDACTED`},
		{"not python", "node",
			`snapshot_download(repo_id="org/m")`,
			`REDACTED`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, a := r.command([]string{tc.prog, "-c"}, []string{tc.script})
			if !reflect.DeepEqual(c, []string{tc.prog, "-c"}) || len(a) != 1 {
				t.Fatalf("shape: %q %q", c, a)
			}
			if a[0] != tc.want {
				t.Errorf("got  %s\nwant %s", a[0], tc.want)
			}
			if strings.Contains(a[0], hf) || strings.Contains(a[0], "login") || strings.Contains(a[0], "token") {
				t.Errorf("a credential survived: %s", a[0])
			}
		})
	}
	// The same in command only, and after a flag of the interpreter.
	c, _ := r.command([]string{"python3", "-u", "-c", `snapshot_download(repo_id="org/m", token="t1")`}, nil)
	if c[3] != `snapshot_download(repo_id="org/m")` {
		t.Errorf("python3 -u -c: %q", c)
	}
	// Inside a shell script, the python -c word is rewritten the same way.
	got := r.script(`pip install huggingface_hub && python -c 'from huggingface_hub import snapshot_download; snapshot_download(repo_id="org/m", token="`+hf+`")' && vllm serve /models --api-key k1`, true, 0)
	for _, want := range []string{"pip install huggingface_hub", `repo_id=`, "org/m", "vllm serve /models --api-key REDACTED"} {
		if !strings.Contains(got, want) {
			t.Errorf("%s lacks %s", got, want)
		}
	}
	if strings.Contains(got, hf) || strings.Contains(got, "token") || strings.Contains(got, "k1") {
		t.Errorf("a credential survived: %s", got)
	}
}

func TestRedactStorageURIValues(t *testing.T) {
	r := testRedactor(t)
	for _, tc := range []struct {
		name string
		args []string
		want []string
	}{
		{"s3 after a flag no rule reads", []string{"--source", "s3://bucket/models/m", "--dest", "/models"},
			[]string{"--source", "s3://bucket/models/m", "--dest", "REDACTED"}},
		{"userinfo and query stripped", []string{"--from", "gs://bob:pw1@bucket/m?X-Goog-Signature=abc&versionId=3"},
			[]string{"--from", "gs://REDACTED@bucket/m"}},
		{"hf", []string{"--repo", "hf://org/m"}, []string{"--repo", "hf://org/m"}},
		{"huggingface.co over https", []string{"--url", "https://huggingface.co/org/m"}, []string{"--url", "https://huggingface.co/org/m"}},
		{"other https is redacted", []string{"--url", "https://minio.local/bucket/m"}, []string{"--url", "REDACTED"}},
		{"a URI inside a value is not one", []string{"--conf", "x=s3://bucket/m"}, []string{"--conf", "REDACTED"}},
		{"an unknown scheme", []string{"--target", "ftp://host/m"}, []string{"--target", "REDACTED"}},
		{"after an unknown boolean flag", []string{"--no-sign-request", "s3://bucket/m", "/models"},
			[]string{"--no-sign-request", "s3://bucket/m", "/models"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, a := r.command([]string{"mc", "cp"}, tc.args)
			if !reflect.DeepEqual(c, []string{"mc", "cp"}) || !reflect.DeepEqual(a, tc.want) {
				t.Errorf("got %q %q\nwant %q", c, a, tc.want)
			}
		})
	}
}

func TestRedactShellInArgs(t *testing.T) {
	r := testRedactor(t)
	for _, tc := range []struct {
		name string
		args []string
		want []string
	}{
		{"sh -c", []string{"sh", "-c", "vllm serve org/m --api-key 'sk a b' --model org/m --tp 2"},
			[]string{"sh", "-c", "vllm serve org/m --api-key REDACTED --model org/m --tp 2"}},
		{"bash -exc with positional parameters", []string{"/bin/bash", "-exc", "serve --token x1 --model org/m", "name", "hf_" + strings.Repeat("aB3", 10)},
			[]string{"/bin/bash", "-exc", "serve --token REDACTED --model org/m", "name", "REDACTED"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, a := r.command(nil, tc.args)
			if c != nil || !reflect.DeepEqual(a, tc.want) {
				t.Errorf("got %q %q\nwant %q", c, a, tc.want)
			}
		})
	}
	for _, tc := range []struct {
		args []string
		want bool
	}{
		{[]string{"sh", "-c", "x"}, true},
		{[]string{"/usr/bin/bash", "-ec", "x"}, true},
		{[]string{"zsh", "-c", "x", "$0"}, true},
		{[]string{"sh", "-c"}, false},
		{[]string{"sh", "--c", "x"}, false},
		{[]string{"sh", "-e", "x"}, false},
		{[]string{"sh", "c", "x"}, false},
		{[]string{"python", "-c", "x"}, false},
		{[]string{"-c", "sh", "x"}, false},
	} {
		if got := cmdline.ShellArgs(tc.args); got != tc.want {
			t.Errorf("shellArgs(%q) = %v, want %v", tc.args, got, tc.want)
		}
	}
	// Args that are no shell: the script is the value of -c, a flag no rule
	// reads.
	_, a := r.command(nil, []string{"run", "-c", "vllm serve --model org/m"})
	if !reflect.DeepEqual(a, []string{"run", "-c", "REDACTED"}) {
		t.Errorf("run -c: %q", a)
	}
}
