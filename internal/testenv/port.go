package testenv

import (
	"net"
	"testing"
)

// ClosedPort returns a loopback address nothing listens on, for the tests of a server that
// cannot be reached.
func ClosedPort(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}
