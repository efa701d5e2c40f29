// Package versions compares the runtime versions bomstream renders and
// reads the version ranges `bomstream find --runtime` takes.
//
// A runtime's version in a BOM is what the transformer read from an image
// tag or a version field with [imageref.ParseVersion]: the release as its
// project publishes it (0.8.5, 0.4.6.post1, 0.5.0rc2, 1.0.0-rc.1, 24.08),
// never the build variant (cu126, rocm, cpu). Parse reads the same strings,
// and a raw tag too (v0.5.2-cu126 is 0.5.2: the variant is dropped by that
// same parser), and orders them as PEP 440 does, which the Python engines
// (vLLM, SGLang, TensorRT-LLM, LMDeploy) follow and which agrees with
// semver on plain releases:
//
//	1.0.dev1 < 1.0a1 < 1.0b2 < 1.0rc1 < 1.0rc1.post1 < 1.0 == 1.0.0 < 1.0.post1 < 1.0.1
//
// A semver pre-release (-rc.1, -beta2, -alpha) is read as the PEP 440
// one. Missing release parts are zeros.
//
// A Range is a runtime name and constraints joined by commas, all of which
// must hold: "vllm<0.8.5", "sglang>=0.4,<0.5", "tgi==3.3.4", or just
// "vllm" (any version). Operators: < <= > >= == = !=.
//
// A version that cannot be parsed (no version at all, "latest",
// "nightly-2f9e1b3c", a date such as 2024.05.01 or 2025-05-05-v1) never
// matches a Range that has constraints, not even "!=": nobody can say
// which side of 0.8.5 "latest" is, and a range query must not report it
// as inside (nor hide it as outside: find lists such runtimes with the
// bare name, "vllm", whose Range has no constraint).
package versions
