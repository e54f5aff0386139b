package cluster

import (
	"context"
	"fmt"
	"reflect"
	"testing"
	"testing/synctest"
	"time"
)

// step is the sampling period of the tests below: every attempt, renewal, deadline, crash and
// expiry in them falls on a multiple of it, so sampling at each step looks at every instant at
// which the answer of IsLeader can change.
const step = 250 * time.Millisecond

// sampleLeaders advances the bubble from now to until, one step at a time, and fails the test
// at the first instant at which two of nodes say they lead. steady, when not nil, must lead at
// every sample: the samples then show a live leader, not an empty election.
func (w *world) sampleLeaders(until time.Duration, steady *node, nodes ...*node) {
	w.T.Helper()
	for d := w.Since().Truncate(step); d <= until; d += step {
		w.At(d)
		var leaders []string
		for _, n := range nodes {
			if n.e.IsLeader() {
				leaders = append(leaders, n.e.InstanceID())
			}
		}
		if len(leaders) > 1 {
			w.T.Fatalf("at %v, %v all say they lead", d, leaders)
		}
		if steady != nil && !steady.e.IsLeader() {
			w.T.Fatalf("at %v, %s does not lead although it renews", d, steady.e.InstanceID())
		}
	}
}

// E6: a follower configured with a shorter L than the leader waits for the duration the leader
// declared in the record: it never takes over while the leader still leads, and after the
// leader's crash it takes over exactly max(L_leader, L_follower) after it first saw the last
// renewal, within max(L_leader, L_follower) + R_follower of that renewal. With R_follower = 2s
// the expiry falls between two regular attempts, so the attempt scheduled for it must use the
// declared duration too.
func TestE6FollowerWaitsForTheLeadersLongerDuration(t *testing.T) {
	for _, rb := range []time.Duration{sec(1), sec(2)} {
		t.Run(fmt.Sprintf("follower L=4s R=%v", rb), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				w := newWorld(t)
				a := w.node("a", sec(15), sec(5)).start() // renewals at 0, 5, 10, 15, 20
				w.At(sec(0.5))
				b := w.node("b", sec(4), rb).start() // attempts at 0.5, 0.5 + rb, ...; one at 20.5

				w.sampleLeaders(sec(22), a, a, b)
				if got := b.eventsOf(ObservedLeader); len(got) != 1 || got[0].Holder != "a" {
					t.Fatalf("b observed %v; want a as the only leader", got)
				}
				// a's last renewal is at 20s, first seen by b at 20.5s; a leads until its
				// deadline, 20s + (15s + 5s)/2.
				a.crash()
				w.sampleLeaders(sec(30)-step, a, a, b)
				w.sampleLeaders(sec(40), nil, a, b)

				lastRenewal, firstSeen, d := sec(20), sec(20.5), sec(15)
				if got := w.times(b, BecameLeader); !reflect.DeepEqual(got, ds(firstSeen+d)) {
					t.Fatalf("b became leader at %v; want %v: first seen at %v + max(15s, 4s)", got, firstSeen+d, firstSeen)
				}
				if bound := lastRenewal + d + rb; firstSeen+d > bound {
					t.Fatalf("takeover at %v, after max(L_leader, L_follower) + R_follower = %v from the last renewal", firstSeen+d, bound)
				}
				if term, _ := b.e.Term(); term != 2 {
					t.Fatalf("b's term %d; want 2", term)
				}
			})
		})
	}
}

// E6, the other direction: a follower configured with a longer L than the leader waits for its
// own L. That is only slower, never unsafe: the leader stopped leading (L_leader + R_leader)/2
// after its last successful attempt began, long before.
func TestE6FollowerWaitsForItsOwnLongerDuration(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t)
		a := w.node("a", sec(4), sec(1)).start() // renewals every second
		w.At(sec(0.5))
		b := w.node("b", sec(15), sec(5)).start() // attempts at 0.5, 5.5, 10.5, ...

		w.sampleLeaders(sec(10.75), a, a, b)
		// a's last renewal is at 10s, first seen by b at 10.5s; a leads until its deadline,
		// 10s + (4s + 1s)/2.
		a.crash()
		w.sampleLeaders(sec(12.5)-step, a, a, b)
		w.sampleLeaders(sec(30), nil, a, b)
		if got := w.times(b, BecameLeader); !reflect.DeepEqual(got, ds(sec(25.5))) {
			t.Fatalf("b became leader at %v; want 25.5s: first seen at 10.5s + its own L (15s), not the 4s a declared", got)
		}
	})
}

// E6: a record that declares no duration (zero, absent, as another tool may write it) or a
// shorter one than the follower's L expires after the follower's own L.
func TestE6RecordWithoutDurationUsesOwnL(t *testing.T) {
	for _, tc := range []struct {
		name string
		doc  map[string]any
	}{
		{"zero", map[string]any{"holder": "x", "term": 1.0, "revision": "r1", "leaseDuration": 0.0}},
		{"absent", map[string]any{"holder": "x", "term": 1.0, "revision": "r1"}},
		{"shorter", map[string]any{"holder": "x", "term": 1.0, "revision": "r1", "leaseDuration": 1000.0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				w := newWorld(t)
				if err := w.Mem.Create(context.Background(), "cluster:leader", tc.doc); err != nil {
					t.Fatal(err)
				}
				b := w.node("b", sec(4), sec(1)).start() // first sees the record at 0s
				w.At(sec(4) - time.Nanosecond)
				if b.e.IsLeader() {
					t.Fatalf("b took over before its own L; record %v", w.record())
				}
				w.At(sec(6))
				if got := w.times(b, BecameLeader); !reflect.DeepEqual(got, ds(sec(4))) {
					t.Fatalf("b became leader at %v; want 4s (its own L)", got)
				}
				if rec := w.record(); rec["holder"] != "b" || rec["term"] != 2.0 || rec["leaseDuration"] != 4000.0 {
					t.Fatalf("record after the takeover %v; want holder b, term 2, leaseDuration 4000", rec)
				}
			})
		})
	}
}
