// Package kyverno holds the Kyverno policies of docs/signing.md, which
// admit a model-serving pod only when its images carry a verified
// bomstream AI-BOM attestation, and their test: each policy passes a
// server-side dry-run apply (strict field validation) against a real API
// server with Kyverno's CRDs installed, the CRDs read from the
// github.com/kyverno/kyverno module as the Go module proxy serves it.
package kyverno
