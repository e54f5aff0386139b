package holders

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/leasehold/leasehold/cluster"
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
		w.At(sec(1))
		first := a.slot()
		if first < 0 {
			t.Fatal("a holds no slot at 1s")
		}
		lock := cluster.NewStoreLock(w.Mem)
		name := fmt.Sprintf("jobs/%d", first)
		rec, err := lock.Get(context.Background(), name)
		if err != nil {
			t.Fatal(err)
		}
		rec.Holder, rec.Term, rec.AcquiredAt, rec.RenewedAt = "x", rec.Term+1, time.Now(), time.Now()
		if _, err := lock.Update(context.Background(), name, rec); err != nil {
			t.Fatal(err)
		}

		w.At(sec(5))
		check(t, a)
		stops := 0
		a.mu.Lock()
		for _, ev := range a.events {
			if ev.Kind == cluster.StoppedLeading && ev.Lease == name {
				stops++
				if w.Rel(ev.Time) != sec(5) || ev.Reason != cluster.ReasonTakenBy {
					t.Errorf("slot %d stopped leading at %v, reason %q; want 5s, taken", first, w.Rel(ev.Time), ev.Reason)
				}
			}
		}
		a.mu.Unlock()
		if stops != 1 {
			t.Fatalf("slot %d stopped leading %d times by 5s, want once", first, stops)
		}
		for _, d := range []time.Duration{sec(5), sec(10), sec(15) - time.Nanosecond} {
			w.At(d)
			check(t, a)
			if got := a.slot(); got != -1 {
				t.Fatalf("a holds slot %d at %v, while the deregistered of slot %d runs (until 13s)", got, d, first)
			}
		}
		w.At(sec(15))
		check(t, a)
		runs := a.runsCopy()
		if len(runs) != 2 || runs[0].slot != first || w.Rel(runs[0].to) != sec(13) ||
			runs[1].slot == first || w.Rel(runs[1].from) != sec(15) || runs[1].term != 1 {
			t.Fatalf("a's runs: %+v; want slot %d until 13s, then the other slot from 15s, term 1", runs, first)
		}
	})
}

// H2, E9: a slot refused because the instance holds another is read every R even while its
// watch proves alive by heartbeats: what makes it takeable is the end of the other slot's
// claim, which no write to its record reports. x holds one slot; the other has no record. At
// 2s z takes x's slot; x learns it at its renewal (5s) and follows, and its other slot takes
// its free record at its next attempt (10s at the latest), not when the observation of the
// missing record expires (15s).
func TestH2RefusedSlotReadEveryRUnderHeartbeats(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t)
		cl := &beatLock{Lock: cluster.NewStoreLock(w.Mem)}
		h, err := New(cluster.ElectorConfig{
			Lock: cl, LeaseName: "jobs", LeaseDuration: testL, RenewInterval: testR,
			InstanceID: "x", Logger: quietLogger(),
		}, 2)
		if err != nil {
			t.Fatal(err)
		}
		if err := h.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = h.Stop(context.Background()) })
		w.At(sec(1))
		held, _, ok := h.Slot()
		if !ok {
			t.Fatal("x holds no slot")
		}
		plain := cluster.NewStoreLock(w.Mem)
		name := SlotName(cl, "jobs", held, 2)
		w.At(sec(2))
		cur, err := plain.Get(context.Background(), name)
		if err != nil {
			t.Fatal(err)
		}
		cur.Holder, cur.Term, cur.RenewedAt = "z", cur.Term+1, stamp(time.Now(), cur)
		if _, err := plain.Update(context.Background(), name, cur); err != nil {
			t.Fatal(err)
		}
		w.At(sec(10))
		if cl.beats.Load() == 0 {
			t.Fatal("no heartbeat came: the test would not test them")
		}
		if slot, _, ok := h.Slot(); !ok || slot != 1-held {
			t.Fatalf("x holds slot %d (%v) at 10s; want the other slot, %d, taken at an attempt after 5s", slot, ok, 1-held)
		}
	})
}

// beatLock is a Lock whose watch counts the heartbeats it delivers (E9).
type beatLock struct {
	cluster.Lock
	beats atomic.Int64
}

func (l *beatLock) Watch(ctx context.Context, name string, fn func(cluster.Record, error)) error {
	return l.Lock.(cluster.Watcher).Watch(ctx, name, func(r cluster.Record, err error) {
		if errors.Is(err, cluster.ErrHeartbeat) {
			l.beats.Add(1)
		}
		fn(r, err)
	})
}
