package postgres

import (
	"testing"

	"github.com/leasehold/leasehold/internal/failovertest"
	"github.com/leasehold/leasehold/store"
)

// TestFailover is the failover test over PostgreSQL: three electors (L = 600ms,
// R = 200ms), each through its own proxy; the leader's network cut → it stops leading by E5 and
// another takes over within L + R (E6); healed → it follows; connections reset → still one
// leader; a clean stop hands over within R (E7). See internal/failovertest.
func TestFailover(t *testing.T) {
	raw := withParams(t, serverURL(t), "table", tableName(t))
	direct, err := Open(t.Context(), raw)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dropTable(t, direct) })
	failovertest.Run(t, mustParse(t, raw).Host, func(t *testing.T, addr string) store.Store {
		s, err := Open(t.Context(), withHost(t, raw, addr))
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}
