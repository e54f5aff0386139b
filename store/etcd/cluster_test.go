//go:build unix

package etcd

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/leasehold/leasehold/cluster"
	"github.com/leasehold/leasehold/internal/eventlog"
	"github.com/leasehold/leasehold/internal/storecluster"
	"github.com/leasehold/leasehold/internal/testenv"
)

// TestClusterMemberDies runs a leader and a follower over three etcd members, each client
// naming all three, and kills each member that is not the raft leader in turn, starting it
// again before the next (the client spreads its requests over the members, so each held some
// of both instances' calls, and one of them their watches). After each kill the leader renews
// through another member and nobody else leads; the follower's watch brings the renewals again
// (E9). An attempt the kill cut short fails, and a leader whose attempt fails stops leading
// (E4) and takes its own lease back at the next attempt: that is the one end of leadership
// allowed. A kill of the raft leader leaves the cluster without a leader for an election
// timeout, which the fault campaign covers (member-kill-leader, docs/faults/cluster).
func TestClusterMemberDies(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 4*time.Minute)
	defer cancel()
	c, err := storecluster.StartEtcd(ctx, t.TempDir(), 3)
	if errors.Is(err, storecluster.ErrUnavailable) {
		testenv.Unavailable(t, err.Error())
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	raw := c.URL(nil, map[string]string{"prefix": fmt.Sprintf("member-dies-%d/", time.Now().UnixNano())})

	rec := &eventlog.Log{}
	start := func(id string) *cluster.Elector {
		s, err := Open(ctx, raw)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		e, err := cluster.NewElector(cluster.ElectorConfig{
			Lock:          cluster.NewStoreLock(s),
			LeaseName:     "lease",
			LeaseDuration: 2 * time.Second,
			RenewInterval: 250 * time.Millisecond,
			InstanceID:    id,
			Logger:        slog.New(slog.DiscardHandler),
			Observer:      rec.Add,
		})
		if err != nil {
			t.Fatal(err)
		}
		if err := e.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { e.Stop(context.Background()) })
		return e
	}
	ea := start("a")
	rec.Wait(t, ctx, func(ev cluster.Event) bool { return ev.Instance == "a" && ev.Kind == cluster.BecameLeader })
	start("b")
	rec.Wait(t, ctx, func(ev cluster.Event) bool { return ev.Instance == "b" && ev.Kind == cluster.WatchedChange })

	raftLeader, err := c.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range c.Members() {
		if m == raftLeader {
			continue
		}
		killed := time.Now()
		if err := m.Kill(); err != nil {
			t.Fatal(err)
		}
		renewed := rec.Wait(t, ctx, func(ev cluster.Event) bool {
			return ev.Instance == "a" && ev.Kind == cluster.AttemptSucceeded && ev.Holder == "a" && ev.Time.After(killed)
		})
		watched := rec.Wait(t, ctx, func(ev cluster.Event) bool {
			return ev.Instance == "b" && ev.Kind == cluster.WatchedChange && ev.Time.After(killed)
		})
		t.Logf("%s killed: the leader renewed %v later, the follower's watch brought a renewal %v later",
			m.Name, renewed.Time.Sub(killed).Round(time.Millisecond), watched.Time.Sub(killed).Round(time.Millisecond))
		if err := m.Start(ctx); err != nil {
			t.Fatal(err)
		}
		if now, err := c.Leader(ctx); err != nil || now != raftLeader {
			t.Fatalf("the raft leader moved from %s (%v, %v): the next kill would not be of a follower", raftLeader.Name, now, err)
		}
	}
	for _, ev := range rec.All() {
		switch {
		case ev.Kind == cluster.BecameLeader && ev.Instance != "a":
			t.Errorf("%s became leader: the leader's renewals should have gone on through another member", ev.Instance)
		case ev.Kind == cluster.StoppedLeading && ev.Reason != cluster.ReasonError:
			t.Errorf("a stopped leading (%s, %v): its renewals should have gone on through another member", ev.Reason, ev.Err)
		case ev.Kind == cluster.StoppedLeading:
			t.Logf("a stopped leading on an attempt a kill cut (E4): %v", ev.Err)
		}
	}
	if !ea.IsLeader() {
		t.Error("a does not lead after the kills")
	}
}
