// Package clustertest runs the NATS topologies of the scale-out and fleet
// shapes inside a test process, on loopback ports: a JetStream cluster of n
// servers (routes between them, R3 streams possible), optionally listening
// for leaf-node connections under a JetStream domain, and a TCP proxy that
// a test cuts and restores to take a link down without stopping either end.
//
// Servers are real nats-server/v2 servers with file stores in temporary
// directories; a Node can be stopped and started again on the same ports and
// store, as an operator restarting a pod would. Everything stops when the
// test ends. Nothing here is a double: what passes here runs the same
// server code as a deployed cluster.
package clustertest
