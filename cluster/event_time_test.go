package cluster

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// W7: a StoppedLeading event says when the leadership ended, the instant IsLeader turned
// false, even when the election goroutine notices late (here an Observer that holds it past
// the deadline, as an overloaded process would): (L+R)/2 after the start of the last
// successful attempt, not when the event was sent.
func TestW7StoppedLeadingTimeIsTheDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		fs := newFaultStore(newWorld(t).Mem)
		var (
			mu    sync.Mutex
			stops []Event
			once  sync.Once
		)
		e, err := NewElector(ElectorConfig{
			Lock: NewStoreLock(fs), LeaseName: "leader", LeaseDuration: 15 * time.Second, RenewInterval: 5 * time.Second,
			InstanceID: "a", Logger: quietLogger(),
			Observer: func(ev Event) {
				switch ev.Kind {
				case AttemptFailed:
					// The first failure, at 10s: hold the election goroutine until 18s.
					once.Do(func() { time.Sleep(8 * time.Second) })
				case StoppedLeading:
					mu.Lock()
					stops = append(stops, ev)
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
		defer e.Stop(context.Background())
		time.Sleep(6 * time.Second) // attempts at 0s and 5s succeeded
		synctest.Wait()
		if !e.IsLeader() {
			t.Fatal("a does not lead at 6s")
		}
		fs.Set(func(f *faultStore) { f.Err = errors.New("injected") })
		time.Sleep(14 * time.Second) // to 20s: the attempt at 10s failed, the deadline was 15s
		synctest.Wait()
		mu.Lock()
		defer mu.Unlock()
		if len(stops) != 1 || stops[0].Reason != ReasonDeadline {
			t.Fatalf("StoppedLeading events %v; want one, reason deadline", stops)
		}
		if at := stops[0].Time.Sub(start); at != 15*time.Second {
			t.Fatalf("StoppedLeading at +%v; want +15s, the deadline (5s + (L+R)/2), when IsLeader turned false", at)
		}
	})
}
