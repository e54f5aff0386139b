package etcd

import (
	"context"
	"net/url"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/leasehold/leasehold/internal/failovertest"
	"github.com/leasehold/leasehold/store"
)

// TestFailover is the failover test over etcd (the embedded server): three electors
// (L = 600ms, R = 200ms), each through its own proxy; the leader's network cut → it stops
// leading by E5 and another takes over within L + R (E6); healed → it follows; connections
// reset → still one leader; a clean stop hands over within R (E7). See internal/failovertest.
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
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if _, err := direct.Client().Delete(ctx, prefix, clientv3.WithPrefix()); err != nil {
			t.Errorf("cleaning up %s: %v", prefix, err)
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
