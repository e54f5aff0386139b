package etcd

import (
	"context"
	"testing"
	"time"

	"github.com/leasehold/leasehold/internal/tcpproxy"
	"github.com/leasehold/leasehold/store"
)

// startProxy starts the project's test proxy (internal/tcpproxy) to target, closed at the end
// of the test. Its Cut is a network partition: connections stay open and nothing is forwarded,
// so an operation ends only by its deadline; Heal resets the connections that lost bytes, and
// their client dials again.
func startProxy(t *testing.T, target string) *tcpproxy.Proxy {
	t.Helper()
	p, err := tcpproxy.New(target)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// waitRecovered waits until a Get of key succeeds again after a partition healed, and returns
// how long that took. There is no event to wait for: the client reconnects on its own schedule.
func waitRecovered(t *testing.T, s store.Store, key string) time.Duration {
	t.Helper()
	start := time.Now()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		_, err := s.Get(ctx, key)
		cancel()
		if err == nil {
			return time.Since(start)
		}
		if time.Since(start) > 15*time.Second {
			t.Fatalf("the store did not recover within 15s of the partition healing: %v", err)
		}
		<-tick.C
	}
}
