package cluster

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"testing/synctest"
	"time"
)

// stopNotBefore calls n's StopNotBefore(ctx, t) on a goroutine of its own; the channel
// receives its error and when it returned, relative to the world's start.
func (w *world) stopNotBefore(ctx context.Context, n *node, t time.Duration) <-chan stopResult {
	c := make(chan stopResult, 1)
	go func() {
		err := n.e.StopNotBefore(ctx, w.Start.Add(t))
		c <- stopResult{err, w.Since()}
	}()
	return c
}

type stopResult struct {
	err error
	at  time.Duration
}

// returned reports what c received, if anything yet.
func returned(c <-chan stopResult) (stopResult, bool) {
	select {
	case r := <-c:
		return r, true
	default:
		return stopResult{}, false
	}
}

// C6: a leader asked at 2s to stop not before 40s goes on leading and renewing until 40s, so
// the follower cannot take over; at 40s it releases the lease, and the follower takes it at
// its next attempt (41s).
func TestC6StopNotBefore(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t)
		a := w.node("a", 0, 0).start()
		w.At(sec(1))
		b := w.node("b", 0, 0).start() // attempts at 1s, 6s, ..., 41s
		w.At(sec(2))
		res := w.stopNotBefore(context.Background(), a, sec(40))
		w.At(sec(40) - time.Nanosecond)
		if r, ok := returned(res); ok {
			t.Fatalf("StopNotBefore returned at %v (%v), before 40s", r.at, r.err)
		}
		if !a.e.IsLeader() || b.e.IsLeader() || len(a.eventsOf(StoppedLeading)) > 0 {
			t.Fatalf("just before 40s: a leads %v, b leads %v, a stopped leading %v; want a only, all along",
				a.e.IsLeader(), b.e.IsLeader(), a.eventsOf(StoppedLeading))
		}
		if got := w.times(a, AttemptSucceeded); !reflect.DeepEqual(got, ds(0, sec(5), sec(10), sec(15), sec(20), sec(25), sec(30), sec(35))) {
			t.Fatalf("a's attempts during the hold at %v; want every R", got)
		}
		w.At(sec(40))
		r, ok := returned(res)
		if !ok || r.err != nil || r.at != sec(40) {
			t.Fatalf("StopNotBefore: returned %v at %v with %v; want nil at 40s", ok, r.at, r.err)
		}
		if rec := w.record(); rec["holder"] != "" || rec["term"] != 1.0 {
			t.Fatalf("record after the stop at 40s: %v; want released, term 1", rec)
		}
		w.At(sec(41))
		if got := w.times(b, BecameLeader); !reflect.DeepEqual(got, ds(sec(41))) {
			t.Fatalf("b became leader at %v; want 41s, its first attempt after the release", got)
		}
	})
}

// C6: what ends the hold before its time, and what does not hold at all.
func TestC6StopNotBeforeEnds(t *testing.T) {
	// The leadership is lost during the hold (its renewal fails, E4): nothing left to hold,
	// it stops then.
	t.Run("leadership lost", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			w := newWorld(t)
			a := w.node("a", 0, 0).start()
			w.At(sec(1))
			res := w.stopNotBefore(context.Background(), a, sec(60))
			w.At(sec(7))
			a.faults.Set(func(f *faultStore) { f.Err = errInjected }) // the attempt at 10s fails
			w.At(sec(10))
			if r, ok := returned(res); !ok || r.at != sec(10) {
				t.Fatalf("StopNotBefore returned %v at %v (%v); want at 10s, when the leadership was lost", ok, r.at, r.err)
			}
		})
	})
	// ctx ends during the hold: StopNotBefore returns its error, and the election goes on.
	t.Run("ctx ends", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			w := newWorld(t)
			a := w.node("a", 0, 0).start()
			ctx, cancel := context.WithCancel(context.Background())
			w.At(sec(1))
			res := w.stopNotBefore(ctx, a, sec(60))
			w.At(sec(12))
			cancel()
			synctest.Wait()
			r, ok := returned(res)
			if !ok || r.at != sec(12) || !errors.Is(r.err, context.Canceled) {
				t.Fatalf("StopNotBefore returned %v at %v with %v; want context.Canceled at 12s", ok, r.at, r.err)
			}
			w.At(sec(21))
			if !a.e.IsLeader() || len(w.times(a, AttemptSucceeded)) != 5 {
				t.Fatalf("after the cancelled hold: a leads %v, attempts %v; want it to lead and renew", a.e.IsLeader(), w.times(a, AttemptSucceeded))
			}
		})
	})
	// A follower, a leader whose t has passed, an Elector never started: Stop at once.
	t.Run("nothing to hold", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			w := newWorld(t)
			a := w.node("a", 0, 0).start()
			w.At(sec(1))
			b := w.node("b", 0, 0).start()
			c := w.node("c", 0, 0)
			w.At(sec(2))
			for _, tc := range []struct {
				n *node
				t time.Duration
			}{{b, sec(60)}, {a, sec(2) - time.Nanosecond}, {c, sec(60)}} {
				res := w.stopNotBefore(context.Background(), tc.n, tc.t)
				synctest.Wait()
				if r, ok := returned(res); !ok || r.err != nil || r.at != sec(2) {
					t.Fatalf("%s: StopNotBefore(%v) returned %v at %v with %v; want nil at once (2s)", tc.n.e.InstanceID(), tc.t, ok, r.at, r.err)
				}
			}
		})
	})
}
