// Package api serves the inventory read-only over HTTP, as JSON:
//
//	GET /api/v1/workloads?FIELD=VALUE...&limit=N&continue=TOKEN
//	    the workloads a query selects (inventory.Fields, the same names
//	    and meaning as `bomstream find`'s flags), in name order, a page at a
//	    time: {"items": [...], "total": N, "continue": "..."}; with
//	    findings=true only those with open policy findings, each with them
//	    under notes.findings (`find --findings`; Server.FilterFindings)
//	GET /api/v1/workloads/{cluster}/{namespace}/{kind}/{name}[?at=TIME]
//	    one workload (namespace "-" when cluster-scoped) with every version
//	GET /api/v1/workloads/{cluster}/{namespace}/{kind}/{name}/bom[?at=TIME|version=CHANGESEQ]
//	    the CycloneDX BOM in effect (or that version's), read from BOMS by
//	    its sequence
//	GET /api/v1/status
//	    what the index holds
//
// Other packages add routes with Server.Handle (policy findings add
// /api/v1/findings) and query fields with Server.Extend; both go through
// the same authentication.
//
// With Config.TLSCert and TLSKey the listener serves HTTPS; a certificate
// renewed in place (cert-manager renewing the chart's Certificate, the
// kubelet swapping the mounted Secret's files) is read again at the next
// handshake after its files change, with no restart.
//
// The listener is guarded as the embedded NATS listener is: on a loopback
// address it may be open; anywhere else Config.Validate requires a bearer
// token file (clients send "Authorization: Bearer TOKEN", or the header
// X-Bomstream-Token through the Kubernetes API server's service proxy,
// which strips Authorization) or a client-certificate authority (mutual
// TLS). A request without the token gets 401 and nothing else; the token
// never appears in a log line or an error. A browser may carry the token
// in a cookie (TokenCookie), which the web pages' login form sets (Login).
// A server guarded by neither answers loopback clients only: any other
// gets 403, whatever address it listens on.
package api
