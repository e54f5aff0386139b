//go:build unix

package zookeeper

import (
	"context"
	"testing"

	"github.com/leasehold/leasehold/internal/failovertest"
	"github.com/leasehold/leasehold/store"
)

// TestFailover is the failover test over ZooKeeper (the standalone test server): three
// electors (L = 600ms, R = 200ms), each through its own proxy; the leader's network cut → it
// stops leading by E5 and another takes over within L + R (E6); healed → it follows;
// connections reset → still one leader; a clean stop hands over within R (E7). See
// internal/failovertest.
func TestFailover(t *testing.T) {
	raw, _ := serverURL(t, "session_timeout=2s")
	failovertest.RunURL(t, raw, func(ctx context.Context, raw string) (store.Store, error) { return Open(ctx, raw) })
}
