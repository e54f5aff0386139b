package cluster

import (
	"context"
	"fmt"
	"testing"
	"testing/synctest"
	"time"
)

// H2: the claim passes to another slot only once the callbacks of the slot that had it have
// returned, even when that slot no longer writes and no longer leads. a, alone, holds one of
// two slots from 0s; at 1s another writer takes that slot's record (holder x, renewed then).
// a's attempt at 5s reads it: that slot follows x (it writes no more) and stops leading
// (reason taken), and its deregistered runs until 13s. The other slot, free all along, is
// refused at 5s and 10s, while that deregistered runs, and taken at 15s: a never runs the
// callbacks of two slots at once.
func TestH2ClaimWaitsForCallbacks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t)
		a := w.holders("a", 2, 8*time.Second)
		w.at(sec(1))
		first := a.slot()
		if first < 0 {
			t.Fatal("a holds no slot at 1s")
		}
		lock := NewStoreLock(w.mem)
		name := fmt.Sprintf("jobs/%d", first)
		rec, err := lock.Get(context.Background(), name)
		if err != nil {
			t.Fatal(err)
		}
		rec.Holder, rec.Term, rec.AcquiredAt, rec.RenewedAt = "x", rec.Term+1, time.Now(), time.Now()
		if _, err := lock.Update(context.Background(), name, rec); err != nil {
			t.Fatal(err)
		}

		w.at(sec(5))
		check(t, a)
		stops := 0
		a.mu.Lock()
		for _, ev := range a.events {
			if ev.Kind == StoppedLeading && ev.Lease == name {
				stops++
				if w.rel(ev.Time) != sec(5) || ev.Reason != ReasonTakenBy {
					t.Errorf("slot %d stopped leading at %v, reason %q; want 5s, taken", first, w.rel(ev.Time), ev.Reason)
				}
			}
		}
		a.mu.Unlock()
		if stops != 1 {
			t.Fatalf("slot %d stopped leading %d times by 5s, want once", first, stops)
		}
		for _, d := range []time.Duration{sec(5), sec(10), sec(15) - time.Nanosecond} {
			w.at(d)
			check(t, a)
			if got := a.slot(); got != -1 {
				t.Fatalf("a holds slot %d at %v, while the deregistered of slot %d runs (until 13s)", got, d, first)
			}
		}
		w.at(sec(15))
		check(t, a)
		runs := a.runsCopy()
		if len(runs) != 2 || runs[0].slot != first || w.rel(runs[0].to) != sec(13) ||
			runs[1].slot == first || w.rel(runs[1].from) != sec(15) || runs[1].term != 1 {
			t.Fatalf("a's runs: %+v; want slot %d until 13s, then the other slot from 15s, term 1", runs, first)
		}
	})
}
