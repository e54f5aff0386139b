package cluster

import (
	"context"
	"reflect"
	"testing"
	"testing/synctest"
	"time"
)

// rollbackModes are the ways a follower learns of a rollback: by its reads alone (no watch),
// by a watch that reports the state put back, and by a watch that stays silent about it
// while it keeps proving alive (heartbeats), so that only a read sees it.
var rollbackModes = []struct {
	name          string
	watch, silent bool
}{{"polling", false, false}, {"watch", true, false}, {"silentwatch", true, true}}

// noTwoLeaders fails the test at the first instant, every quarter second from from to to, when two
// of nodes lead.
func noTwoLeaders(t *testing.T, w *world, from, to time.Duration, nodes map[string]*node) {
	t.Helper()
	for d := from; d <= to; d += sec(0.25) {
		w.At(d)
		var leaders []string
		for id, n := range nodes {
			if n.e.IsLeader() {
				leaders = append(leaders, id)
			}
		}
		if len(leaders) > 1 {
			t.Fatalf("%v lead together at %v", leaders, d)
		}
	}
}

// leaderships returns the terms of every BecameLeader of nodes, in the order of their times.
func leaderships(nodes ...*node) []uint64 {
	var evs []Event
	for _, n := range nodes {
		evs = append(evs, n.eventsOf(BecameLeader)...)
	}
	for i := range evs {
		for j := i + 1; j < len(evs); j++ {
			if evs[j].Time.Before(evs[i].Time) {
				evs[i], evs[j] = evs[j], evs[i]
			}
		}
	}
	var terms []uint64
	for _, ev := range evs {
		terms = append(terms, ev.Term)
	}
	return terms
}

// B2, B3: the store goes back to a revision the follower saw long before, and had since seen
// replaced. It counts it as a new revision, first seen when a read or the watch brings it
// (E6), never by the expiry it had when it first saw it: the old leader, which the promoted
// store no longer answers, leads until its deadline, and a takeover on that old expiry would
// make two leaders. The takeover comes L after the follower first sees the rollback: within
// L + R of it by polling or a watch that reports it, L after the first read with a silent one.
func TestRollbackToARevisionSeenBefore(t *testing.T) {
	for _, mode := range rollbackModes {
		t.Run(mode.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				w := newWorld(t)
				rb := newRollbackStore(w.Mem)
				a := w.rollbackNode("a", rb, mode.watch).start() // creates A at 0 s, renews every 5 s
				w.At(sec(1))
				b := w.rollbackNode("b", rb, mode.watch).start() // first sees A at 1 s
				w.At(sec(2))
				snap := rb.snapshot() // A
				w.At(sec(12))         // b saw the renewals of 5 and 10 s
				// The primary dies; the replica promoted had only A. The old leader cannot
				// reach it: its renewal at 15 s hangs, and it leads until 10 + (L + R)/2.
				a.faults.Set(func(f *faultStore) { f.Hang = true })
				if err := rb.rollback(snap, mode.silent); err != nil {
					t.Fatal(err)
				}
				noTwoLeaders(t, w, sec(12), sec(45), map[string]*node{"a": a, "b": b})
				if got := w.times(a, StoppedLeading); !reflect.DeepEqual(got, ds(sec(20))) {
					t.Fatalf("a stopped leading at %v; want 20s, its deadline", got)
				}
				// Polling: b reads A at 16 s, a new revision to it: expiry at 31 s. The watch
				// that reports A makes b read at once, at 12 s: 27 s. The silent watch keeps b
				// from reading until the renewal of 10 s it judged expires, at 25 s; A read
				// then expires at 40 s.
				want := map[string]time.Duration{"polling": sec(31), "watch": sec(27), "silentwatch": sec(40)}[mode.name]
				if got := w.times(b, BecameLeader); !reflect.DeepEqual(got, ds(want)) {
					t.Fatalf("b became leader at %v; want %v", got, want)
				}
				if terms := leaderships(a, b); !reflect.DeepEqual(terms, []uint64{1, 2}) {
					t.Fatalf("terms of the leaderships in order %v; want [1 2]", terms)
				}
			})
		})
	}
}

// B2, B4: the store goes back to a record that names a follower with the session it still
// has (it led before, lost the lease, and now follows the instance that took it over). Its own
// record, found while not leading, would be written with a new term at once (E2): but it has
// seen a higher term than that record's, so the record is one the store put back, and it
// waits for it to expire as another holder's (E6), while the old leader leads until its
// deadline. Its term then is above every term it saw.
func TestRollbackToOwnOldRecord(t *testing.T) {
	for _, mode := range rollbackModes {
		t.Run(mode.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				w := newWorld(t)
				rb := newRollbackStore(w.Mem)
				b := w.rollbackNode("b", rb, mode.watch).start() // leads at 0 s, term 1
				w.At(sec(1))
				snap := rb.snapshot() // b's record, term 1
				a := w.rollbackNode("a", rb, mode.watch).start()
				w.At(sec(2))
				b.faults.Set(func(f *faultStore) { f.Err = errInjected }) // b stops leading at 5 s
				w.At(sec(17))                                             // a took over at 16 s: term 2
				b.faults.Set(func(f *faultStore) { f.Err = nil })
				w.At(sec(22)) // b follows a since its attempt at 20 s; a renewed at 21 s
				a.faults.Set(func(f *faultStore) { f.Hang = true })
				if err := rb.rollback(snap, mode.silent); err != nil {
					t.Fatal(err)
				}
				noTwoLeaders(t, w, sec(22), sec(60), map[string]*node{"a": a, "b": b})
				if got := w.times(a, StoppedLeading); !reflect.DeepEqual(got, ds(sec(31))) {
					t.Fatalf("a stopped leading at %v; want 31s, its deadline", got)
				}
				// Polling: b reads its old record at 25 s: expiry at 40 s. The watch that
				// reports it makes b read at once: 37 s. The silent watch: b reads at the
				// expiry of a's renewal of 21 s, at 36 s, and takes it L later.
				want := map[string]time.Duration{"polling": sec(40), "watch": sec(37), "silentwatch": sec(51)}[mode.name]
				bt := w.times(b, BecameLeader)
				if len(bt) != 2 || bt[1] != want {
					t.Fatalf("b became leader at %v; want at 0s, then at %v", bt, want)
				}
				if terms := leaderships(a, b); !reflect.DeepEqual(terms, []uint64{1, 2, 3}) {
					t.Fatalf("terms of the leaderships in order %v; want [1 2 3]", terms)
				}
			})
		})
	}
}

// B2, B4: the store goes back to a release that an instance took over since. A follower that
// saw the takeover's term finds a released record of a lower term: a release put back, not
// one written after the current leader stopped. It waits for it to expire (E6) rather than
// take it at once, and its term is above the one it saw.
func TestRollbackToAnOldRelease(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t)
		rb := newRollbackStore(w.Mem)
		b := w.rollbackNode("b", rb, false).start() // leads at 0 s, term 1
		w.At(sec(1))
		a := w.rollbackNode("a", rb, false).start() // polls at 1, 6, 11... s
		w.At(sec(2))
		c := w.rollbackNode("c", rb, false).start() // polls at 2, 7, 12, 17... s
		w.At(sec(3))
		if err := b.e.Stop(context.Background()); err != nil {
			t.Fatal(err)
		}
		snap := rb.snapshot() // released, term 1
		w.At(sec(13))         // a took it over at 6 s (term 2), renewed at 11 s; c saw term 2
		a.faults.Set(func(f *faultStore) { f.Hang = true })
		if err := rb.rollback(snap, false); err != nil {
			t.Fatal(err)
		}
		noTwoLeaders(t, w, sec(13), sec(40), map[string]*node{"a": a, "c": c})
		if got := w.times(a, StoppedLeading); !reflect.DeepEqual(got, ds(sec(21))) {
			t.Fatalf("a stopped leading at %v; want 21s, its deadline", got)
		}
		// c reads the release put back at 17 s, and takes it L later.
		if got := w.times(c, BecameLeader); !reflect.DeepEqual(got, ds(sec(32))) {
			t.Fatalf("c became leader at %v; want 32s", got)
		}
		if terms := leaderships(a, b, c); !reflect.DeepEqual(terms, []uint64{1, 2, 3}) {
			t.Fatalf("terms of the leaderships in order %v; want [1 2 3]", terms)
		}
	})
}

// B2's limit, B4: the store goes back to before the record existed. A missing record is created
// at once (E2), so the follower leads at its next read while the old leader, whose write was
// lost, still leads: until its next renewal, whose compare-and-swap on the revision gone
// conflicts; it reads the new holder's record and stops. The new leader's term is above the
// old one's (it saw it), which is what a target that checks terms (W8) tells them apart by.
func TestRollbackToNoRecord(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t)
		rb := newRollbackStore(w.Mem)
		snap := rb.snapshot() // no record
		if snap != nil {
			t.Fatalf("snapshot %v; want none", snap)
		}
		a := w.rollbackNode("a", rb, false).start() // creates at 0 s, renews every 5 s
		w.At(sec(1))
		b := w.rollbackNode("b", rb, false).start() // polls at 1, 6, 11, 16 s
		w.At(sec(15.5))
		if err := rb.rollback(snap, false); err != nil {
			t.Fatal(err)
		}
		w.At(sec(30))
		if got := w.times(b, BecameLeader); !reflect.DeepEqual(got, ds(sec(16))) {
			t.Fatalf("b became leader at %v; want 16s, its first read of no record", got)
		}
		if got := w.times(a, StoppedLeading); !reflect.DeepEqual(got, ds(sec(20))) {
			t.Fatalf("a stopped leading at %v; want 20s, its next renewal", got)
		}
		if terms := leaderships(a, b); !reflect.DeepEqual(terms, []uint64{1, 2}) {
			t.Fatalf("terms of the leaderships in order %v; want [1 2]", terms)
		}
	})
}

// B2: a leader whose renewal finds a release of a term below its own (the store went back past
// its takeover) stops leading and waits for that release to expire like any instance that
// saw the newer term, rather than take it again at once.
func TestRollbackLeaderReadsAnOldRelease(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t)
		rb := newRollbackStore(w.Mem)
		b := w.rollbackNode("b", rb, false).start() // leads at 0 s, term 1
		w.At(sec(1))
		a := w.rollbackNode("a", rb, false).start() // polls at 1, 6 s; renews at 11, 16... s
		w.At(sec(2))
		c := w.rollbackNode("c", rb, false).start() // polls at 2, 7, 12, 17... s
		w.At(sec(3))
		if err := b.e.Stop(context.Background()); err != nil {
			t.Fatal(err)
		}
		snap := rb.snapshot() // released, term 1
		w.At(sec(13))         // a took it over at 6 s (term 2)
		if err := rb.rollback(snap, false); err != nil {
			t.Fatal(err)
		}
		noTwoLeaders(t, w, sec(13), sec(40), map[string]*node{"a": a, "c": c})
		// a's renewal at 16 s conflicts and reads the release: it stops, and takes it L later.
		if got := w.times(a, StoppedLeading); !reflect.DeepEqual(got, ds(sec(16))) {
			t.Fatalf("a stopped leading at %v; want 16s, its renewal", got)
		}
		if got := w.times(a, BecameLeader); !reflect.DeepEqual(got, ds(sec(6), sec(31))) {
			t.Fatalf("a became leader at %v; want 6s, then 31s", got)
		}
		if got := c.eventsOf(BecameLeader); len(got) != 0 {
			t.Fatalf("c became leader: %+v", got)
		}
		if terms := leaderships(a, b, c); !reflect.DeepEqual(terms, []uint64{1, 2, 3}) {
			t.Fatalf("terms of the leaderships in order %v; want [1 2 3]", terms)
		}
	})
}
