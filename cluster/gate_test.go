package cluster

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// gateFunc is a Gate that admits an attempt while the function says so.
type gateFunc func() bool

func (g gateFunc) Admit(*Record, bool) bool { return g() }
func (gateFunc) Drop()                      {}

// Gates, E10: an Elector whose gate refuses, finding a record that names it (here written
// behind its back, as a write whose answer was lost), releases it on the record its watch
// reported, without reading; when that record changed since (the release conflicts), the same
// attempt reads once and releases the record it finds, at once, instead of failing and
// releasing R later. x runs two Electors, as the two slots of N holders (H2): one on jobs/0,
// leading from 0s, and one on jobs/1 behind a Gate that admits it only while the first is
// idle.
func TestGateReleaseConflictReadsOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t)
		cl := &countLock{inner: NewStoreLock(watchingStore{newFaultStore(w.Mem)})}
		var failures []Event
		var mu sync.Mutex
		elector := func(name string, gate Gate) *Elector {
			e, err := NewElector(ElectorConfig{
				Lock: cl, LeaseName: name, LeaseDuration: testL, RenewInterval: testR,
				InstanceID: "x", Logger: quietLogger(), Gate: gate,
				Observer: func(ev Event) {
					if ev.Kind == AttemptFailed {
						mu.Lock()
						failures = append(failures, ev)
						mu.Unlock()
					}
				},
			})
			if err != nil {
				t.Fatal(err)
			}
			if err := e.Start(context.Background()); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = e.Stop(context.Background()) })
			return e
		}
		held := elector("jobs/0", nil)
		w.At(0)
		gated := elector("jobs/1", gateFunc(held.Idle))
		w.At(sec(1))
		if !held.IsLeader() || gated.IsLeader() {
			t.Fatalf("at 1s: jobs/0 led %v, jobs/1 led %v; want jobs/0 alone", held.IsLeader(), gated.IsLeader())
		}
		other := "jobs/1"
		plain := NewStoreLock(w.Mem)
		var once sync.Once
		changed := false
		cl.mu.Lock()
		cl.updateHook = func(ctx context.Context, name string, r Record) (Record, error) {
			if name == other && r.Holder == "" {
				once.Do(func() {
					// The record changes between the watch's report and the release: a
					// renewal of x's lost write lands now. The watch goes silent, so that it
					// does not report it.
					cl.mu.Lock()
					cl.silent = true
					cl.mu.Unlock()
					cur, err := plain.Get(ctx, other)
					if err != nil {
						t.Errorf("read %s: %v", other, err)
						return
					}
					cur.RenewedAt = stamp(time.Now(), cur)
					if _, err := plain.Update(ctx, other, cur); err != nil {
						t.Errorf("change %s: %v", other, err)
					}
					changed = true
				})
			}
			return cl.inner.Update(ctx, name, r)
		}
		cl.mu.Unlock()
		w.At(sec(2))
		now := stamp(time.Now(), Record{})
		if _, err := plain.Create(context.Background(), other, Record{Holder: "x", Session: gated.session, Term: 4, AcquiredAt: now, RenewedAt: now, Duration: testL}); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		rec, err := plain.Get(context.Background(), other)
		if err != nil || rec.Holder != "" || rec.Term != 4 {
			t.Fatalf("%s at 2s: %+v, %v; want released at once, term 4", other, rec, err)
		}
		if !changed {
			t.Fatal("the release was not written on the record known before the change")
		}
		mu.Lock()
		defer mu.Unlock()
		if len(failures) != 0 {
			t.Fatalf("failed attempts: %v; want none", failures)
		}
	})
}

// Idle is false from the start of a leadership until StoppedLeading has been emitted and the
// callbacks have returned. a and b lead leases of their own from 0s; b's deregistered takes
// 3s. At 1s z takes both records; a and b learn it at their renewal (5s) and stop leading:
// neither is idle while its Observer has StoppedLeading, a is idle then, b once its
// deregistered has returned (8s).
func TestElectorIdle(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t)
		var mu sync.Mutex
		idleAtStop := map[string][]bool{}
		elector := func(name string, dereg time.Duration) *Elector {
			var e *Elector
			e, err := NewElector(ElectorConfig{
				Lock: NewStoreLock(w.Mem), LeaseName: name, LeaseDuration: testL, RenewInterval: testR,
				InstanceID: "x", Logger: quietLogger(),
				Observer: func(ev Event) {
					if ev.Kind == StoppedLeading {
						mu.Lock()
						idleAtStop[name] = append(idleAtStop[name], e.Idle())
						mu.Unlock()
					}
				},
			})
			if err != nil {
				t.Fatal(err)
			}
			if dereg > 0 {
				e.WhenLeader(nil, func() { time.Sleep(dereg) })
			}
			if !e.Idle() {
				t.Errorf("%s: not idle before Start", name)
			}
			if err := e.Start(context.Background()); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = e.Stop(context.Background()) })
			return e
		}
		a, b := elector("a", 0), elector("b", 3*time.Second)
		w.At(sec(1))
		if a.Idle() || b.Idle() {
			t.Fatalf("at 1s, leading: a idle %v, b idle %v; want neither", a.Idle(), b.Idle())
		}
		plain := NewStoreLock(w.Mem)
		for _, name := range []string{"a", "b"} {
			rec, err := plain.Get(context.Background(), name)
			if err != nil {
				t.Fatal(err)
			}
			rec.Holder, rec.Term, rec.RenewedAt = "z", rec.Term+1, stamp(time.Now(), rec)
			if _, err := plain.Update(context.Background(), name, rec); err != nil {
				t.Fatal(err)
			}
		}
		w.At(sec(6))
		if a.IsLeader() || b.IsLeader() {
			t.Fatal("a or b leads at 6s, its record taken at 1s")
		}
		if !a.Idle() || b.Idle() {
			t.Errorf("at 6s: a idle %v, b idle %v; want a alone (b's deregistered runs until 8s)", a.Idle(), b.Idle())
		}
		w.At(sec(8))
		if !b.Idle() {
			t.Error("b not idle at 8s, its deregistered returned")
		}
		mu.Lock()
		defer mu.Unlock()
		for _, name := range []string{"a", "b"} {
			if got := idleAtStop[name]; len(got) != 1 || got[0] {
				t.Errorf("%s: Idle during the Observer's StoppedLeading: %v; want one, false", name, got)
			}
		}
	})
}
