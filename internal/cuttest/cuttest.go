// Package cuttest holds the backends' tests of a silent network. URL runs
// storetest.CutConnection on a store opened by URL (etcd, NATS, Redis). Run is the SQL backends'
// test: what storetest.CutConnection checks, and besides that a Close that meets connections
// interrupted by their context and must not linger on them; the backend checks afterwards,
// through a connection of its own, that the document holds rev 2 (patched once, while the
// network was up).
package cuttest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/leasehold/leasehold/store"
)

// Partition is the network between the store and its server: a loopback proxy
// (internal/tcpproxy) whose Cut stops forwarding and whose Heal resumes it.
type Partition interface {
	Cut()
	Heal()
}

// Run creates "k" with rev 1 in s, which reaches its server through p, and cuts p: a
// conditional Patch and a Get with a 300ms deadline fail with an error wrapping
// context.DeadlineExceeded, soon after it. Healed, the conditional Patch to rev 2 works. Cut
// again, a Get fails, and then s.Close returns within 5s.
func Run(t *testing.T, s store.Store, p Partition) {
	t.Helper()
	if err := s.Create(t.Context(), "k", map[string]any{"rev": 1}); err != nil {
		t.Fatal(err)
	}
	p.Cut()
	for _, op := range []struct {
		name string
		do   func(ctx context.Context) error
	}{
		{"conditional Patch", func(ctx context.Context) error {
			return s.Patch(ctx, "k", map[string]any{"rev": 2}, &store.Condition{Field: "rev", Value: 1})
		}},
		{"Get", func(ctx context.Context) error { _, err := s.Get(ctx, "k"); return err }},
	} {
		ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
		start := time.Now()
		err := op.do(ctx)
		elapsed := time.Since(start)
		cancel()
		if err == nil {
			t.Fatalf("%s through a cut connection succeeded", op.name)
		}
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("%s: error %v, want one wrapping context.DeadlineExceeded", op.name, err)
		}
		// Generous for -race on a loaded machine: without the deadline it would hang for minutes.
		if elapsed > 5*time.Second {
			t.Errorf("%s returned after %v, want soon after its 300ms deadline", op.name, elapsed)
		}
	}
	// Once the network heals, the same store works again: the pool replaces the connections
	// the cut broke.
	p.Heal()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if err := s.Patch(ctx, "k", map[string]any{"rev": 2}, &store.Condition{Field: "rev", Value: 1}); err != nil {
		t.Fatalf("conditional Patch after the network healed: %v", err)
	}
	// Cut again, so that Close meets a connection interrupted by its context (pgx, for one,
	// lingers 15s on such a connection: a cancel request, then a drain).
	p.Cut()
	cutCtx, cancelCut := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancelCut()
	if _, err := s.Get(cutCtx, "k"); err == nil {
		t.Fatal("Get through the cut connection succeeded")
	}
	start := time.Now()
	store.Close(s)
	if elapsed := time.Since(start); elapsed > 5*time.Second {
		t.Errorf("Close after the cut took %v", elapsed)
	}
}
