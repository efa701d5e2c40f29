// Package transformer renders the CycloneDX 1.6 AI-BOM of a workload.
//
// Render is a pure function: a schemas.WorkloadChange in, a Result out, with no
// clock, network or randomness of its own. The same event and Config always
// give the same bytes and so the same BomHash.
//
// How an event becomes a BOM:
//
//	WorkloadChange
//	  -> tombstone, runtime template?            Result.Skipped, no BOM
//	  -> detect (rules.yaml, compiled once)       per component of the Inputs:
//	       image       imageref.ParseImage (schemas/imageref, shared with
//	                   the read side), then image patterns: an engine,
//	                   inferred; version from the tag (imageref.ParseVersion:
//	                   as published, 0.4.6.post1, with the
//	                   variant cu124/rocm/cpu/py3 as a property) or a
//	                   repository capture
//	       command     cmdline.ParseArgsWith (schemas/cmdline, the reader
//	                   redaction shares; sh -c scripts parsed by
//	                   mvdan.cc/sh, cached by text; $(VAR)/${VAR} from
//	                   allow-listed env, flags, positionals), then launch
//	                   patterns: declared
//	       fields      kind fields (backendFramework, modelFormat, runtimeVersion,
//	                   storageUri, ...): declared
//	       kind        DynamoGraphDeployment, NIMService, VLLMRuntime, ...
//	       roles       structural roles, refined by flags, args and labels
//	       settings    tensor/pipeline parallel size, quantization, ...
//	       models      flags, positionals, env, fields (a linked NIMCache's, the
//	                   LoRA adapters of a mounted ConfigMap, a preset's
//	                   catalog id), images named after the model they bake
//	                   in (NIM, models.images); a local path the server
//	                   loads is named by its source (source.go): the image
//	                   volume mounted there, or what a download command
//	                   (huggingface-cli, hf, snapshot_download, git clone,
//	                   aws s3 cp, s5cmd, gsutil, gcloud storage, KServe's
//	                   storage initializer and modelcar) put there, through
//	                   the volumes the containers share
//	       clients     a container that talks to a server elsewhere (vllm
//	                   bench, --base-url, OPENAI_BASE_URL) serves nothing:
//	                   no runtime from its image, its models stand for
//	                   nothing on their own
//	       defaults    the runtime an operator runs when its object names
//	                   none (KAITO's and Ray Serve LLM's vLLM, a Seldon
//	                   Model's MLServer or Triton by its requirements,
//	                   llmaz's vLLM), inferred
//	       configmaps  what a container takes from ConfigMaps the collector
//	                   read (env values, envFrom, mounted start scripts and
//	                   --config files) is read as its own env, script or flags
//	     wrappers (Dynamo, NIM, KServe huggingfaceserver) are paired with the
//	     engine they run: their backend
//	  -> serve? (serving.go, rules.yaml serving:) per container, the sum of
//	     weighted signals: an engine's launch, image, kind or a kind field
//	     (strong); the engine's word in a custom image or in the container's
//	     name, its env family (LLAMA_ARG_*), an engine-only flag, a model,
//	     an accelerator, a model server's probe path, a port (weak); idle,
//	     client, download, convert, training, one-shot and init (against).
//	     A workload serves when one container, or its kind, reaches the
//	     threshold; else Result.Skipped, no BOM. A BOM served on weak
//	     signals only says so: bomstream:serving=inferred, with its
//	     bomstream:serving:evidence. Explain shows every signal and weight.
//	  -> merge over the workload                  one runtime per engine, one
//	                                              model per id, one container per image
//	  -> no runtime and no model reference that   Result.Skipped, no BOM
//	     stands alone (org/name, store URI, model file, field, image)
//	  -> build cyclonedx-go structures             sorted, deterministic refs
//	  -> encode (appendBOM, 1.6)                   Result.BOM, Result.BomHash
//	       the bytes of cyclonedx-go's JSON encoder (compact, no HTML
//	       escaping) without its reflection; a BOM using fields appendBOM
//	       does not cover goes to that encoder
//
// The BOM: metadata.component is the workload (type application) with
// bomstream:* properties for its identity and inputHash; each serving engine
// is a component of type "application" (an engine is a running server, not a
// library a program links: CycloneDX's "framework" would misdescribe it);
// each model is a "machine-learning-model" with a pkg:huggingface purl when its
// id is a Hugging Face id (a pkg:oci purl, with its digest when pinned, when
// it is an OCI image or artifact), and bomstream:model:path when the
// server loads it from a local path; each image is a "container" with a pkg:oci purl.
// Dependencies run workload -> runtimes -> models and workload -> containers; a
// wrapper depends on the engine it runs; a model no engine uses hangs off the
// workload.
//
// Cuts are shown: each mark the collector left where it bounded the inputs
// (schemas.FieldTruncated) becomes a bomstream:truncated property, "locator:
// what was kept, whole sha256:...", on the container component when the cut
// is in a container, else on the workload. A BOM is bounded too
// (Config.MaxBOMBytes, 768 KiB): one that would be larger lists at most 16
// methods and locations in each evidence and, if still too large, only the
// models found first, saying so in bomstream:truncated properties of the
// workload.
//
// Every claim carries evidence: identity methods (technique manifest-analysis,
// the value that was seen) and occurrences whose location is the locator in
// the source object. Confidence is declared (1.0: a kind, a field or an
// explicit launch command named it), inferred (0.6: only an image name, a hint
// or an engine-only flag) or unresolved (0.2: a reference that could not be
// resolved), also given as the property bomstream:confidence.
//
// Detection rules are data: rules.yaml is embedded, and Config.RulesFile can
// replace or add runtimes by name. RuleSet.Arguments declares which flags'
// values the rules read; schemas/arguments.json, the collector's argument
// allow-list, is generated from it and a test fails when they drift.
//
// Stacks are data, not code: rules.yaml names each engine's images, launch
// commands, words, env families and flags, the kinds and fields that declare
// one, and the serving signals' weights; a new stack is a block of YAML and
// a manifest in testdata/manifests with its expectation.
//
// What is right is measured, not assumed: transformer/corpus judges the
// rendered BOMs of the real-world and upstream corpora (../shared) and of
// the project's own manifests against their expectation tables (make
// corpus); a miss fails unless known.yaml gives its reason.
//
// The code follows the pipeline: compile.go compiles the rules; detect.go
// runs them, one step per kind of rule (detect_images.go,
// detect_commands.go, detect_flags.go, detect_env.go, detect_roles.go,
// detect_fields.go, detect_defaults.go, detect_clients.go, source.go for
// downloads, detect_backends.go for the wrappers' engines), serving.go and
// serving_rules.go weigh the signals, explain.go tells the decision, and
// merge.go merges the claims; bom.go, components.go and evidence.go build the BOM.
// A Renderer memoizes (memo.go) what the rules say about image references,
// command heads, words and env names, the parse of scripts and the purls of
// model ids: bounded, pure functions of the string, so rendering a workload
// seen before matches no regex again without changing any answer.
//
// encode.go writes the BOM (appendBOM; encode_test.go holds it to
// cyclonedx-go's encoder, byte for byte). The rules allocate plainly, and
// the only memory a render leaves to the next is in state.go: the encode
// buffer and the BOM builder's lists, in one sync.Pool that only Render
// touches.
package transformer
