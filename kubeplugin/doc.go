// Package kubeplugin is `kubectl bomstream`, the kubectl plugin that asks
// the in-cluster bomstream inventory API (package inventory/api) what it
// knows: `find` across the fleet, `get deploy/NAME` (the current AI-BOM's
// summary, or the BOM itself with -o json) and `history deploy/NAME`.
//
// It reaches the API one of two ways. With --api-url it sends its
// requests there (a port-forward, an ingress, a local `bomstream run`);
// for an https URL, --api-ca names the CA the API's certificate must be
// signed by and --api-server-name the name it must hold (a port-forward
// to 127.0.0.1: the Service's DNS name).
// Otherwise it reads the kubeconfig as kubectl does (--kubeconfig,
// $KUBECONFIG, ~/.kube/config; --context), finds the chart's API Service
// (labels app.kubernetes.io/part-of=bomstream and
// app.kubernetes.io/component=api, in any namespace or in
// --bomstream-namespace; or --service NAME) and goes through the API
// server's service proxy,
//
//	/api/v1/namespaces/NS/services/http:SVC:api/proxy/api/v1/...
//
// (https:SVC:api when the port's appProtocol is https, as the chart's is
// with api.tls: the API server then speaks TLS to the pod, without
// checking its certificate, so --api-ca is refused on this path) with
// the kubeconfig's credentials: the user needs get on services/proxy
// in that namespace, nothing on the pod network. The API's own token goes
// in X-Bomstream-Token (the proxy drops Authorization); it is read from
// --token-file or, through the proxy, from the Secret the Service's
// annotations name (bomstream.dev/api-token-secret and -key), when the
// user may read it. The Service's bomstream.dev/cluster annotation is the
// cluster name get and history default to.
//
// find answers as `bomstream find` does, with the same flags and output
// (packages inventory/filters and inventory/report); --findings asks the
// API's findings filter, each workload coming back with its open findings; history prints what
// `bomstream history` prints; get -o json prints the BOM `bomstream get`
// prints. A workload is named as kubectl names it: KIND/NAME with kubectl's
// short names (deploy, sts, lws, isvc, ...) or a Kind, in -n NAMESPACE
// (default: the context's namespace).
package kubeplugin
