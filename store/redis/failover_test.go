package redis

import (
	"context"
	"net/url"
	"testing"

	"github.com/leasehold/leasehold/internal/failovertest"
	"github.com/leasehold/leasehold/store"
)

// TestFailover is the failover test over Redis: three electors (L = 600ms, R = 200ms),
// each through its own proxy; the leader's network cut → it stops leading by E5 and another
// takes over within L + R (E6); healed → it follows; connections reset → still one leader; a
// clean stop hands over within R (E7). See internal/failovertest.
func TestFailover(t *testing.T) {
	raw, prefix := serverURL(t)
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	direct, err := Open(t.Context(), raw)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx := context.Background()
		iter := direct.Client().Scan(ctx, 0, prefix+"*", 1000).Iterator()
		for iter.Next(ctx) {
			direct.Client().Del(ctx, iter.Val())
		}
		if err := iter.Err(); err != nil {
			t.Errorf("cleaning up %s*: %v", prefix, err)
		}
		direct.Close()
	})
	failovertest.Run(t, u.Host, func(t *testing.T, addr string) store.Store {
		v := *u
		v.Host = addr
		s, err := Open(t.Context(), v.String())
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}
