package cluster

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// ranked sets e's priority and stability window before it starts (Q1, Q2).
func ranked(e *Elector, priority int, window time.Duration) {
	e.rank.priority, e.rank.window = priority, window
}

// checked gives e a health check that takes took and fails while bad is set (U1-U3), with
// the default HealthFailures (3) and HealthTimeout (R).
func checked(e *Elector, bad *atomic.Bool, took time.Duration) {
	e.rank.check = func(context.Context) error {
		time.Sleep(took)
		if bad.Load() {
			return errors.New("the work is broken")
		}
		return nil
	}
	e.rank.failing, e.rank.wake = true, make(chan struct{}, 1)
}

// watchedLeaders samples, every 100ms until until, that at most one of nodes leads.
func (w *world) watchedLeaders(until time.Duration, nodes ...*node) {
	w.T.Helper()
	for d := w.Since(); d <= until; d += 100 * time.Millisecond {
		w.At(d)
		oneLeader(w.T, nodes...)
	}
}

// Q2, Q3: b, of priority 5, joins a fleet led by a (priority 0) at 1s; with a stability window
// of 30s it asks a to hand over at 31s, not before. a, a leader, keeps no watch (E9): its
// renewal at 35s conflicts, reads the request, and a stops leading and releases to b, whose
// watch reports the release: b takes the lease at that instant (35s) with term 2, and writes
// its priority into the record. c, of priority 0 as a, never asks.
func TestQ2PreemptionAfterTheWindow(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t)
		a := w.watchNode("a", nil).start()
		w.At(sec(0.5))
		c := w.watchNode("c", nil).start()
		w.At(sec(1))
		b := w.watchNode("b", nil)
		ranked(b.e, 5, sec(30))
		b.start()
		w.watchedLeaders(sec(31)-time.Millisecond, a.node, b.node, c.node)
		if !a.e.IsLeader() {
			t.Fatal("a stopped leading before b's stability window ended")
		}
		if rec := w.record(); rec["resignRequestedAt"] != "" || rec["holder"] != "a" {
			t.Fatalf("record before 31s: %v; want a's, no request", rec)
		}
		w.At(sec(31))
		if rec := w.record(); rec["holder"] != "a" || rec["nextHolder"] != "b" || rec["preempt"] != true || rec["nextPriority"] != 5.0 {
			t.Fatalf("record at 31s: %v; want a's, with b's request", rec)
		}
		w.watchedLeaders(sec(35), a.node, b.node, c.node)
		if got := w.times(b.node, BecameLeader); !reflect.DeepEqual(got, ds(sec(35))) {
			t.Fatalf("b became leader at %v; want 35s, a's renewal after the end of b's window", got)
		}
		stops := a.eventsOf(StoppedLeading)
		if len(stops) != 1 || w.Rel(stops[0].Time) != sec(35) || stops[0].Reason != ReasonResign {
			t.Fatalf("a's stops: %+v; want one at 35s, reason resign", stops)
		}
		if term, _ := b.e.Term(); term != 2 {
			t.Fatalf("b's term %d; want 2", term)
		}
		if rec := w.record(); rec["holder"] != "b" || rec["priority"] != 5.0 || rec["priorityTerm"] != 2.0 || rec["preempt"] != false {
			t.Fatalf("record at 35s: %v; want b's, priority 5 for term 2, no request", rec)
		}
		w.watchedLeaders(sec(120), a.node, b.node, c.node)
		if !b.e.IsLeader() || len(a.eventsOf(BecameLeader)) != 1 || len(c.eventsOf(BecameLeader)) != 0 {
			t.Fatal("after the preemption b must keep the lease: equal priorities never preempt")
		}
	})
}

// Q2: the window counts from the last interruption: b, of priority 5, leads first and loses
// the lease when its store fails from 19s to 36s (its renewal at 20s fails: it stops leading,
// E4); a takes the lease over at 30s (E6: b's last renewal at 15s + L). b asks a to hand over
// only a whole window (60s) after it stopped leading: at 80s, the instant of a's renewal; a's
// watch, open since it followed b (E9), reports the request and a releases to b at once (R2).
// Whichever of the request and the renewal the scheduler runs first, the handover is at 80s:
// a renewal that comes second conflicts and reads the request (R2), a request that comes
// second reads the renewed record and asks on it (Q2).
func TestQ2WindowRestartsWhenLeadingEnds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t)
		b := w.watchNode("b", nil)
		ranked(b.e, 5, sec(60))
		b.start() // leads from 0s
		w.At(sec(1))
		a := w.watchNode("a", nil).start()
		w.At(sec(19))
		b.faults.Set(func(f *faultStore) { f.Err = errInjected })
		w.At(sec(20))
		if b.e.IsLeader() {
			t.Fatal("b still leads after its renewal failed")
		}
		w.At(sec(36))
		b.faults.Heal()
		w.At(sec(40))
		if got := w.times(a.node, BecameLeader); !reflect.DeepEqual(got, ds(sec(30))) {
			t.Fatalf("a became leader at %v; want 30s", got)
		}
		w.watchedLeaders(sec(80)-time.Millisecond, a.node, b.node)
		if rec := w.record(); rec["resignRequestedAt"] != "" || rec["holder"] != "a" {
			t.Fatalf("record before 80s: %v; want a's, no request: b asked before a whole window since it stopped leading (20s + 60s)", rec)
		}
		w.At(sec(80))
		if got := w.times(b.node, BecameLeader); len(got) != 2 || got[1] != sec(80) {
			t.Fatalf("b became leader at %v; want 0s, then 80s", got)
		}
		if stops := a.eventsOf(StoppedLeading); len(stops) != 1 || w.Rel(stops[0].Time) != sec(80) || stops[0].Reason != ReasonResign {
			t.Fatalf("a's stops: %+v; want one at 80s, reason resign", stops)
		}
		oneLeader(t, a.node, b.node)
	})
}

// Q3: with several higher candidates, the highest wins. a (priority 0) leads and sees requests
// only at its attempts (no watch): b (3) asks at 31s, c (5) replaces b's request at 32s, and a,
// at 35s, hands over to c alone, which takes it at its next attempt (37s); b never leads.
func TestQ3HighestCandidateWins(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t)
		a := w.node("a", 0, 0).start() // 0, 5, 10, ...
		w.At(sec(1))
		b := w.node("b", 0, 0)
		ranked(b.e, 3, sec(30))
		b.start() // 1, 6, ..., asks at 31
		w.At(sec(2))
		c := w.node("c", 0, 0)
		ranked(c.e, 5, sec(30))
		c.start() // 2, 7, ..., asks at 32
		w.At(sec(31))
		if rec := w.record(); rec["nextHolder"] != "b" || rec["nextPriority"] != 3.0 || rec["preempt"] != true {
			t.Fatalf("record at 31s: %v; want b's request, priority 3", rec)
		}
		w.At(sec(32))
		if rec := w.record(); rec["nextHolder"] != "c" || rec["nextPriority"] != 5.0 || rec["holder"] != "a" {
			t.Fatalf("record at 32s: %v; want c's request replacing b's", rec)
		}
		w.watchedLeaders(sec(37)-time.Millisecond, a, b, c)
		w.At(sec(37))
		if got := w.times(c, BecameLeader); !reflect.DeepEqual(got, ds(sec(37))) {
			t.Fatalf("c became leader at %v; want 37s", got)
		}
		w.watchedLeaders(sec(120), a, b, c)
		if !c.e.IsLeader() || len(b.eventsOf(BecameLeader)) != 0 {
			t.Fatal("the highest candidate must lead, and b never")
		}
	})
}

// Q3: a holder yields only to a candidate that outranks it: a request written at 3s by a
// candidate of lower priority (here forged on the record) is cleared by the holder's renewal
// at 5s, and it keeps leading.
func TestQ3HolderIgnoresALowerRequest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t)
		a := w.watchNode("a", nil)
		ranked(a.e, 7, 0)
		a.start()
		w.At(sec(3))
		lock := NewStoreLock(w.Mem)
		rec, err := lock.Get(context.Background(), "leader")
		if err != nil {
			t.Fatal(err)
		}
		rec.ResignRequested, rec.NextHolder, rec.Preempt, rec.NextPriority = time.Now().UTC(), "z", true, 2
		if _, err := lock.Update(context.Background(), "leader", rec); err != nil {
			t.Fatal(err)
		}
		w.At(sec(5))
		if !a.e.IsLeader() || len(a.eventsOf(StoppedLeading)) != 0 {
			t.Fatal("a stopped leading for a candidate it outranks")
		}
		if rec := w.record(); rec["holder"] != "a" || rec["resignRequestedAt"] != "" || rec["preempt"] != false {
			t.Fatalf("record at 5s: %v; want a's, the request cleared by its renewal", rec)
		}
	})
}

// Q4: a candidate that dies after asking. b (priority 5) asks at 31s; a (no watch) hands over at
// 35s, the release reserved for b, which crashed at 33s. The reservation of a preemption lasts
// R, not D: a, which saw its release at 35s, takes the lease back at 40s; c, which first saw
// it at 37s, would have at 42s.
func TestQ4PreemptingCandidateDies(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t)
		a := w.node("a", 0, 0).start() // 0, 5, 10, ...
		w.At(sec(1))
		b := w.node("b", 0, 0)
		ranked(b.e, 5, sec(30))
		b.start() // 1, 6, ..., asks at 31, next attempt 36
		w.At(sec(2))
		c := w.node("c", 0, 0).start() // 2, 7, ...
		w.At(sec(33))
		b.crash()
		w.At(sec(35))
		if rec := w.record(); rec["holder"] != "" || rec["nextHolder"] != "b" || rec["preempt"] != true {
			t.Fatalf("record at 35s: %v; want released, reserved for b by a preemption", rec)
		}
		w.watchedLeaders(sec(40)-time.Millisecond, a, c)
		if a.e.IsLeader() || c.e.IsLeader() {
			t.Fatal("someone took a reserved release within R")
		}
		w.At(sec(40))
		if got := w.times(a, BecameLeader); len(got) != 2 || got[1] != sec(40) {
			t.Fatalf("a became leader at %v; want 0s and 40s, R after its release", got)
		}
		if term, _ := a.e.Term(); term != 2 {
			t.Fatalf("a's term %d; want 2", term)
		}
		w.watchedLeaders(sec(60), a, c)
	})
}

// U2, U1: a leader whose check fails HealthFailures times in a row (checks begun at 20s, 25s,
// 30s, each taking 1s) says so in its record at the third, at once (31s); b, healthy and
// watching, asks at once (no window for an unhealthy holder), and a, whose watch (opened while
// it waited for its first check to pass, following the missing record) reports the request,
// hands over at that instant. a does not take the lease back while its check fails, nor once
// it passes again (b's priority equals its own).
func TestU2UnhealthyLeaderHandsOver(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t)
		var bad atomic.Bool
		a := w.watchNode("a", nil)
		checked(a.e, &bad, time.Second)
		a.start() // checks from 0, 5, 10, ..., each ending 1s later; the record is created at 1s
		w.At(sec(1))
		b := w.watchNode("b", nil).start()
		w.At(sec(19))
		if !a.e.IsLeader() {
			t.Fatal("a, healthy, must lead")
		}
		bad.Store(true)
		w.watchedLeaders(sec(31)-time.Millisecond, a.node, b.node)
		if !a.e.IsLeader() {
			t.Fatal("a handed over before its third failed check")
		}
		if rec := w.record(); rec["unhealthy"] != false {
			t.Fatalf("record before 31s: %v; want a healthy holder", rec)
		}
		w.At(sec(31))
		if got := w.times(b.node, BecameLeader); !reflect.DeepEqual(got, ds(sec(31))) {
			t.Fatalf("b became leader at %v; want 31s, a's third failed check", got)
		}
		stops := a.eventsOf(StoppedLeading)
		if len(stops) != 1 || w.Rel(stops[0].Time) != sec(31) || stops[0].Reason != ReasonResign {
			t.Fatalf("a's stops: %+v; want one at 31s, reason resign", stops)
		}
		w.watchedLeaders(sec(60), a.node, b.node)
		bad.Store(false)
		w.watchedLeaders(sec(200), a.node, b.node)
		if !b.e.IsLeader() || len(a.eventsOf(BecameLeader)) != 1 {
			t.Fatal("a took the lease back")
		}
	})
}

// U3: when every candidate fails its check, the leader keeps leading: nobody healthy asks it to
// hand over. Nobody leads at first either, as the record is missing: a failing candidate
// creates it only as a last resort, L + R after it first found it missing (U1): a, at 20s.
func TestU3AllUnhealthyLeaderKeepsLeading(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t)
		var bad atomic.Bool
		bad.Store(true)
		a := w.watchNode("a", nil)
		checked(a.e, &bad, 0)
		a.start() // 0, 5, 10, ...
		w.At(sec(1))
		b := w.watchNode("b", nil)
		checked(b.e, &bad, 0)
		b.start()
		w.watchedLeaders(sec(20)-time.Millisecond, a.node, b.node)
		if a.e.IsLeader() || b.e.IsLeader() || w.record() != nil {
			t.Fatal("a failing candidate created the record before its last resort")
		}
		w.At(sec(20))
		if got := w.times(a.node, BecameLeader); !reflect.DeepEqual(got, ds(sec(20))) {
			t.Fatalf("a became leader at %v; want 20s", got)
		}
		if rec := w.record(); rec["unhealthy"] != true || rec["priorityTerm"] != rec["term"] {
			t.Fatalf("record at 20s: %v; want a's, unhealthy for its term", rec)
		}
		w.watchedLeaders(sec(200), a.node, b.node)
		if !a.e.IsLeader() || len(a.eventsOf(StoppedLeading)) != 0 {
			t.Fatal("the leader of an all-unhealthy fleet must keep leading")
		}
	})
}

// U1: a failing candidate takes a free lease only R after a healthy one would. a crashes after
// its renewal at 10s: c, healthy, takes over at 25s (E6: 10s + L); b, failing, has not (it would
// at 30s). Then c stops at 40s: b, alone and failing, takes the release as a last resort, D + R
// after it saw it (40s + 15s + 5s = 60s).
func TestU1FailingCandidateTakesLast(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t)
		var bad atomic.Bool
		bad.Store(true)
		a := w.watchNode("a", nil).start()
		w.At(sec(1))
		b := w.watchNode("b", nil)
		checked(b.e, &bad, 0)
		b.start()
		w.At(sec(2))
		c := w.watchNode("c", nil).start()
		w.At(sec(12))
		a.crash()
		w.watchedLeaders(sec(25), b.node, c.node)
		if got := w.times(c.node, BecameLeader); !reflect.DeepEqual(got, ds(sec(25))) {
			t.Fatalf("c became leader at %v; want 25s", got)
		}
		w.At(sec(40))
		if err := c.e.Stop(context.Background()); err != nil {
			t.Fatal(err)
		}
		w.watchedLeaders(sec(60)-time.Millisecond, b.node, c.node)
		if b.e.IsLeader() {
			t.Fatal("b, failing, took the release before its last resort")
		}
		w.At(sec(60))
		if got := w.times(b.node, BecameLeader); !reflect.DeepEqual(got, ds(sec(60))) {
			t.Fatalf("b became leader at %v; want 60s", got)
		}
	})
}

// U1: a check that overruns its timeout, or panics, fails.
func TestU1CheckTimeoutAndPanicFail(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t)
		n := w.node("a", 0, 0)
		n.e.rank.timeout = time.Second
		n.e.rank.check = func(ctx context.Context) error { <-ctx.Done(); return nil }
		if err := n.e.runCheck(context.Background()); err == nil || !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("a check that returns nil after its timeout: %v; want a failure", err)
		}
		n.e.rank.check = func(context.Context) error { panic("boom") }
		if err := n.e.runCheck(context.Background()); err == nil || !strings.Contains(err.Error(), "boom") {
			t.Fatalf("a panicking check: %v; want a failure naming the panic", err)
		}
	})
}

// E0: the priority and health settings are checked by the constructor, each error naming the
// field; defaults are filled.
func TestE0PriorityAndHealthSettings(t *testing.T) {
	lock := NewStoreLock(newFaultStore(nil))
	base := ElectorConfig{Lock: lock, LeaseDuration: testL, RenewInterval: testR}
	for _, tc := range []struct {
		name string
		edit func(*ElectorConfig)
		want string
	}{
		{"window", func(c *ElectorConfig) { c.StabilityWindow = -time.Second }, "StabilityWindow"},
		{"failures", func(c *ElectorConfig) { c.HealthFailures = -1 }, "HealthFailures"},
		{"timeout above R", func(c *ElectorConfig) { c.HealthTimeout = 6 * time.Second }, "HealthTimeout"},
		{"priority", func(c *ElectorConfig) { c.Priority = 1 << 40 }, "Priority"},
	} {
		cfg := base
		tc.edit(&cfg)
		if _, err := NewElector(cfg); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: NewElector error %v; want one naming %s", tc.name, err, tc.want)
		}
	}
	e, err := NewElector(base)
	if err != nil {
		t.Fatal(err)
	}
	if e.rank.window != 3*testL || e.rank.failures != 3 || e.rank.timeout != testR || e.rank.failing {
		t.Fatalf("defaults: %+v; want window 3L, 3 failures, timeout R, not failing without a check", e.rank)
	}
}

// Q2, E6: a request is a revision first seen once its write has answered, not when the record
// it was written on was read. b reads a's record at 31s and asks; its write takes 2s to land
// (33s); a crashes at 32s. b takes the lease over at 48s, L after its request landed: counting
// from its read (31s), it would have taken over at 46s, while a record written at 33s may still
// be its holder's for L on another follower's clock.
func TestQ2RequestSeenOnceWritten(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t)
		a := w.node("a", 0, 0).start() // 0, 5, ..., 30
		w.At(sec(1))
		b := w.node("b", 0, 0)
		ranked(b.e, 5, sec(30))
		b.start() // 1, 6, ..., asks at 31
		w.At(sec(30.5))
		b.faults.Set(func(f *faultStore) { f.BeforeWrite = func() { time.Sleep(2 * time.Second) } })
		w.At(sec(32))
		a.crash()
		w.At(sec(33))
		if rec := w.record(); rec["nextHolder"] != "b" || rec["preempt"] != true {
			t.Fatalf("record at 33s: %v; want a's with b's request", rec)
		}
		b.faults.Set(func(f *faultStore) { f.BeforeWrite = nil })
		w.At(sec(48) - time.Nanosecond)
		if b.e.IsLeader() {
			t.Fatal("b took over before L had passed since its request landed")
		}
		w.At(sec(48))
		if got := w.times(b, BecameLeader); !reflect.DeepEqual(got, ds(sec(48))) {
			t.Fatalf("b became leader at %v; want 48s", got)
		}
	})
}

// Q2: a request due at the instant of the holder's renewal lands at that instant, whichever of
// the two the scheduler runs first. b (priority 5, a 29s window from 1s) asks at 30s, when a
// renews; the hooks force the order that lost the request before: b reads, a's renewal lands,
// then b's request, on the revision b read, loses its compare-and-swap. b reads once more and
// asks on the renewed record: the request is in the record at 30s, not R later. a, which keeps
// no watch (E9), sees it at its renewal at 35s and hands over then.
func TestQ2RequestLosingToARenewalAsksAgain(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t)
		var (
			bRead   = make(chan struct{}) // b's read at 30s returned
			renewed = make(chan struct{}) // a's renewal at 30s landed
			readAt  sync.Once
			renewAt sync.Once
			askAt   sync.Once
		)
		wait := func(ctx context.Context, c chan struct{}) error {
			select {
			case <-c:
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		a := w.watchNode("a", func(l *countLock) {
			l.updateHook = func(ctx context.Context, name string, r Record) (Record, error) {
				if w.Since() < sec(30) || r.Holder != "a" {
					return l.inner.Update(ctx, name, r)
				}
				if err := wait(ctx, bRead); err != nil {
					return Record{}, err
				}
				rec, err := l.inner.Update(ctx, name, r)
				renewAt.Do(func() { close(renewed) })
				return rec, err
			}
		}).start() // 0, 5, ..., 30, 35
		w.At(sec(1))
		b := w.watchNode("b", func(l *countLock) {
			l.getHook = func(context.Context) {
				if w.Since() >= sec(30) {
					readAt.Do(func() { close(bRead) })
				}
			}
			l.updateHook = func(ctx context.Context, name string, r Record) (Record, error) {
				var err error
				if r.Preempt && r.NextHolder == "b" {
					askAt.Do(func() { err = wait(ctx, renewed) })
				}
				if err != nil {
					return Record{}, err
				}
				return l.inner.Update(ctx, name, r)
			}
		})
		ranked(b.e, 5, sec(29))
		b.start() // reads at 1s, then listens; asks at 30s
		w.At(sec(30))
		if rec := w.record(); rec["holder"] != "a" || rec["nextHolder"] != "b" || rec["preempt"] != true {
			t.Fatalf("record at 30s: %v; want a's, with b's request (it lost its race to a's renewal, then asked again)", rec)
		}
		w.At(sec(35))
		if got := w.times(b.node, BecameLeader); !reflect.DeepEqual(got, ds(sec(35))) {
			t.Fatalf("b became leader at %v; want 35s, a's renewal after b's request", got)
		}
		stops := a.eventsOf(StoppedLeading)
		if len(stops) != 1 || w.Rel(stops[0].Time) != sec(35) || stops[0].Reason != ReasonResign {
			t.Fatalf("a's stops: %+v; want one at 35s, reason resign", stops)
		}
	})
}
