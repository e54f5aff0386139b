package etcd

import (
	"context"
	"testing"

	"github.com/leasehold/leasehold/internal/failovertest"
	"github.com/leasehold/leasehold/store"
)

// TestFailover is the failover test over etcd (the embedded server): three electors
// (L = 600ms, R = 200ms), each through its own proxy; the leader's network cut → it stops
// leading by E5 and another takes over within L + R (E6); healed → it follows; connections
// reset → still one leader; a clean stop hands over within R (E7). See internal/failovertest.
func TestFailover(t *testing.T) {
	raw, prefix := serverURL(t)
	openCleaned(t, raw, prefix)
	failovertest.RunURL(t, raw, openStore)
}

// openStore is Open as the shared test helpers take it (failovertest, tlstest).
func openStore(ctx context.Context, raw string) (store.Store, error) { return Open(ctx, raw) }
