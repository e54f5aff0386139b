package locker

import (
	"context"
	"fmt"
	"runtime"
	"testing"
	"testing/synctest"
	"time"

	"github.com/leasehold/leasehold/cluster"
	"github.com/leasehold/leasehold/store/memory"
)

// heapNow returns the bytes of the heap in use once collected.
func heapNow() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// P9: a held key costs the Locker at most 2 KB. 100,000 keys are held through one Locker over
// a memory store; the heap's growth, less what the store keeps of 100,000 such records written
// without a Locker, is the Locker's, per key.
func TestP9MemoryPerHeldKey(t *testing.T) {
	if testing.Short() {
		t.Skip("100,000 keys: not in -short")
	}
	const n = 100_000
	synctest.Test(t, func(t *testing.T) {
		// The store's share: the same records, written by hand.
		before := heapNow()
		st := memory.New()
		lock := cluster.NewStoreLock(st)
		now := time.Now()
		for i := range n {
			if _, err := lock.Create(context.Background(), fmt.Sprintf("job-%d", i), cluster.Record{
				Holder: "a", Session: keySession(newToken(), 1), Term: 1, AcquiredAt: now, RenewedAt: now, Duration: testL,
			}); err != nil {
				t.Fatal(err)
			}
		}
		storeBytes := heapNow() - before
		runtime.KeepAlive(st)
		st, lock = nil, nil

		before = heapNow()
		l, err := New(Config{Lock: cluster.NewStoreLock(memory.New()), InstanceID: "a", LeaseDuration: testL, RenewInterval: testR, Logger: quietLogger()})
		if err != nil {
			t.Fatal(err)
		}
		held := make([]*Held, n)
		for i := range held {
			if held[i], err = l.Acquire(context.Background(), fmt.Sprintf("job-%d", i)); err != nil {
				t.Fatal(err)
			}
		}
		total := heapNow() - before
		perKey := (float64(total) - float64(storeBytes)) / n
		t.Logf("%d keys held: %.0f bytes per key in all, %.0f of them the store's records, %.0f the Locker's",
			n, float64(total)/n, float64(storeBytes)/n, perKey)
		if perKey > 2048 {
			t.Errorf("the Locker keeps %.0f bytes per held key, want at most 2 KB", perKey)
		}
		for _, h := range held {
			if !h.IsHeld() {
				t.Fatalf("key %s lost", h.Key())
			}
			if err := h.Release(context.Background()); err != nil {
				t.Fatal(err)
			}
		}
	})
}
