package postgres

import (
	"context"
	"testing"

	"github.com/leasehold/leasehold/internal/failovertest"
	"github.com/leasehold/leasehold/internal/testenv"
	"github.com/leasehold/leasehold/internal/testurl"
	"github.com/leasehold/leasehold/store"
)

// TestFailover is the failover test over PostgreSQL: three electors (L = 600ms,
// R = 200ms), each through its own proxy; the leader's network cut → it stops leading by E5 and
// another takes over within L + R (E6); healed → it follows; connections reset → still one
// leader; a clean stop hands over within R (E7). See internal/failovertest.
func TestFailover(t *testing.T) {
	raw := testurl.With(t, serverURL(t), "table", testenv.TableName(t))
	direct, err := Open(t.Context(), raw)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dropTable(t, direct) })
	failovertest.RunURL(t, raw, openStore)
}

// openStore is Open as the shared test helpers take it (failovertest, tlstest).
func openStore(ctx context.Context, raw string) (store.Store, error) { return Open(ctx, raw) }
