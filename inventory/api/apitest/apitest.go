// Package apitest holds what tests of the API's listener rules need: a
// client that is not on loopback (RemoteIP), and a certificate authority
// made in the test with the server certificates it issues (PKI).
package apitest

import (
	"net"
	"testing"
)

// RemoteIP is an IPv4 address of this machine beyond loopback: a request
// sent to it comes from a client address that is not loopback either. The
// test fails when the machine has none.
func RemoteIP(t testing.TB) string {
	t.Helper()
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && !n.IP.IsLoopback() && n.IP.To4() != nil {
			return n.IP.String()
		}
	}
	t.Fatal("this machine has no IPv4 address beyond loopback: the test needs one to be a remote client")
	return ""
}
