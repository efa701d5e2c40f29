package transformer

import (
	"slices"
	"strings"
	"testing"

	"github.com/bomstream/bomstream/schemas"
)

// Where a model served from a local path comes from (source.go): downloads
// by another container (or an earlier command), image volumes, modelcars.

const (
	initLoc   = "spec.template.spec.initContainers[0]"
	serverLoc = "spec.template.spec.containers[0]"
)

// podOf is a Deployment whose one component has the volumes vols and the
// containers cs, with their locators as given.
func podOf(vols []schemas.Volume, cs ...schemas.Container) *schemas.Inputs {
	return &schemas.Inputs{Workload: wl("Deployment", "pod"), Components: []schemas.Component{{
		Name: "main", Locator: "spec.template", Containers: cs, Volumes: vols,
	}}}
}

// emptyDirs are volumes that are no image volume, named names.
func emptyDirs(names ...string) []schemas.Volume {
	var out []schemas.Volume
	for i, n := range names {
		out = append(out, schemas.Volume{Name: n, Locator: "spec.template.spec.volumes[" + string(rune('0'+i)) + "]"})
	}
	return out
}

func mnt(vol, path string) schemas.Mount { return schemas.Mount{Volume: vol, Path: path} }

// downloader is an init container running command (and args).
func downloader(image string, command, args []string, mounts ...schemas.Mount) schemas.Container {
	return schemas.Container{Name: "fetch", Locator: initLoc, Init: true, Image: image, Command: command, Args: args, Mounts: mounts}
}

// vllmServer serves model with vllm serve.
func vllmServer(model string, mounts ...schemas.Mount) schemas.Container {
	return schemas.Container{Name: "vllm", Locator: serverLoc, Image: "vllm/vllm-openai:v0.9.2", Command: []string{"vllm", "serve", model}, Mounts: mounts}
}

func modelsOf(d *bomDoc) []docComp {
	if d == nil {
		return nil
	}
	return d.byType("machine-learning-model")
}

func modelNames(d *bomDoc) []string {
	var out []string
	for _, m := range modelsOf(d) {
		out = append(out, m.Name)
	}
	return out
}

// onlyModel is the one model of d; it fails when there is not exactly one.
func onlyModel(t *testing.T, d *bomDoc) docComp {
	t.Helper()
	if d == nil {
		t.Fatal("no BOM")
	}
	ms := modelsOf(d)
	if len(ms) != 1 {
		t.Fatalf("want one model, got %v", modelNames(d))
	}
	return ms[0]
}

func locations(c docComp) []string {
	var out []string
	for _, o := range c.Evidence.Occurrences {
		out = append(out, o.Location)
	}
	return out
}

func methodValues(c docComp) []string {
	var out []string
	for _, id := range c.Evidence.Identity {
		for _, m := range id.Methods {
			out = append(out, m.Value)
		}
	}
	return out
}

// hasLocUnder reports an occurrence at prefix or below it.
func hasLocUnder(c docComp, prefix string) bool {
	for _, l := range locations(c) {
		if l == prefix || strings.HasPrefix(l, prefix+".") {
			return true
		}
	}
	return false
}

func hasMethodPrefix(c docComp, prefix string) bool {
	for _, v := range methodValues(c) {
		if strings.HasPrefix(v, prefix) {
			return true
		}
	}
	return false
}

// servedBy checks that the runtime name depends on the model m.
func servedBy(t *testing.T, d *bomDoc, name string, m docComp) {
	t.Helper()
	rt, ok := d.runtime(name)
	if !ok {
		t.Fatalf("no runtime %s", name)
	}
	if !slices.Contains(d.dependsOn(rt.BOMRef), m.BOMRef) {
		t.Errorf("%s depends on %v, want %s", name, d.dependsOn(rt.BOMRef), m.BOMRef)
	}
}

func TestDownloadLinkedToServer(t *testing.T) {
	data := emptyDirs("data")
	sh := func(script string) []string { return []string{"sh", "-c", script} }
	for _, tc := range []struct {
		name       string
		fetch      schemas.Container
		serverPath string
		model      string
		kind, purl string
		revision   string
		how        string // the download method's value starts with it
	}{
		{
			name:       "huggingface-cli --local-dir --revision",
			fetch:      downloader("python:3.12-slim", []string{"huggingface-cli", "download", "Qwen/Qwen3-0.6B", "--local-dir", "/data/qwen", "--revision", "c1899de"}, nil, mnt("data", "/data")),
			serverPath: "/data/qwen",
			model:      "Qwen/Qwen3-0.6B", kind: "huggingface", purl: "pkg:huggingface/Qwen/Qwen3-0.6B@c1899de", revision: "c1899de",
			how: "download huggingface-cli Qwen/Qwen3-0.6B",
		},
		{
			name:       "hf download --revision=X in a script",
			fetch:      downloader("python:3.12-slim", sh(`pip install -U huggingface_hub && hf download google/gemma-3-4b-it --revision=c3d4e5f --exclude "*.gguf" --local-dir=/data/gemma`), nil, mnt("data", "/data")),
			serverPath: "/data/gemma",
			model:      "google/gemma-3-4b-it", kind: "huggingface", purl: "pkg:huggingface/google/gemma-3-4b-it@c3d4e5f", revision: "c3d4e5f",
			how: "download huggingface-cli google/gemma-3-4b-it",
		},
		{
			// What the collector leaves of python -c: only the call.
			name:       "python -c snapshot_download",
			fetch:      downloader("python:3.11-slim", []string{"python", "-c", "snapshot_download(repo_id='mistralai/Mistral-7B-Instruct-v0.3', revision='5f6e7d8', local_dir='/data/mistral')"}, nil, mnt("data", "/data")),
			serverPath: "/data/mistral",
			model:      "mistralai/Mistral-7B-Instruct-v0.3", kind: "huggingface", purl: "pkg:huggingface/mistralai/Mistral-7B-Instruct-v0.3@5f6e7d8", revision: "5f6e7d8",
			how: "download huggingface-hub snapshot_download mistralai/Mistral-7B-Instruct-v0.3",
		},
		{
			name:       "git clone into a directory",
			fetch:      downloader("alpine/git:2.45.2", sh("git lfs install && git clone https://huggingface.co/BAAI/bge-reranker-base /data/bge"), nil, mnt("data", "/data")),
			serverPath: "/data/bge",
			model:      "BAAI/bge-reranker-base", kind: "huggingface", purl: "pkg:huggingface/BAAI/bge-reranker-base",
			how: "download git-clone https://huggingface.co/BAAI/bge-reranker-base",
		},
		{
			name:       "aws s3 cp --recursive",
			fetch:      downloader("amazon/aws-cli:2.17.0", []string{"aws", "s3", "cp", "--recursive", "s3://acme-models/llama-3.1-8b", "/data/llama"}, nil, mnt("data", "/data")),
			serverPath: "/data/llama",
			model:      "s3://acme-models/llama-3.1-8b", kind: "s3",
			how: "download aws-s3 s3://acme-models/llama-3.1-8b",
		},
		{
			name:       "s5cmd cp with a quoted wildcard",
			fetch:      downloader("peakcom/s5cmd:v2.2.2", sh("/s5cmd cp 's3://acme-models/qwen/*' /data/qwen/"), nil, mnt("data", "/data")),
			serverPath: "/data/qwen",
			model:      "s3://acme-models/qwen", kind: "s3",
			how: "download s5cmd s3://acme-models/qwen",
		},
		{
			name:       "gsutil -m cp -r",
			fetch:      downloader("google/cloud-sdk:slim", []string{"gsutil", "-m", "cp", "-r", "gs://acme-models/gemma-2b", "/data/gemma"}, nil, mnt("data", "/data")),
			serverPath: "/data/gemma",
			model:      "gs://acme-models/gemma-2b", kind: "gcs",
			how: "download gsutil gs://acme-models/gemma-2b",
		},
		{
			name:       "gcloud storage cp -r",
			fetch:      downloader("google/cloud-sdk:slim", []string{"gcloud", "storage", "cp", "-r", "gs://acme-models/gemma-2-9b-it", "/data/gemma"}, nil, mnt("data", "/data")),
			serverPath: "/data/gemma",
			model:      "gs://acme-models/gemma-2-9b-it", kind: "gcs",
			how: "download gcloud-storage gs://acme-models/gemma-2-9b-it",
		},
		{
			// KServe's storage initializer gives only args: <storageUri> <dir>.
			name:       "kserve storage-initializer args only",
			fetch:      downloader("kserve/storage-initializer:v0.15.2", nil, []string{"gs://kfserving-examples/models/llama", "/mnt/models"}, mnt("data", "/mnt/models")),
			serverPath: "/mnt/models",
			model:      "gs://kfserving-examples/models/llama", kind: "gcs",
			how: "download storage-initializer gs://kfserving-examples/models/llama",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, d := render(t, podOf(data, tc.fetch, vllmServer(tc.serverPath, mnt("data", tc.fetch.Mounts[0].Path))))
			m := onlyModel(t, d)
			mustModel(t, d, tc.model, tc.kind, tc.purl)
			if got := m.prop("model:revision"); got != tc.revision {
				t.Errorf("revision %q, want %q", got, tc.revision)
			}
			if unpinned := m.prop("model:unpinned") == "true"; unpinned != (tc.revision == "") {
				t.Errorf("unpinned %v with revision %q", unpinned, tc.revision)
			}
			if tc.revision != "" && m.Version != tc.revision {
				t.Errorf("version %q, want %q", m.Version, tc.revision)
			}
			if got := m.prop("model:path"); got != tc.serverPath {
				t.Errorf("model:path %q, want %q", got, tc.serverPath)
			}
			if m.prop("confidence") != "declared" {
				t.Errorf("confidence %q", m.prop("confidence"))
			}
			// Evidence from both containers: the download and the path.
			if !hasLocUnder(m, initLoc) || !hasLocUnder(m, serverLoc) {
				t.Errorf("occurrences %v, want both containers", locations(m))
			}
			if !hasMethodPrefix(m, tc.how) || !slices.Contains(methodValues(m), "path "+tc.serverPath) {
				t.Errorf("methods %v", methodValues(m))
			}
			servedBy(t, d, "vllm", m)
			if !slices.Equal(res.Summary.Models, []string{tc.model}) {
				t.Errorf("summary models %v", res.Summary.Models)
			}
		})
	}
}

func TestDownloadGitClone(t *testing.T) {
	data := emptyDirs("data")
	t.Run("default directory relative to cd, pinned by git checkout", func(t *testing.T) {
		fetch := downloader("alpine/git:2.45.2", []string{"sh", "-c", "cd /data && git clone https://huggingface.co/BAAI/bge-m3 && cd bge-m3 && git checkout 5617a9f"}, nil, mnt("data", "/data"))
		_, d := render(t, podOf(data, fetch, vllmServer("/data/bge-m3", mnt("data", "/data"))))
		m := onlyModel(t, d)
		mustModel(t, d, "BAAI/bge-m3", "huggingface", "pkg:huggingface/BAAI/bge-m3@5617a9f")
		if m.prop("model:revision") != "5617a9f" || m.prop("model:path") != "/data/bge-m3" || m.prop("model:unpinned") != "" {
			t.Errorf("props %v", m.Properties)
		}
		if !hasLocUnder(m, initLoc) || !hasLocUnder(m, serverLoc) {
			t.Errorf("occurrences %v", locations(m))
		}
	})
	t.Run("default directory elsewhere is not the server's", func(t *testing.T) {
		// Cloned into /tmp/bge-m3; the server reads /data/bge-m3.
		fetch := downloader("alpine/git:2.45.2", []string{"sh", "-c", "cd /tmp && git clone https://huggingface.co/BAAI/bge-m3"}, nil, mnt("data", "/data"))
		_, d := render(t, podOf(data, fetch, vllmServer("/data/bge-m3", mnt("data", "/data"))))
		mustModel(t, d, "/data/bge-m3", "path", "")
		m := mustModel(t, d, "BAAI/bge-m3", "huggingface", "pkg:huggingface/BAAI/bge-m3")
		if hasLocUnder(m, serverLoc) {
			t.Errorf("unlinked clone has the server's occurrence: %v", locations(m))
		}
	})
	t.Run("--branch pins the revision", func(t *testing.T) {
		fetch := downloader("alpine/git:2.45.2", []string{"git", "clone", "--single-branch", "--branch", "v1.0", "https://huggingface.co/BAAI/bge-m3.git", "/data/bge"}, nil, mnt("data", "/data"))
		_, d := render(t, podOf(data, fetch, vllmServer("/data/bge", mnt("data", "/data"))))
		m := onlyModel(t, d)
		mustModel(t, d, "BAAI/bge-m3", "huggingface", "pkg:huggingface/BAAI/bge-m3@v1.0")
		if m.prop("model:revision") != "v1.0" || m.prop("model:path") != "/data/bge" {
			t.Errorf("props %v", m.Properties)
		}
	})
	t.Run("a checkout with no clone before it pins nothing", func(t *testing.T) {
		fetch := downloader("alpine/git:2.45.2", []string{"sh", "-c", "git checkout abc && hf download org/x --local-dir /data/x"}, nil, mnt("data", "/data"))
		_, d := render(t, podOf(data, fetch, vllmServer("/data/x", mnt("data", "/data"))))
		m := onlyModel(t, d)
		if m.Name != "org/x" || m.prop("model:revision") != "" || m.prop("model:unpinned") != "true" {
			t.Errorf("model %s props %v", m.Name, m.Properties)
		}
	})
}

func TestKServeModelcar(t *testing.T) {
	image := "quay.io/redhat-ai-services/modelcar-catalog:granite-3.3-8b-instruct"
	in := podOf(emptyDirs("kserve-provision-location"),
		schemas.Container{Name: "kserve-container", Locator: serverLoc, Image: "vllm/vllm-openai:v0.9.2",
			Command: []string{"vllm", "serve", "/mnt/models", "--served-model-name", "granite"},
			Mounts:  []schemas.Mount{mnt("kserve-provision-location", "/mnt")}},
		schemas.Container{Name: "modelcar", Locator: "spec.template.spec.containers[1]", Image: image,
			Args:   []string{"sh", "-c", "ln -sf /proc/$$/root/models /mnt/models && sleep infinity"},
			Mounts: []schemas.Mount{mnt("kserve-provision-location", "/mnt")}},
	)
	_, d := render(t, in)
	m := onlyModel(t, d)
	mustModel(t, d, "oci://"+image, "oci", "pkg:oci/modelcar-catalog?repository_url=quay.io/redhat-ai-services/modelcar-catalog&tag=granite-3.3-8b-instruct")
	if m.Version != "granite-3.3-8b-instruct" || m.prop("model:path") != "/mnt/models" || m.prop("model:unpinned") != "true" {
		t.Errorf("model %+v", m)
	}
	if !hasLocUnder(m, "spec.template.spec.containers[1]") || !hasLocUnder(m, serverLoc) {
		t.Errorf("occurrences %v", locations(m))
	}
	if !hasMethodPrefix(m, "download modelcar oci://"+image) {
		t.Errorf("methods %v", methodValues(m))
	}
	servedBy(t, d, "vllm", m)
	mustRuntime(t, d, "vllm", "0.9.2", "declared")
}

func TestDownloadPathsThroughVolumes(t *testing.T) {
	hfTo := func(dest string, mounts ...schemas.Mount) schemas.Container {
		return downloader("python:3.12-slim", []string{"huggingface-cli", "download", "Qwen/Qwen3-0.6B", "--local-dir", dest}, nil, mounts...)
	}
	linked := func(t *testing.T, d *bomDoc, serverPath string) {
		t.Helper()
		m := onlyModel(t, d)
		mustModel(t, d, "Qwen/Qwen3-0.6B", "huggingface", "pkg:huggingface/Qwen/Qwen3-0.6B")
		if !hasLocUnder(m, initLoc) || !hasLocUnder(m, serverLoc) {
			t.Errorf("occurrences %v", locations(m))
		}
		if !slices.Contains(methodValues(m), "path "+serverPath) {
			t.Errorf("methods %v", methodValues(m))
		}
		servedBy(t, d, "vllm", m)
	}
	unlinkedAt := func(t *testing.T, d *bomDoc, serverPath, dlPURL string) {
		t.Helper()
		if got := modelNames(d); len(got) != 2 {
			t.Fatalf("models %v, want the download and the path apart", got)
		}
		p := mustModel(t, d, serverPath, "path", "")
		dl := mustModel(t, d, "Qwen/Qwen3-0.6B", "huggingface", dlPURL)
		if p.prop("model:path") != "" || hasLocUnder(dl, serverLoc) || hasLocUnder(p, initLoc) {
			t.Errorf("path %+v download %+v", p, dl)
		}
		servedBy(t, d, "vllm", p)
	}
	unlinked := func(t *testing.T, d *bomDoc, serverPath string) {
		t.Helper()
		unlinkedAt(t, d, serverPath, "pkg:huggingface/Qwen/Qwen3-0.6B")
	}
	t.Run("same volume mounted at other paths", func(t *testing.T) {
		_, d := render(t, podOf(emptyDirs("data"), hfTo("/work/qwen", mnt("data", "/work")), vllmServer("/models/qwen", mnt("data", "/models"))))
		linked(t, d, "/models/qwen")
	})
	t.Run("a file below the downloaded directory", func(t *testing.T) {
		_, d := render(t, podOf(emptyDirs("data"), hfTo("/work/qwen", mnt("data", "/work")), vllmServer("/models/qwen/config.json", mnt("data", "/models"))))
		linked(t, d, "/models/qwen/config.json")
	})
	t.Run("different volumes", func(t *testing.T) {
		_, d := render(t, podOf(emptyDirs("a", "b"), hfTo("/work/qwen", mnt("a", "/work")), vllmServer("/models/qwen", mnt("b", "/models"))))
		unlinked(t, d, "/models/qwen")
	})
	t.Run("subPath mount of the downloaded directory", func(t *testing.T) {
		sub := schemas.Mount{Volume: "data", Path: "/models", SubPath: "qwen"}
		_, d := render(t, podOf(emptyDirs("data"), hfTo("/work/qwen", mnt("data", "/work")), vllmServer("/models", sub)))
		linked(t, d, "/models")
	})
	t.Run("subPath mount of another directory", func(t *testing.T) {
		sub := schemas.Mount{Volume: "data", Path: "/models", SubPath: "other"}
		_, d := render(t, podOf(emptyDirs("data"), hfTo("/work/qwen", mnt("data", "/work")), vllmServer("/models", sub)))
		unlinked(t, d, "/models")
	})
	t.Run("downloader's subPath", func(t *testing.T) {
		// The init container sees the volume's qwen directory at /dl.
		sub := schemas.Mount{Volume: "data", Path: "/dl", SubPath: "qwen"}
		_, d := render(t, podOf(emptyDirs("data"), hfTo("/dl", sub), vllmServer("/models/qwen", mnt("data", "/models"))))
		linked(t, d, "/models/qwen")
	})
	t.Run("server path outside the download", func(t *testing.T) {
		_, d := render(t, podOf(emptyDirs("data"), hfTo("/data/qwen", mnt("data", "/data")), vllmServer("/data/other", mnt("data", "/data"))))
		unlinked(t, d, "/data/other")
	})
	t.Run("a sibling with the download's name as prefix", func(t *testing.T) {
		_, d := render(t, podOf(emptyDirs("data"), hfTo("/data/qwen", mnt("data", "/data")), vllmServer("/data/qwen2", mnt("data", "/data"))))
		unlinked(t, d, "/data/qwen2")
	})
	t.Run("no mounts: paths compared as written", func(t *testing.T) {
		_, d := render(t, podOf(nil, hfTo("/data/qwen"), vllmServer("/data/qwen")))
		linked(t, d, "/data/qwen")
		m := onlyModel(t, d)
		if m.prop("model:path") != "/data/qwen" {
			t.Errorf("model:path %q", m.prop("model:path"))
		}
	})
	t.Run("only one of them mounts the volume", func(t *testing.T) {
		_, d := render(t, podOf(emptyDirs("data"), hfTo("/data/qwen", mnt("data", "/data")), vllmServer("/data/qwen")))
		unlinked(t, d, "/data/qwen")
	})
	t.Run("an earlier command of the same container", func(t *testing.T) {
		// The download is in the script; the server is given the path by env.
		_, d := render(t, podOf(nil, schemas.Container{Name: "tgi", Locator: serverLoc, Image: "ghcr.io/huggingface/text-generation-inference:3.3.5",
			Command: []string{"sh", "-c", "hf download org/x --revision r1 --local-dir /m && exec text-generation-launcher"},
			Env:     []schemas.EnvVar{{Name: "MODEL_ID", Value: "/m"}}}))
		m := onlyModel(t, d)
		mustModel(t, d, "org/x", "huggingface", "pkg:huggingface/org/x@r1")
		if m.prop("model:path") != "/m" || !slices.Contains(locations(m), serverLoc+".env[0]") || !slices.Contains(locations(m), serverLoc+".command[2]") {
			t.Errorf("model %v %v", m.Properties, locations(m))
		}
		servedBy(t, d, "tgi", m)
	})
	t.Run("download to the HF cache is its own model", func(t *testing.T) {
		fetch := downloader("python:3.12-slim", []string{"huggingface-cli", "download", "Qwen/Qwen3-0.6B", "--revision", "abc"}, nil, mnt("data", "/data"))
		_, d := render(t, podOf(emptyDirs("data"), fetch, vllmServer("/data/qwen", mnt("data", "/data"))))
		unlinkedAt(t, d, "/data/qwen", "pkg:huggingface/Qwen/Qwen3-0.6B@abc")
		dl, _ := d.model("Qwen/Qwen3-0.6B")
		if dl.prop("model:path") != "" || dl.prop("model:revision") != "abc" {
			t.Errorf("cache download %+v", dl)
		}
	})
	t.Run("a download job alone serves nothing", func(t *testing.T) {
		in := podOf(nil, downloader("python:3.12-slim", []string{"huggingface-cli", "download", "Qwen/Qwen3-0.6B", "--local-dir", "/data/q"}, nil))
		in.Workload.Kind = "Job"
		if res, _ := render(t, in); res.BOM != nil || res.Skipped != SkipNothing {
			t.Errorf("a download job got a BOM: %+v", res.Summary)
		}
	})
}

func TestImageVolumeModels(t *testing.T) {
	digest := "sha256:" + strings.Repeat("ab", 32)
	imgVol := func(name, ref string) schemas.Volume {
		return schemas.Volume{Name: name, Locator: "spec.template.spec.volumes[0]", Image: ref}
	}
	t.Run("server path under an image volume, by tag", func(t *testing.T) {
		_, d := render(t, podOf([]schemas.Volume{imgVol("model", "quay.io/acme/qwen3-model:v1")}, vllmServer("/models/qwen", mnt("model", "/models"))))
		m := onlyModel(t, d)
		mustModel(t, d, "oci://quay.io/acme/qwen3-model:v1", "oci", "pkg:oci/qwen3-model?repository_url=quay.io/acme/qwen3-model&tag=v1")
		if m.Version != "v1" || m.prop("model:unpinned") != "true" || m.prop("model:digest") != "" || m.prop("model:path") != "/models/qwen" {
			t.Errorf("model %+v", m)
		}
		if m.prop("confidence") != "declared" || !hasLocUnder(m, "spec.template.spec.volumes[0]") || !hasLocUnder(m, serverLoc) {
			t.Errorf("confidence %q occurrences %v", m.prop("confidence"), locations(m))
		}
		servedBy(t, d, "vllm", m)
	})
	t.Run("by digest", func(t *testing.T) {
		ref := "quay.io/acme/qwen3-model@" + digest
		_, d := render(t, podOf([]schemas.Volume{imgVol("model", ref)}, vllmServer("/models", mnt("model", "/models"))))
		m := onlyModel(t, d)
		mustModel(t, d, "oci://"+ref, "oci", "pkg:oci/qwen3-model@sha256%3A"+strings.Repeat("ab", 32)+"?repository_url=quay.io/acme/qwen3-model")
		if m.Version != digest || m.prop("model:unpinned") != "" || m.prop("model:digest") != digest || m.prop("model:path") != "/models" {
			t.Errorf("model %+v", m)
		}
	})
	t.Run("a path outside the image volume stays a path", func(t *testing.T) {
		vols := []schemas.Volume{imgVol("model", "quay.io/acme/qwen3-model:v1"), {Name: "cache", Locator: "spec.template.spec.volumes[1]"}}
		_, d := render(t, podOf(vols, vllmServer("/cache/qwen", mnt("model", "/models"), mnt("cache", "/cache"))))
		mustModel(t, d, "/cache/qwen", "path", "")
		// The volume is still listed: weak, inferred.
		v := mustModel(t, d, "oci://quay.io/acme/qwen3-model:v1", "oci", "pkg:oci/qwen3-model?repository_url=quay.io/acme/qwen3-model&tag=v1")
		if v.prop("confidence") != "inferred" || v.prop("model:path") != "/models" {
			t.Errorf("unnamed image volume %+v", v)
		}
	})
	t.Run("an image volume no claim names is a weak model", func(t *testing.T) {
		_, d := render(t, podOf([]schemas.Volume{imgVol("extra", "quay.io/acme/extra:v2")}, vllmServer("Qwen/Qwen3-0.6B", mnt("extra", "/extra"))))
		v := mustModel(t, d, "oci://quay.io/acme/extra:v2", "oci", "pkg:oci/extra?repository_url=quay.io/acme/extra&tag=v2")
		if v.prop("confidence") != "inferred" || v.prop("model:path") != "/extra" || v.Evidence.Identity[0].Confidence != 0.6 {
			t.Errorf("weak image volume %+v", v)
		}
		mustModel(t, d, "Qwen/Qwen3-0.6B", "huggingface", "pkg:huggingface/Qwen/Qwen3-0.6B")
	})
	t.Run("an image volume alone makes no BOM", func(t *testing.T) {
		in := podOf([]schemas.Volume{imgVol("model", "quay.io/acme/qwen3-model:v1")},
			schemas.Container{Name: "app", Locator: serverLoc, Image: "busybox:1.36", Command: []string{"sleep", "infinity"}, Mounts: []schemas.Mount{mnt("model", "/models")}})
		res, d := render(t, in)
		if res.BOM != nil || d != nil || res.Skipped != SkipNothing {
			t.Errorf("image volume alone: skipped %q, BOM %s", res.Skipped, res.BOM)
		}
	})
	t.Run("an image volume nobody mounts is not listed", func(t *testing.T) {
		_, d := render(t, podOf([]schemas.Volume{imgVol("model", "quay.io/acme/qwen3-model:v1")}, vllmServer("Qwen/Qwen3-0.6B")))
		if got := modelNames(d); !slices.Equal(got, []string{"Qwen/Qwen3-0.6B"}) {
			t.Errorf("models %v", got)
		}
	})
}
