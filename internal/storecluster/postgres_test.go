//go:build unix

package storecluster_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/leasehold/leasehold/internal/storecluster"
	"github.com/leasehold/leasehold/internal/testenv"
)

// startPostgres starts a cluster in a temporary directory, closed when the test ends.
func startPostgres(t *testing.T) storecluster.Cluster {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	c, err := storecluster.StartPostgres(ctx, t.TempDir())
	if errors.Is(err, storecluster.ErrUnavailable) {
		testenv.Unavailable(t, err.Error())
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := c.Close(); err != nil {
			t.Error(err)
		}
	})
	return c
}

// The primary changes with each failover, with or without losing writes; the old primary is
// stopped, and comes back as the standby before the next failover or a restart, so that the
// cluster fails over again; Restart keeps the primary.
func TestPostgresFailover(t *testing.T) {
	c := startPostgres(t)
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	ms := c.Members()
	leader, err := c.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if leader != ms[0] {
		t.Fatalf("leader at start = %s, want %s", leader.Name, ms[0].Name)
	}
	want := []*storecluster.Member{ms[1], ms[0], ms[1]}
	for i, lose := range []bool{false, true, false} {
		start := time.Now()
		if err := c.Failover(ctx, lose); err != nil {
			t.Fatalf("failover %d (loseWrites=%v): %v", i+1, lose, err)
		}
		t.Logf("failover %d (loseWrites=%v) took %v", i+1, lose, time.Since(start))
		leader, err := c.Leader(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if leader != want[i] {
			t.Fatalf("leader after failover %d = %s, want %s", i+1, leader.Name, want[i].Name)
		}
		if old := ms[i%2]; old.Running() {
			t.Fatalf("the old primary %s still runs after failover %d", old.Name, i+1)
		}
	}
	start := time.Now()
	if err := c.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("restart took %v", time.Since(start))
	if leader, err := c.Leader(ctx); err != nil || leader != ms[1] {
		t.Fatalf("leader after restart = %v, %v; want %s", leader, err, ms[1].Name)
	}
	for _, m := range ms {
		if !m.Running() {
			t.Fatalf("%s is not running after the restart", m.Name)
		}
	}
}
