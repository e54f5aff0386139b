package cluster

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// TestE5AnswerAfterTheDeadline: a renewal's answer that the election goroutine handles after the
// leadership's deadline has passed must not extend that leadership. IsLeader already said false
// (E5, W7) and registrations made since got no fn (W2): the renewal may only start a new
// leadership, with fn called again. The election goroutine is held up here by a slow observer,
// which stands for any scheduling delay between the answer and its handling.
func TestE5AnswerAfterTheDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t)
		faults := newFaultStore(w.mem)
		var mu sync.Mutex
		var stops []Event
		e, err := NewElector(ElectorConfig{
			Lock: NewStoreLock(faults), LeaseDuration: testL, RenewInterval: testR,
			InstanceID: "a", Logger: quietLogger(),
			Observer: func(ev Event) {
				switch {
				case ev.Kind == AttemptSucceeded && w.since() >= sec(5):
					// The second attempt's answer came at 9.8s; handle it at 10.5s, after
					// the first leadership's deadline at (L+R)/2 = 10s.
					time.Sleep(w.start.Add(sec(10.5)).Sub(time.Now()))
				case ev.Kind == StoppedLeading:
					mu.Lock()
					stops = append(stops, ev)
					mu.Unlock()
				}
			},
		})
		if err != nil {
			t.Fatal(err)
		}
		var fnAt []time.Duration
		e.WhenLeader(func(context.Context) error {
			mu.Lock()
			fnAt = append(fnAt, w.since())
			mu.Unlock()
			return nil
		}, nil)
		if err := e.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		defer e.Stop(context.Background())
		w.at(0)
		if !e.IsLeader() {
			t.Fatal("a does not lead at start")
		}
		faults.set(func(f *faultStore) { f.latency = 2400 * time.Millisecond }) // Get + Patch: 4.8s
		w.at(sec(10.2))
		if e.IsLeader() {
			t.Fatal("IsLeader is true at 10.2s, after the deadline at 10s")
		}
		w.at(sec(11))
		mu.Lock()
		defer mu.Unlock()
		if len(stops) != 1 || stops[0].Reason != ReasonDeadline || w.rel(stops[0].Time) != sec(10.5) {
			t.Fatalf("stopped-leading events %+v, want one at 10.5s with reason %q", stops, ReasonDeadline)
		}
		if len(fnAt) != 2 || fnAt[0] != 0 || fnAt[1] != sec(10.5) {
			t.Fatalf("fn ran at %v, want at 0s and again at 10.5s", fnAt)
		}
		if !e.IsLeader() {
			t.Fatal("a does not lead after the renewal that started at 5s (its deadline is 15s)")
		}
	})
}
