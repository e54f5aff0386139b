//go:build unix

package zookeeper

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/leasehold/leasehold/internal/storecluster"
	"github.com/leasehold/leasehold/internal/testenv"
	"github.com/leasehold/leasehold/store"
	"github.com/leasehold/leasehold/store/storetest/linearize"
)

// startEnsemble starts three ZooKeeper servers as an ensemble, killed when the test ends.
func startEnsemble(t *testing.T) storecluster.Cluster {
	t.Helper()
	if testing.Short() {
		t.Skip("starts a ZooKeeper ensemble")
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	c, err := storecluster.StartZooKeeper(ctx, t.TempDir(), 3)
	if errors.Is(err, storecluster.ErrUnavailable) {
		testenv.Unavailable(t, err.Error())
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// counting is a store that counts the calls made through it.
type counting struct {
	store.Store
	calls *atomic.Int64
}

func (c counting) Get(ctx context.Context, key string) (map[string]any, error) {
	c.calls.Add(1)
	return c.Store.Get(ctx, key)
}

func (c counting) Patch(ctx context.Context, key string, f map[string]any, cond *store.Condition) error {
	c.calls.Add(1)
	return c.Store.Patch(ctx, key, f, cond)
}

// TestEnsembleLeaderKilled: over an ensemble of three servers, with clients spread over the
// members, the ensemble's leader is killed while the clients run the linearizability check:
// the store goes on working once the remaining two have elected a leader, and its answers stay
// linearizable (T1, T2, T7); then a conditional write succeeds and every surviving member
// holds it.
func TestEnsembleLeaderKilled(t *testing.T) {
	c := startEnsemble(t)
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	raw := c.URL(nil, map[string]string{"chroot": newChroot(), "session_timeout": "4s"})
	leader, err := c.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var calls atomic.Int64
	var once sync.Once
	killed := make(chan error, 1)
	go func() {
		// Once the check is well under way (its first phase runs 10 histories of 8 clients
		// making 24 calls each), the leader dies.
		for calls.Load() < 300 {
			select {
			case <-ctx.Done():
				killed <- ctx.Err()
				return
			case <-time.After(10 * time.Millisecond):
			}
		}
		once.Do(func() { killed <- leader.Kill() })
	}()
	linearize.RunConfig(t, linearize.Config{Histories: 10, CutHistories: 10, TurnHistories: 5}, func(t *testing.T) store.Store {
		return counting{Store: openRaw(t, raw), calls: &calls}
	})
	if err := <-killed; err != nil {
		t.Fatalf("killing the leader %s: %v", leader.Name, err)
	}
	next, err := c.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if next == leader {
		t.Fatalf("the killed member %s still leads", leader.Name)
	}
	t.Logf("%s killed; %s leads", leader.Name, next.Name)

	s := openRaw(t, raw)
	if err := s.Create(ctx, "after", map[string]any{"n": 1}); err != nil {
		t.Fatal(err)
	}
	if err := s.Patch(ctx, "after", map[string]any{"n": 2}, &store.Condition{Field: "n", Value: 1}); err != nil {
		t.Fatal(err)
	}
	for _, m := range c.Members() {
		if m == leader {
			continue
		}
		one := openRaw(t, c.URL([]string{m.Addr}, map[string]string{"chroot": s.Chroot()[1:]}))
		doc, err := one.Get(ctx, "after")
		if err != nil || doc["n"] != float64(2) {
			t.Errorf("%s holds %v (%v), want n=2", m.Name, doc, err)
		}
	}
}
