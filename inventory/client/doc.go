// Package client reads the inventory's HTTP API (package inventory/api):
// the workloads a query selects (with their open findings when the query
// asks findings=true), one workload with its versions, and the BOM in
// effect. It is what the kubectl plugin (package kubeplugin) asks,
// directly (--api-url) or through the Kubernetes API server's service
// proxy, whose URL and authenticated http.Client the caller gives.
//
// The API's token goes in the X-Bomstream-Token header, which the service
// proxy passes on (it drops Authorization, which carries the caller's
// Kubernetes credentials). The token never appears in an error: errors
// name the route, the way the request went (Client.Via) and the answer.
package client
