package cluster

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

// resign asks the holder of the world's lease to step down, over the shared memory store.
func (w *world) resign(to string) Record {
	w.T.Helper()
	rec, err := Resign(context.Background(), NewStoreLock(w.Mem), "leader", to)
	if err != nil {
		w.T.Fatalf("Resign(%q): %v", to, err)
	}
	return rec
}

// oneLeader fails unless at most one of nodes leads now.
func oneLeader(t *testing.T, nodes ...*node) {
	t.Helper()
	var leaders []string
	for _, n := range nodes {
		if n.e.IsLeader() {
			leaders = append(leaders, n.e.InstanceID())
		}
	}
	if len(leaders) > 1 {
		t.Fatalf("two leaders at once: %v", leaders)
	}
}

// R2, R3: a leader asked at 3s to hand over to c stops leading at its next attempt (5s: the
// attempt fails with ReasonResign, its fn's context ends and deregistered runs), and releases
// at once, from the attempt that follows, with nextHolder c, once its callbacks have
// returned; b, whose attempt comes first (6s), follows the reserved record; c takes it at its
// own (7s), term 2.
func TestR2ResignHandsOverToNamed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t)
		a := w.node("a", 0, 0).start() // attempts at 0, 5, 10, ...
		w.At(sec(1))
		b := w.node("b", 0, 0).start() // 1, 6, 11, ...
		w.At(sec(2))
		c := w.node("c", 0, 0).start() // 2, 7, 12, ...
		w.At(sec(3))
		req := w.resign("c")
		if req.Holder != "a" || req.NextHolder != "c" || req.ResignRequested.IsZero() || !ResignPending(req) {
			t.Fatalf("Resign wrote %+v; want a's record with a pending request naming c", req)
		}
		if rec := w.record(); rec["holder"] != "a" || rec["nextHolder"] != "c" || rec["resignRequestedAt"] == "" {
			t.Fatalf("record after Resign: %v", rec)
		}
		w.At(sec(5))
		stops := a.eventsOf(StoppedLeading)
		if len(stops) != 1 || w.Rel(stops[0].Time) != sec(5) || stops[0].Reason != ReasonResign || !errors.Is(stops[0].Err, ErrResignRequested) {
			t.Fatalf("a's stops: %+v; want one at 5s, reason resign", stops)
		}
		if got := a.deTimes(); len(got) != 1 || w.Rel(got[0]) != sec(5) {
			t.Fatalf("a's deregistered ran at %v; want 5s", got)
		}
		oneLeader(t, a, b, c)
		if rec := w.record(); rec["holder"] != "" || rec["nextHolder"] != "c" || rec["resignRequestedAt"] != "" || rec["term"] != 1.0 {
			t.Fatalf("record at 5s: %v; want released at once, next holder c, no request pending, term 1", rec)
		}
		w.At(sec(6))
		if b.e.IsLeader() || len(b.eventsOf(BecameLeader)) > 0 {
			t.Fatal("b took a lease reserved for c")
		}
		w.At(sec(7))
		if got := w.times(c, BecameLeader); !reflect.DeepEqual(got, ds(sec(7))) {
			t.Fatalf("c became leader at %v; want 7s", got)
		}
		if term, _ := c.e.Term(); term != 2 {
			t.Fatalf("c's term %d; want 2", term)
		}
		if rec := w.record(); rec["holder"] != "c" || rec["nextHolder"] != "" {
			t.Fatalf("record at 7s: %v; want c's, the reservation cleared", rec)
		}
		w.At(sec(40))
		oneLeader(t, a, b, c)
		if !c.e.IsLeader() || len(b.eventsOf(BecameLeader)) > 0 || len(a.eventsOf(BecameLeader)) != 1 {
			t.Fatal("after the handover c must keep the lease")
		}
	})
}

// R2: the release waits for the callbacks: a leader whose deregistered takes 7s (5s to 12s)
// releases at 12s, from the attempt that began at 5s, as soon as they returned, not before.
func TestR2ReleaseAfterCallbacks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t)
		a := w.node("a", 0, 0)
		a.e.WhenLeader(func(ctx context.Context) error {
			<-ctx.Done()
			return nil
		}, func() { time.Sleep(7 * time.Second) })
		a.start()
		w.At(sec(1))
		b := w.node("b", 0, 0).start()
		w.At(sec(3))
		w.resign("b")
		w.At(sec(12) - time.Nanosecond)
		if rec := w.record(); rec["holder"] != "a" {
			t.Fatalf("record just before 12s: %v; want a's until its callbacks return", rec)
		}
		w.At(sec(12))
		if rec := w.record(); rec["holder"] != "" || rec["nextHolder"] != "b" {
			t.Fatalf("record at 12s: %v; want released to b", rec)
		}
		w.At(sec(16))
		if got := w.times(b, BecameLeader); !reflect.DeepEqual(got, ds(sec(16))) {
			t.Fatalf("b became leader at %v; want 16s, its first attempt after the release", got)
		}
	})
}

// R3: a next holder that never comes: the lease stays released (reserved) for L after the
// release; then the first instance whose clock says so takes it: the resigner, which saw its
// own release first (5s + 15s), before b (first saw it at 6s: 21s).
func TestR3NamedAbsent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t)
		a := w.node("a", 0, 0).start()
		w.At(sec(1))
		b := w.node("b", 0, 0).start()
		w.At(sec(3))
		w.resign("ghost")
		w.At(sec(20) - time.Nanosecond)
		oneLeader(t, a, b)
		if a.e.IsLeader() || b.e.IsLeader() {
			t.Fatal("someone leads a lease reserved for an absent instance, within its bound")
		}
		if rec := w.record(); rec["holder"] != "" || rec["nextHolder"] != "ghost" {
			t.Fatalf("record: %v; want released to ghost", rec)
		}
		w.At(sec(20))
		if got := w.times(a, BecameLeader); !reflect.DeepEqual(got, ds(0, sec(20))) {
			t.Fatalf("a became leader at %v; want 0s and 20s", got)
		}
		if term, _ := a.e.Term(); term != 2 {
			t.Fatalf("term %d after the bound; want 2", term)
		}
		w.At(sec(30))
		oneLeader(t, a, b)
		if len(b.eventsOf(BecameLeader)) > 0 {
			t.Fatal("b leads too")
		}
	})
}

// R4: without a next holder, the resigner sits out for L after its release (at 5s): b takes
// the lease at its next attempt (6s); alone, the resigner takes it back at 20s.
func TestR4ResignWithoutNextHolder(t *testing.T) {
	t.Run("another takes it", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			w := newWorld(t)
			a := w.node("a", 0, 0).start()
			w.At(sec(1))
			b := w.node("b", 0, 0).start()
			w.At(sec(3))
			w.resign("")
			w.At(sec(6))
			if got := w.times(b, BecameLeader); !reflect.DeepEqual(got, ds(sec(6))) {
				t.Fatalf("b became leader at %v; want 6s", got)
			}
			w.At(sec(60))
			oneLeader(t, a, b)
			if got := w.times(a, BecameLeader); !reflect.DeepEqual(got, ds(0)) {
				t.Fatalf("a became leader at %v; want 0s only", got)
			}
		})
	})
	t.Run("alone", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			w := newWorld(t)
			a := w.node("a", 0, 0).start()
			w.At(sec(3))
			w.resign("")
			w.At(sec(20) - time.Nanosecond)
			if a.e.IsLeader() {
				t.Fatal("the resigner took its lease back within L of its release")
			}
			w.At(sec(20))
			if got := w.times(a, BecameLeader); !reflect.DeepEqual(got, ds(0, sec(20))) {
				t.Fatalf("a became leader at %v; want 0s and 20s", got)
			}
		})
	})
}

// R2: a request that lands just before the leader's renewal makes that compare-and-swap
// conflict; the attempt reads once (E10), finds the request, and the leader stops leading at
// once for it; its next attempt, at once, releases to the next holder, and b takes it at its
// own (6s).
func TestR2RequestDuringRenewal(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t)
		a := w.node("a", 0, 0).start()
		w.At(sec(1))
		b := w.node("b", 0, 0).start()
		w.At(sec(2))
		a.faults.Set(func(f *faultStore) {
			f.BeforeWrite = func() {
				a.faults.Set(func(f *faultStore) { f.BeforeWrite = nil }) // once
				if _, err := Resign(context.Background(), NewStoreLock(w.Mem), "leader", "b"); err != nil {
					t.Errorf("Resign: %v", err)
				}
			}
		})
		w.At(sec(5))
		stops := a.eventsOf(StoppedLeading)
		if len(stops) != 1 || w.Rel(stops[0].Time) != sec(5) || stops[0].Reason != ReasonResign {
			t.Fatalf("a's stops: %+v; want one at 5s, for the resign its renewal's conflict read", stops)
		}
		if rec := w.record(); rec["holder"] != "" || rec["nextHolder"] != "b" {
			t.Fatalf("record at 5s: %v; want released to b", rec)
		}
		w.At(sec(6))
		if got := w.times(b, BecameLeader); !reflect.DeepEqual(got, ds(sec(6))) {
			t.Fatalf("b became leader at %v; want 6s", got)
		}
		oneLeader(t, a, b)
	})
}

// R1: what Resign refuses, writing nothing: a lease with no record or a released one
// (ErrNotHeld), the holder named as the next one (ErrResignToHolder).
func TestR1ResignRefusals(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t)
		lock := NewStoreLock(w.Mem)
		ctx := context.Background()
		if _, err := Resign(ctx, lock, "leader", ""); !errors.Is(err, ErrNotHeld) || !strings.Contains(err.Error(), `lease "leader"`) {
			t.Fatalf("Resign of a missing lease: %v; want ErrNotHeld naming the lease", err)
		}
		a := w.node("a", 0, 0).start()
		w.At(sec(1))
		before := w.record()
		if _, err := Resign(ctx, lock, "leader", "a"); !errors.Is(err, ErrResignToHolder) {
			t.Fatalf("Resign to the holder: %v; want ErrResignToHolder", err)
		}
		if after := w.record(); after["revision"] != before["revision"] {
			t.Fatal("a refused Resign wrote the record")
		}
		if err := a.e.Stop(ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := Resign(ctx, lock, "leader", "b"); !errors.Is(err, ErrNotHeld) {
			t.Fatalf("Resign of a released lease: %v; want ErrNotHeld", err)
		}
		if _, err := Resign(ctx, nil, "leader", ""); err == nil {
			t.Fatal("Resign with a nil Lock: no error")
		}
	})
}

// R1: the store record's resign fields round-trip, and a document written before them (no
// such fields) decodes with none pending.
func TestR1StoreRecordFields(t *testing.T) {
	at := time.Date(2026, 11, 30, 9, 17, 13, 0, time.UTC)
	r := Record{Holder: "web-1", Term: 4, AcquiredAt: at, RenewedAt: at, Duration: 15 * time.Second, Revision: newRevision(),
		ResignRequested: at.Add(time.Second), NextHolder: "web-2"}
	got, err := decodeRecord("cluster:jobs", encodeRecord(r))
	if err != nil || got != r {
		t.Fatalf("round trip of %+v: %+v, %v", r, got, err)
	}
	old := encodeRecord(r)
	delete(old, "nextHolder")
	delete(old, "resignRequestedAt")
	got, err = decodeRecord("cluster:jobs", old)
	if err != nil || got.NextHolder != "" || !got.ResignRequested.IsZero() || ResignPending(got) {
		t.Fatalf("a record without the resign fields: %+v, %v; want none pending", got, err)
	}
	bad := encodeRecord(r)
	bad["nextHolder"] = 3.0
	if _, err := decodeRecord("cluster:jobs", bad); err == nil || !strings.Contains(err.Error(), `field "nextHolder"`) {
		t.Fatalf("a numeric nextHolder: %v; want an error naming the field", err)
	}
}

// R2, E9: a leader whose watch reports the request steps down at that instant, and releases
// at once; the named follower, told of the release by its own watch, takes it at once too.
// Without the watch's help it would wait for its next renewal (within R).
func TestR2WatchingLeaderResignsAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t)
		b := w.watchNode("b", nil).start() // leads from the start: no watch
		w.At(sec(1))
		a := w.watchNode("a", nil).start() // follows, so watches
		c := w.watchNode("c", nil).start()
		w.At(sec(2))
		if err := b.e.Stop(context.Background()); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		leader, next := a, c
		if c.e.IsLeader() {
			leader, next = c, a
		}
		if !leader.e.IsLeader() {
			t.Fatal("nobody leads after b's release")
		}
		w.At(sec(4)) // between the leader's renewals (2s, 7s)
		w.resign(next.e.InstanceID())
		synctest.Wait()
		stops := leader.eventsOf(StoppedLeading)
		if len(stops) != 1 || w.Rel(stops[0].Time) != sec(4) || stops[0].Reason != ReasonResign {
			t.Fatalf("the leader's stops: %+v; want one at 4s, reason resign", stops)
		}
		if got := w.times(next.node, BecameLeader); !reflect.DeepEqual(got, ds(sec(4))) {
			t.Fatalf("the named instance became leader at %v; want 4s", got)
		}
		if term, _ := next.e.Term(); term != 3 {
			t.Fatalf("term %d; want 3", term)
		}
		w.At(sec(30))
		oneLeader(t, a.node, b.node, c.node)
	})
}

// R2, E10: the release of a resigning instance is written on the record it read before
// waiting for its callbacks; when the record changed meanwhile (here a second request, naming
// c), the write conflicts, and the same attempt reads once and releases the record it finds,
// at once, instead of failing and releasing R later.
func TestR2ReleaseConflictReadsOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t)
		a := w.node("a", 0, 0) // attempts at 0, 5, 10, ...; no watch
		gate := make(chan struct{})
		a.e.WhenLeader(nil, func() { <-gate })
		a.start()
		w.At(sec(2))
		w.resign("")
		w.At(sec(5)) // a steps down; its next attempt read the record, and awaits deregistered
		if stops := a.eventsOf(StoppedLeading); len(stops) != 1 || stops[0].Reason != ReasonResign {
			t.Fatalf("a's stops: %v; want one at 5s, resign", stops)
		}
		w.At(sec(6))
		w.resign("c") // the record changes under the release to come
		close(gate)
		synctest.Wait()
		if rec := w.record(); rec["holder"] != "" || rec["nextHolder"] != "c" {
			t.Fatalf("record at 6s, once the callbacks returned: %v; want released, naming c", rec)
		}
		for _, ev := range a.eventsOf(AttemptFailed) {
			if ev.Reason != ReasonResign {
				t.Fatalf("a's attempt failed at %v: %v (%s); want only the step-down at 5s", w.Rel(ev.Time), ev.Err, ev.Reason)
			}
		}
	})
}
