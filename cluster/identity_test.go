package cluster

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/leasehold/leasehold/internal/fencing"
)

// E12: two processes given one instance ID never both lead. The second finds a record naming
// its ID but written under another session: it follows it as another holder's, says so once
// at WARN, and takes the lease over (with a new term) only once it has expired on its own
// clock after a crash, or at once after a clean release.
func TestE12TwoProcessesOneInstanceID(t *testing.T) {
	for _, end := range []string{"crash", "stop"} {
		t.Run(end, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				w := newWorld(t)
				logs := &logCapture{}
				a := w.node("web-1", 0, 0).start()
				w.At(sec(1))
				b := w.nodeWith("web-1", 0, 0, logs.Logger()).start()
				// a renews at 0, 5, ..., 30 s; it ends at 32 s.
				for d := sec(1); d <= sec(32); d += sec(0.25) {
					w.At(d)
					if a.e.IsLeader() && b.e.IsLeader() {
						t.Fatalf("both processes named web-1 lead at %v", d)
					}
					if !a.e.IsLeader() {
						t.Fatalf("a (the first web-1) does not lead at %v", d)
					}
				}
				if got := b.eventsOf(BecameLeader); len(got) != 0 {
					t.Fatalf("b (the second web-1) became leader while a led: %+v", got)
				}
				warns := logs.Find("leasehold: another process uses this instance ID: following its leadership; give each process an ID of its own")
				if len(warns) != 1 || warns[0]["level"] != "WARN" || warns[0]["lease"] != "leader" || warns[0]["instance"] != "web-1" {
					t.Fatalf("warnings %v; want one at WARN naming the lease and the instance ID", warns)
				}
				var bound time.Duration
				if end == "crash" {
					a.crash()
					// Its last renewal, at 30 s, expires for b L after b first saw it, at
					// its poll at 31 s (the fault store has no watch): within L + R (E6).
					bound = sec(31) + testL
				} else {
					if err := a.e.Stop(context.Background()); err != nil {
						t.Fatal(err)
					}
					bound = sec(36) // the release, at 32 s, is seen at b's next poll (E1)
				}
				w.At(sec(32) + testL + testR)
				got := w.times(b, BecameLeader)
				if len(got) != 1 || got[0] != bound {
					t.Fatalf("b became leader at %v; want once, at %v", got, bound)
				}
				if term, ok := b.e.Term(); !ok || term != 2 {
					t.Fatalf("b's term %d (leading %v); want 2, a takeover's", term, ok)
				}
				if a.e.IsLeader() {
					t.Fatal("a still leads")
				}
				if n := len(logs.Find("leasehold: another process uses this instance ID: following its leadership; give each process an ID of its own")); n != 1 {
					t.Fatalf("%d warnings in all; want one per Elector", n)
				}
			})
		})
	}
}

// E11: an instance whose leadership ended on a failed attempt, and that finds its own record at
// its next attempt, leads again under a new term, not the one it led before.
func TestE11NewTermAfterLostLeadership(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t)
		a := w.node("a", 0, 0).start()
		w.At(sec(4))
		a.faults.Set(func(f *faultStore) { f.Err = errInjected }) // the attempt at 5 s fails
		w.At(sec(6))
		a.faults.Heal()
		if a.e.IsLeader() {
			t.Fatal("a leads after a failed attempt (E4)")
		}
		w.At(sec(11))
		var terms []uint64
		for _, ev := range a.eventsOf(BecameLeader) {
			terms = append(terms, ev.Term)
		}
		if len(terms) != 2 || terms[0] != 1 || terms[1] != 2 {
			t.Fatalf("terms of a's leaderships %v; want 1, then 2 after the failed attempt", terms)
		}
		if term, _ := w.record()["term"].(float64); term != 2 {
			t.Fatalf("record's term %v; want 2", w.record()["term"])
		}
	})
}

// E11: a record deleted under its leader (a store restarted empty, a deleted row) is created
// again above the last term that instance saw, not at 1.
func TestE11DeletedRecordAboveLastTerm(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t)
		a := w.node("a", 0, 0).start()
		w.At(sec(1))
		if err := a.e.Stop(context.Background()); err != nil { // released at term 1
			t.Fatal(err)
		}
		b := w.node("b", 0, 0).start() // takes it over: term 2
		w.At(sec(2))
		c := w.node("c", 0, 0).start() // follows b, and sees term 2
		w.At(sec(3))
		if term, ok := b.e.Term(); !ok || term != 2 {
			t.Fatalf("b's term %d (leading %v); want 2", term, ok)
		}
		b.crash()
		if err := w.Mem.Delete(context.Background(), "cluster:leader", nil); err != nil {
			t.Fatal(err)
		}
		w.At(sec(10)) // c finds no record at its next poll and creates it
		got := c.eventsOf(BecameLeader)
		if len(got) != 1 || got[0].Term != 3 {
			t.Fatalf("c's leaderships %+v; want one, with term 3: above the 2 it saw", got)
		}
	})
}

// E11: an instance that never saw the lease creates its record at the wall clock's floor, so a
// record lost with its terms comes back above them.
func TestE11FloorAfterLostRecord(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t)
		a := w.node("a", 0, 0).start()
		w.At(sec(1))
		a.crash()
		if term, _ := w.record()["term"].(float64); term != 1 {
			t.Fatalf("record's term %v; want 1 (the floor is 1 on the fake clock of 2000)", w.record()["term"])
		}
		if err := w.Mem.Delete(context.Background(), "cluster:leader", nil); err != nil {
			t.Fatal(err)
		}
		fresh := w.node("fresh", 0, 0)
		// A wall clock in 2026, later than every term written: whole seconds since 2024.
		fresh.e.wallSkew.Store(int64(time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC).Sub(time.Now())))
		want := fencing.Floor(time.Now().Add(time.Duration(fresh.e.wallSkew.Load())))
		fresh.start()
		w.At(sec(2))
		if term, ok := fresh.e.Term(); !ok || term != want || want <= 1 {
			t.Fatalf("fresh's term %d (leading %v); want the floor %d", term, ok, want)
		}
		if term, _ := w.record()["term"].(float64); uint64(term) != want {
			t.Fatalf("record's term %v; want %d", w.record()["term"], want)
		}
	})
}
