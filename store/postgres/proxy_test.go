package postgres

import (
	"testing"

	"github.com/leasehold/leasehold/internal/tcpproxy"
)

// newProxy starts the project's test proxy (internal/tcpproxy) to target, closed at the end of
// the test. Its Cut is a network partition: connections stay open and nothing is forwarded, so
// an operation ends only by its deadline.
func newProxy(t testing.TB, target string) *tcpproxy.Proxy {
	t.Helper()
	p, err := tcpproxy.New(target)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}
