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

// The primary changes with each failover, with or without losing writes, and the old primary
// comes back as the standby, so that the cluster fails over again; Restart keeps the primary.
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
		if err := c.Failover(ctx, lose); err != nil {
			t.Fatalf("failover %d (loseWrites=%v): %v", i+1, lose, err)
		}
		leader, err := c.Leader(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if leader != want[i] {
			t.Fatalf("leader after failover %d = %s, want %s", i+1, leader.Name, want[i].Name)
		}
		for _, m := range ms {
			if !m.Running() {
				t.Fatalf("%s is not running after failover %d", m.Name, i+1)
			}
		}
	}
	if err := c.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	if leader, err := c.Leader(ctx); err != nil || leader != ms[1] {
		t.Fatalf("leader after restart = %v, %v; want %s", leader, err, ms[1].Name)
	}
}
