package mysql

import (
	"testing"

	"github.com/leasehold/leasehold/internal/tcpproxy"
)

// newProxy starts the project's test proxy (internal/tcpproxy) to target, closed at the end of
// the test. Its Cut is a network partition: connections stay open and nothing is forwarded, so
// an operation ends only by its deadline. inspect, when given, is shown the bytes each client
// sends, with the number of its connection.
func newProxy(t testing.TB, target string, inspect ...func(conn int, b []byte)) *tcpproxy.Proxy {
	t.Helper()
	p, err := tcpproxy.New(target)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	if len(inspect) > 0 {
		p.Inspect(inspect[0])
	}
	return p
}
