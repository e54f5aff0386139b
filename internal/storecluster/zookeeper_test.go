//go:build unix

package storecluster

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/leasehold/leasehold/internal/testenv"
)

func startZooKeeper(t *testing.T, n int) Cluster {
	t.Helper()
	if testing.Short() {
		t.Skip("starts zookeeper processes")
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	c, err := StartZooKeeper(ctx, t.TempDir(), n)
	if errors.Is(err, ErrUnavailable) {
		testenv.Unavailable(t, err.Error())
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// A killed ensemble leader is replaced by another member, the killed one rejoins on its data,
// a paused leader is replaced too, Failover is refused, and the whole ensemble restarts; no
// process is left behind by Close.
func TestZooKeeperCluster(t *testing.T) {
	c := startZooKeeper(t, 3)
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	if len(c.Members()) != 3 || c.Backend() != "zk" {
		t.Fatalf("members %d, backend %q", len(c.Members()), c.Backend())
	}
	if got, want := c.URL([]string{"a:1", "b:2", "c:3"}, map[string]string{"session_timeout": "2s", "chroot": "x/y"}), "zk://a:1,b:2,c:3/x/y?session_timeout=2s"; got != want {
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
	if err := c.Failover(ctx, false); !errors.Is(err, ErrNoFailover) {
		t.Errorf("Failover: %v, want ErrNoFailover", err)
	}
	if err := c.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	for _, m := range c.Members() {
		if !m.Running() {
			t.Errorf("%s is not running after Restart", m.Name)
		}
	}
	pids := []int{}
	for _, m := range c.Members() {
		pids = append(pids, m.Pid())
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	for i, m := range c.Members() {
		if err := syscall.Kill(pids[i], 0); !errors.Is(err, syscall.ESRCH) {
			t.Errorf("%s (pid %d) is still there after Close: %v", m.Name, pids[i], err)
		}
	}
}

// A single server runs standalone and is its own leader.
func TestZooKeeperStandalone(t *testing.T) {
	c := startZooKeeper(t, 1)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	m, err := c.Leader(ctx)
	if err != nil || m != c.Members()[0] {
		t.Fatalf("Leader = %v, %v; want the one member", m, err)
	}
	mode, err := ZooKeeperMode(ctx, m.Addr)
	if err != nil || mode != "standalone" {
		t.Errorf("mode %q, %v; want standalone", mode, err)
	}
	if out, err := ZooKeeperCommand(ctx, m.Addr, "ruok"); err != nil || !strings.Contains(out, "imok") {
		t.Errorf("ruok: %q, %v", out, err)
	}
	// A probe writes its znode: one more znode, and no more at the next probe.
	znodes := func() int {
		out, err := ZooKeeperCommand(ctx, m.Addr, "mntr")
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range strings.Split(out, "\n") {
			if v, ok := strings.CutPrefix(l, "zk_znode_count"); ok {
				n, err := strconv.Atoi(strings.TrimSpace(v))
				if err != nil {
					t.Fatal(err)
				}
				return n
			}
		}
		t.Fatalf("mntr has no zk_znode_count: %s", out)
		return 0
	}
	before := znodes()
	for i := range 2 {
		if err := c.(Prober).Probe(ctx); err != nil {
			t.Fatal(err)
		}
		if n := znodes(); n != before+1 {
			t.Errorf("after probe %d: %d znodes, want %d", i+1, n, before+1)
		}
	}
}

// Probe answers while a majority of members runs, a paused member skipped, and fails once the
// ensemble has lost its quorum: a write then never commits.
func TestZooKeeperProbe(t *testing.T) {
	c := startZooKeeper(t, 3)
	testQuorumProbe(t, c)
}
