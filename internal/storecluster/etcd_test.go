//go:build unix

package storecluster

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/leasehold/leasehold/internal/testenv"
)

func startEtcd(t *testing.T, n int) Cluster {
	t.Helper()
	if testing.Short() {
		t.Skip("starts etcd processes")
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	c, err := StartEtcd(ctx, t.TempDir(), n)
	if errors.Is(err, ErrUnavailable) {
		testenv.Unavailable(t, err.Error())
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// A killed raft leader is replaced by another member, the killed one rejoins on its data, a
// paused leader is replaced too, leadership moves on request, and the whole cluster restarts.
func TestEtcdCluster(t *testing.T) {
	c := startEtcd(t, 3)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	if len(c.Members()) != 3 || c.Backend() != "etcd" {
		t.Fatalf("members %d, backend %q", len(c.Members()), c.Backend())
	}
	if got, want := c.URL([]string{"a:1", "b:2", "c:3"}, map[string]string{"prefix": "x/"}), "etcd://a:1,b:2,c:3?prefix=x/"; got != want {
		t.Errorf("URL = %q, want %q", got, want)
	}

	old, err := c.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := old.Kill(); err != nil {
		t.Fatal(err)
	}
	next, err := c.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if next == old {
		t.Fatalf("the killed member %s still leads", old.Name)
	}
	if err := old.Start(ctx); err != nil {
		t.Fatalf("restart of %s on its data: %v", old.Name, err)
	}

	if err := next.Pause(); err != nil {
		t.Fatal(err)
	}
	if !next.Paused() {
		t.Errorf("%s: Paused() = false after Pause", next.Name)
	}
	third, err := c.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if third == next {
		t.Fatalf("the paused member %s still leads", next.Name)
	}
	if err := next.Resume(); err != nil {
		t.Fatal(err)
	}
	if err := next.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}

	if err := c.Failover(ctx, true); !errors.Is(err, ErrNoFailover) {
		t.Errorf("Failover with lost writes: %v, want ErrNoFailover", err)
	}
	before, err := c.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Failover(ctx, false); err != nil {
		t.Fatal(err)
	}
	after, err := c.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if after == before {
		t.Errorf("Failover: %s still leads", before.Name)
	}

	if err := c.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	for _, m := range c.Members() {
		if !m.Running() {
			t.Errorf("%s is not running after Restart", m.Name)
		}
	}
	if _, err := c.Leader(ctx); err != nil {
		t.Fatal(err)
	}
}

// Probe answers while a majority of members runs, a paused member skipped, and fails once
// the cluster has lost its quorum: a write then never commits.
func TestEtcdProbe(t *testing.T) {
	c := startEtcd(t, 3)
	testQuorumProbe(t, c)
}
