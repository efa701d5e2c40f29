// Package transformer renders the CycloneDX 1.6 AI-BOM of a workload.
//
// A [Renderer], built by [NewRenderer] from a [Config], compiles the detection
// rules once. [Renderer.Render] takes one [schemas.WorkloadChange] and returns
// a [Result]. It has no clock, network or randomness of its own. The same event
// and Config always give the same bytes, and so the same [Result.BomHash].
//
// A tombstone renders no BOM, and neither does a runtime template or a model
// cache: [Result.Skipped] says why ([SkipTombstone] and the other Skip
// reasons). Detection reads an event one component of its [schemas.Inputs] at a
// time. Image references are read by [imageref.ParseImage] and their tags by
// [imageref.ParseVersion]. Commands and shell scripts are read by
// [cmdline.ParseArgsWith], the reader the collector's redaction shares. The
// rules then match images, launch commands, flags, env, kinds and kind fields
// to engines, roles, settings and models. A model loaded from a local path is
// named by its source: an image volume, or a download command that wrote to a
// shared volume. A container that talks to a server elsewhere serves nothing,
// and an operator object that names no engine gets the one it runs by default.
// Wrappers such as Dynamo, NIM and KServe's huggingfaceserver are paired with
// the engine they run.
//
// Whether a container serves is a sum of weighted signals ([ServingRules]). An
// engine's launch command, image, kind or kind field is strong evidence. Weaker
// signals include a model, an accelerator, a model server's probe path, or a
// port. Idle, client, download, training and one-shot containers count against
// serving. A workload serves when its kind, or one container, reaches the
// threshold. A BOM that rests on weak signals only is marked
// bomstream:serving=inferred. [Renderer.Explain] shows every signal and its
// weight.
//
// The claims are then merged over the workload: one runtime per engine, one
// model per id, one container per image. A workload with no runtime and no
// model reference that stands alone is skipped too. The rest is built into a
// BOM with sorted, deterministic references, and encoded into [Result.BOM]. The
// bytes are those cyclonedx-go's JSON encoder would write.
//
// In the BOM, metadata.component is the workload, with bomstream:* properties
// for its identity and input hash. Each engine is a component of type
// "application", each model a "machine-learning-model", and each image a
// "container". Models carry a pkg:huggingface or pkg:oci purl where one
// applies, and images a pkg:oci purl. Dependencies run from the workload to
// runtimes to models, and from the workload to containers.
//
// Every claim carries evidence: the value that was seen, and its locator in the
// source object. Its confidence is declared (1.0), inferred (0.6) or unresolved
// (0.2), also given as the property bomstream:confidence. Each cut the
// collector made ([schemas.FieldTruncated]) becomes a bomstream:truncated
// property. A BOM larger than [Config.MaxBOMBytes] is cut too, and says so the
// same way.
//
// Detection rules are data. The built-in rules.yaml is embedded, and
// [Config.RulesFile] can replace or add runtimes by name. A new stack is a
// block of YAML and a test manifest. [RuleSet.Arguments] declares which flags'
// values the rules read. The collector keeps only those values, read from
// schemas/arguments.json, which is generated from the rules and held to them by
// a test.
//
// A Renderer is safe for concurrent use. It memoizes what the rules say about
// strings seen before, which never changes an answer, so a workload rendered
// again matches no regex again. The rendered corpora are judged against their
// expectation tables by transformer/corpus.
package transformer
