package main

import (
	"testing"
	"time"

	"github.com/leasehold/leasehold/cluster"
)

// The partitions scenario counts two owners of one partition by their leaderships, as the
// events bound them: back to back is one owner at a time; an overlap of any length, or a
// leadership still open when the next begins, is two.
func TestLeadershipsOverlaps(t *testing.T) {
	t0 := time.Now().Add(-time.Hour)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	ev := func(kind cluster.EventKind, lease string, s int) cluster.Event {
		return cluster.Event{Kind: kind, Lease: lease, Time: at(s)}
	}
	l := newLeaderships()
	// Lease a: member 0 from 0s to 10s, member 1 from 10s: one owner at a time.
	l.observe(0, ev(cluster.BecameLeader, "a", 0))
	l.observe(0, ev(cluster.StoppedLeading, "a", 10))
	l.observe(1, ev(cluster.BecameLeader, "a", 10))
	// Lease b: member 0 again after member 1 (the same member twice is not two owners).
	l.observe(1, ev(cluster.BecameLeader, "b", 0))
	l.observe(1, ev(cluster.StoppedLeading, "b", 5))
	l.observe(1, ev(cluster.BecameLeader, "b", 6))
	l.observe(1, ev(cluster.StoppedLeading, "b", 7))
	if n := l.overlaps(); n != 0 {
		t.Fatalf("overlaps = %d for leaderships back to back; want 0", n)
	}
	// Lease c: member 1 begins a moment before member 0 stops.
	l.observe(0, ev(cluster.BecameLeader, "c", 0))
	l.observe(1, ev(cluster.BecameLeader, "c", 9))
	l.observe(0, ev(cluster.StoppedLeading, "c", 10))
	if n := l.overlaps(); n != 1 {
		t.Fatalf("overlaps = %d with one overlap; want 1", n)
	}
	// Lease d: member 0 never stopped, member 2 began later.
	l.observe(0, ev(cluster.BecameLeader, "d", 0))
	l.observe(2, ev(cluster.BecameLeader, "d", 30))
	if n := l.overlaps(); n != 2 {
		t.Fatalf("overlaps = %d with a leadership left open; want 2", n)
	}
}

// A wait for an even spread that gave up says, in the report's anomaly, how the ownership
// stood: which phase, the partitions without an owner and the members' counts.
func TestUnevenSummary(t *testing.T) {
	if got := unevenSummary(partitionsResult{}); got != "" {
		t.Fatalf("every phase even: %q; want nothing", got)
	}
	got := unevenSummary(partitionsResult{
		SpreadUneven: "1 without an owner",
		Crash:        phaseResult{Uneven: "0 without an owner, counts m0:3 m1:5"},
	})
	if want := "; first: 1 without an owner; crash: 0 without an owner, counts m0:3 m1:5"; got != want {
		t.Fatalf("got %q; want %q", got, want)
	}
}

// The member leases' leaderships tell when each member came up (its first) and how many
// leaderships there were in all (beyond one per member: lost under load); the partitions'
// leaderships are not counted.
func TestLeadershipsMemberLeases(t *testing.T) {
	t0 := time.Now().Add(-time.Hour)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	l := newLeaderships()
	l.observe(0, cluster.Event{Kind: cluster.BecameLeader, Lease: "w.member-aa", Time: at(3)})
	l.observe(0, cluster.Event{Kind: cluster.StoppedLeading, Lease: "w.member-aa", Time: at(20)})
	l.observe(0, cluster.Event{Kind: cluster.BecameLeader, Lease: "w.member-aa", Time: at(21)})
	l.observe(1, cluster.Event{Kind: cluster.BecameLeader, Lease: "w.member-bb", Time: at(7)})
	l.observe(1, cluster.Event{Kind: cluster.BecameLeader, Lease: "w/4", Time: at(1)})
	first, total := l.memberLeases(".member-")
	if len(first) != 2 || !first[0].Equal(at(3)) || !first[1].Equal(at(7)) || total != 3 {
		t.Fatalf("memberLeases = %v, %d; want member 0 at 3s, member 1 at 7s, 3 in all", first, total)
	}
}
