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
// (E5, W7) and registrations made since got no fn (W2). Nor may it start a new leadership on
// the term of the one that ended (E11): the instance writes a new term at once, and leads on
// that, with fn called again and a larger term. The election goroutine is held up here by a
// slow observer, which stands for any scheduling delay between the answer and its handling.
func TestE5AnswerAfterTheDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t)
		faults := newFaultStore(w.Mem)
		var mu sync.Mutex
		var stops []Event
		e, err := NewElector(ElectorConfig{
			Lock: NewStoreLock(faults), LeaseDuration: testL, RenewInterval: testR,
			InstanceID: "a", Logger: quietLogger(),
			Observer: func(ev Event) {
				switch {
				case ev.Kind == AttemptSucceeded && w.Since() >= sec(5):
					// The second attempt's answer came at 9.8s; handle it at 10.5s, after
					// the first leadership's deadline at (L+R)/2 = 10s.
					time.Sleep(w.Start.Add(sec(10.5)).Sub(time.Now()))
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
		var terms []uint64
		e.WhenLeader(func(ctx context.Context) error {
			term, _ := TermOf(ctx)
			mu.Lock()
			fnAt = append(fnAt, w.Since())
			terms = append(terms, term)
			mu.Unlock()
			return nil
		}, nil)
		if err := e.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		defer e.Stop(context.Background())
		w.At(0)
		if !e.IsLeader() {
			t.Fatal("a does not lead at start")
		}
		faults.Set(func(f *faultStore) { f.Latency = 2400 * time.Millisecond }) // Get + Patch: 4.8s
		w.At(sec(10.2))
		if e.IsLeader() {
			t.Fatal("IsLeader is true at 10.2s, after the deadline at 10s")
		}
		w.At(sec(11))
		if e.IsLeader() {
			t.Fatal("a leads at 11s on the answer handled after the deadline: that term was led already (E11)")
		}
		w.At(sec(13))
		mu.Lock()
		defer mu.Unlock()
		// Sent at 10.5s, it says 10s: when IsLeader turned false (W7).
		if len(stops) != 1 || stops[0].Reason != ReasonDeadline || w.Rel(stops[0].Time) != sec(10) {
			t.Fatalf("stopped-leading events %+v, want one at 10s with reason %q", stops, ReasonDeadline)
		}
		// The new term is written at once, on the revision the late answer brought (E10): one
		// Patch of 2.4s.
		if len(fnAt) != 2 || fnAt[0] != 0 || fnAt[1] != sec(12.9) {
			t.Fatalf("fn ran at %v, want at 0s and again at 12.9s", fnAt)
		}
		if terms[0] != 1 || terms[1] != 2 {
			t.Fatalf("fn's terms %v, want 1 then 2: a leadership never repeats a term (E11)", terms)
		}
		if term, ok := e.Term(); !ok || term != 2 {
			t.Fatalf("Term() = %d, %v at 13s; want 2, leading", term, ok)
		}
	})
}
