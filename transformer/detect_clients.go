package transformer

import (
	"github.com/bomstream/bomstream/schemas"

	"github.com/bomstream/bomstream/schemas/cmdline"
)

// isClient reports whether a container talks to a model server elsewhere
// rather than serving: it runs an engine's client command (vllm bench), or
// passes a client flag (--base-url, --target) or env (OPENAI_BASE_URL).
// heads holds each invocation's rule matches.
func (r *rules) isClient(ct *schemas.Container, invs []cmdline.Invocation, heads []*invInfo) bool {
	for ii := range invs {
		if heads[ii].client {
			return true
		}
		for _, f := range invs[ii].Flags {
			if fr := r.flags[f.Name]; fr != nil && fr.client {
				return true
			}
		}
	}
	for _, e := range ct.Env {
		if r.clientEnvName(e.Name) {
			return true
		}
	}
	for _, src := range ct.EnvFrom {
		for _, e := range src.Env {
			if r.clientEnvName(e.Name) {
				return true
			}
		}
	}
	// Benchmarks and clients of any server, and their images.
	for ii := range invs {
		if invs[ii].Program != "" && heads[ii].kind == sigClient {
			return true
		}
	}
	return ct.Image != "" && r.image(ct.Image).clientImage
}

// clientEnvName reports whether an env name marks a client of a server
// elsewhere (models.clientEnv), remembered by the Renderer.
func (r *rules) clientEnvName(name string) bool {
	return r.memo.clientEnv.get(name, r.matchClientEnv)
}

// matchClientEnv matches an env name against models.clientEnv, unless
// models.clientEnvNot matches it too.
func (r *rules) matchClientEnv(name string) bool {
	if matchAny(r.clientEnvNot, name) {
		return false
	}
	for _, re := range r.clientEnv {
		if re.MatchString(name) {
			return true
		}
	}
	return false
}
