//go:build unix

package storecluster_test

import (
	"context"
	"errors"
	"os/exec"
	"strings"
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

// primaries names the running members out of recovery.
func primaries(t *testing.T, ctx context.Context, c storecluster.Cluster) []string {
	t.Helper()
	var names []string
	for _, m := range c.Members() {
		if !m.Running() {
			continue
		}
		host, port, _ := strings.Cut(m.Addr, ":")
		out, err := exec.CommandContext(ctx, "psql", "-X", "-A", "-t", "-q", "-h", host, "-p", port, "-U", "postgres", "-d", "postgres",
			"-c", "SELECT pg_is_in_recovery()").Output()
		if err != nil {
			t.Fatalf("%s: %v", m.Name, err)
		}
		if strings.TrimSpace(string(out)) == "f" {
			names = append(names, m.Name)
		}
	}
	return names
}

// A killed member rejoins in its role, and a former primary a failover left stopped comes back
// as the new primary's standby: after each, exactly one primary, and every member runs.
func TestPostgresRejoin(t *testing.T) {
	if _, err := exec.LookPath("psql"); err != nil {
		testenv.Unavailable(t, "no psql on PATH")
	}
	c := startPostgres(t)
	r := c.(storecluster.Rejoiner)
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	ms := c.Members()
	check := func(step string, primary *storecluster.Member) {
		t.Helper()
		for _, m := range ms {
			if !m.Running() {
				t.Fatalf("%s: %s is not running", step, m.Name)
			}
		}
		if got := primaries(t, ctx, c); len(got) != 1 || got[0] != primary.Name {
			t.Fatalf("%s: primaries %v, want exactly %s", step, got, primary.Name)
		}
	}
	for _, m := range []*storecluster.Member{ms[0], ms[1]} { // the primary, then the standby
		if err := m.Kill(); err != nil {
			t.Fatal(err)
		}
		if err := r.Rejoin(ctx, m); err != nil {
			t.Fatalf("rejoin of killed %s: %v", m.Name, err)
		}
		check("after the kill of "+m.Name, ms[0])
	}
	if err := c.Failover(ctx, true); err != nil {
		t.Fatal(err)
	}
	if err := r.Rejoin(ctx, ms[0]); err != nil {
		t.Fatalf("rejoin of the former primary: %v", err)
	}
	check("after a lossy failover and the rejoin of the former primary", ms[1])
	// The rebuilt standby takes over on the next failover: it streams from the new primary.
	if err := c.Failover(ctx, false); err != nil {
		t.Fatal(err)
	}
	if err := r.Rejoin(ctx, ms[1]); err != nil {
		t.Fatal(err)
	}
	check("after a second failover", ms[0])
}
