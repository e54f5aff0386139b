package storetest

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/leasehold/leasehold/internal/tcpproxy"
	"github.com/leasehold/leasehold/store"
)

// CutConnection checks what the Elector needs of a networked store when the network to its
// server goes silent (E3: an attempt without an answer within L − R is a failure): Get and a
// conditional Patch fail by their context's deadline, with an error naming the key, well before
// the client's own timeouts or keepalives would notice; once the partition heals, the same
// store works again, and the write that failed did not happen.
//
// target is the server's host:port on loopback; open returns a store whose client reaches the
// server at addr instead (a loopback proxy, internal/tcpproxy, whose Cut is the partition), set
// up so that its own timeouts are far longer than the test's deadlines. open may register
// cleanups; the store is closed when the test ends.
func CutConnection(t *testing.T, target string, open func(t *testing.T, addr string) store.Store) {
	t.Helper()
	p, s := openProxied(t, target, open)
	if err := s.Create(t.Context(), "k", map[string]any{"rev": 1}); err != nil {
		t.Fatal(err)
	}
	p.Cut()
	const deadline = 300 * time.Millisecond
	for _, op := range []string{"get", "patch"} {
		ctx, cancel := context.WithTimeout(t.Context(), deadline)
		start := time.Now()
		var err error
		if op == "get" {
			_, err = s.Get(ctx, "k")
		} else {
			err = s.Patch(ctx, "k", map[string]any{"rev": 2}, &store.Condition{Field: "rev", Value: 1})
		}
		elapsed := time.Since(start)
		cancel()
		if err == nil {
			t.Fatalf("%s through a cut connection succeeded", op)
		}
		// 2s of slack for -race on a loaded machine: without the deadline it would hang until
		// the client's own timeouts, set far longer by open.
		if elapsed > deadline+2*time.Second {
			t.Errorf("%s through a cut connection took %v with a %v deadline", op, elapsed, deadline)
		}
		t.Logf("%s failed after %v: %v", op, elapsed, err)
		if !strings.Contains(err.Error(), `"k"`) {
			t.Errorf("%s error does not name the key: %v", op, err)
		}
	}
	// Once the partition heals, the same store works again, and the write that failed during it
	// did not happen: the condition on rev 1 still holds.
	p.Heal()
	t.Logf("recovered %v after the partition healed", waitRecovered(t, s, "k"))
	if err := s.Patch(t.Context(), "k", map[string]any{"rev": 2}, &store.Condition{Field: "rev", Value: 1}); err != nil {
		t.Errorf("Patch after the partition healed: %v", err)
	}
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

// openProxied starts a loopback proxy to target (internal/tcpproxy: its Cut is a partition) and
// opens a store through it with open; both are closed when the test ends.
func openProxied(t *testing.T, target string, open func(t *testing.T, addr string) store.Store) (*tcpproxy.Proxy, store.Store) {
	t.Helper()
	p, err := tcpproxy.New(target)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	s := open(t, p.Addr())
	t.Cleanup(func() { store.Close(s) })
	return p, s
}
