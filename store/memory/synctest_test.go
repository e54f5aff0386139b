package memory_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/leasehold/leasehold/store"
	"github.com/leasehold/leasehold/store/memory"
)

// TestInSynctestBubble: the store works inside a testing/synctest bubble (no real I/O, no
// background goroutine: synctest.Test fails if a goroutine of the bubble outlives it or blocks
// forever), so electors over it can be tested on fake time.
func TestInSynctestBubble(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := memory.New()
		ctx := t.Context()

		var wg sync.WaitGroup
		var mu sync.Mutex
		wins := 0
		for i := range 8 {
			wg.Go(func() {
				if err := s.Create(ctx, "cluster:leader", map[string]any{"holder": i, "revision": "1"}); err == nil {
					mu.Lock()
					wins++
					mu.Unlock()
				} else if !errors.Is(err, store.ErrExists) {
					t.Errorf("Create: %v", err)
				}
			})
		}
		wg.Wait()
		if wins != 1 {
			t.Fatalf("%d creators won, want 1", wins)
		}

		// A renewal loop on fake time: one second of bubble time passes instantly.
		start := time.Now()
		for rev := 1; rev <= 5; rev++ {
			time.Sleep(200 * time.Millisecond)
			err := s.Patch(ctx, "cluster:leader", map[string]any{"revision": rev + 1, "renewedAt": time.Now()},
				&store.Condition{Field: "revision", Value: revValue(rev)})
			if err != nil {
				t.Fatalf("renewal %d: %v", rev, err)
			}
		}
		if d := time.Since(start); d != time.Second {
			t.Errorf("bubble time advanced %v, want exactly 1s", d)
		}
		doc, err := s.Get(ctx, "cluster:leader")
		if err != nil || doc["revision"] != 6.0 {
			t.Fatalf("Get = %v, %v; want revision 6", doc, err)
		}

		// A deadline on fake time expires deterministically.
		dctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
		defer cancel()
		time.Sleep(100 * time.Millisecond)
		if _, err := s.Get(dctx, "cluster:leader"); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Get after the deadline: %v, want DeadlineExceeded", err)
		}

		synctest.Wait() // every goroutine of the bubble is done or durably blocked
	})
}

// revValue is the revision as the store holds it: "1" was written as a string, later ones as
// numbers.
func revValue(rev int) any {
	if rev == 1 {
		return "1"
	}
	return rev
}

// TestHeartbeatInSynctestBubble: asked for heartbeats every second (store.WithHeartbeat), a
// watch delivers its first state at once, then a heartbeat at each whole second of fake time; a
// write between two is delivered at its moment, before the next heartbeat.
func TestHeartbeatInSynctestBubble(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := memory.New()
		ctx, cancel := context.WithCancel(store.WithHeartbeat(t.Context(), time.Second))
		start := time.Now()
		type call struct {
			at time.Duration
			c  store.Change
		}
		var mu sync.Mutex
		var calls []call
		done := make(chan error, 1)
		go func() {
			done <- store.Watch(ctx, s, "k", func(c store.Change) {
				mu.Lock()
				calls = append(calls, call{time.Since(start), c})
				mu.Unlock()
			})
		}()
		time.Sleep(2500 * time.Millisecond)
		if err := s.Create(ctx, "k", map[string]any{"n": 1}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Second)
		synctest.Wait()
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Fatalf("Watch returned %v, want context.Canceled", err)
		}
		mu.Lock()
		defer mu.Unlock()
		want := []struct {
			at        time.Duration
			heartbeat bool
			found     bool
		}{{0, false, false}, {time.Second, true, false}, {2 * time.Second, true, false}, {2500 * time.Millisecond, false, true}, {3 * time.Second, true, false}}
		if len(calls) != len(want) {
			t.Fatalf("%d calls %+v, want %d", len(calls), calls, len(want))
		}
		for i, w := range want {
			if c := calls[i]; c.at != w.at || c.c.Heartbeat != w.heartbeat || c.c.Found != w.found {
				t.Errorf("call %d: %+v at %v, want heartbeat %v, found %v at %v", i, c.c, c.at, w.heartbeat, w.found, w.at)
			}
		}
	})
}
