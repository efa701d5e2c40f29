package filters

import (
	"github.com/spf13/pflag"
)

// Flags are find's filters and its output format.
type Flags struct {
	models, runtimes, digests, images, clusters, namespaces, kinds, states []string
	unpinned, inferredOnly, findings                                       bool
	changedSince, at                                                       string
	// Output is table, json or csv (report.Formats).
	Output string
}

// Bind adds the flags to f.
func (ff *Flags) Bind(f *pflag.FlagSet) {
	f.StringArrayVar(&ff.models, "model", nil, "model id or glob, e.g. 'meta-llama/*' (repeatable: any)")
	f.StringArrayVar(&ff.runtimes, "runtime", nil, "runtime and version range, e.g. vllm, 'vllm<0.8.5', 'sglang>=0.4,<0.5' (repeatable: any)")
	f.StringArrayVar(&ff.digests, "digest", nil, "image digest sha256:<hex>, or 12+ hex digits of it (repeatable: any)")
	f.StringArrayVar(&ff.images, "image", nil, "image reference (vllm/vllm-openai, ...:v0.8.5) or glob (repeatable: any)")
	f.StringArrayVar(&ff.clusters, "cluster", nil, "cluster (repeatable: any)")
	f.StringArrayVarP(&ff.namespaces, "namespace", "n", nil, "namespace (repeatable: any)")
	f.StringArrayVar(&ff.kinds, "kind", nil, "workload kind, e.g. Deployment (repeatable: any)")
	f.StringArrayVar(&ff.states, "state", nil, "serving (default), deleted, not-serving, gone or all")
	f.BoolVar(&ff.unpinned, "unpinned", false, "only workloads serving a model without a pinned revision")
	f.BoolVar(&ff.inferredOnly, "inferred-only", false, "only workloads whose runtime is only inferred from an image")
	f.StringVar(&ff.changedSince, "changed-since", "", "only workloads changed since TIME (RFC 3339, a date, or a duration ago such as 72h)")
	f.StringVar(&ff.at, "at", "", "the inventory at TIME instead of now")
	f.StringVarP(&ff.Output, "output", "o", "table", "table, json or csv")
}

// FindingsUsage is the help of find's --findings.
const FindingsUsage = "only workloads with open policy findings, with the findings (in -o json, under notes.findings)"

// BindFindings adds --findings, which Fields then gives as findings=true,
// the API's findings filter (api.FindingsField): `kubectl bomstream find`
// binds it; `bomstream find` binds its own, answered from FINDINGS.
func (ff *Flags) BindFindings(f *pflag.FlagSet) {
	f.BoolVar(&ff.findings, "findings", false, FindingsUsage)
}

// Fields is the query the flags of f set, as inventory.ParseQuery reads
// it (api.ParseQuery with --findings) and as the API's query parameters:
// field name to values.
func (ff *Flags) Fields(f *pflag.FlagSet) map[string][]string {
	out := map[string][]string{}
	lists := map[string][]string{"model": ff.models, "runtime": ff.runtimes, "digest": ff.digests, "image": ff.images,
		"cluster": ff.clusters, "namespace": ff.namespaces, "kind": ff.kinds, "state": ff.states}
	for k, v := range lists {
		if len(v) > 0 {
			out[k] = v
		}
	}
	for k, v := range map[string]string{"changed-since": ff.changedSince, "at": ff.at} {
		if f.Changed(k) {
			out[k] = []string{v}
		}
	}
	for k, v := range map[string]bool{"unpinned": ff.unpinned, "inferred-only": ff.inferredOnly, "findings": ff.findings} {
		if v {
			out[k] = []string{"true"}
		}
	}
	return out
}
