package storetest

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync/atomic"
	"testing"
	"time"

	"github.com/leasehold/leasehold/store"
)

// watchWait bounds each wait for a watch's call: generous, since a call that never comes fails
// the test either way, and a loaded machine under -race delays a notification by seconds.
var watchWait = 20 * time.Second

// watchRecorder runs a store's Watch on a goroutine of its own and records what fn is given.
type watchRecorder struct {
	key     string
	states  chan store.Change
	cancel  context.CancelFunc
	done    chan error
	ended   atomic.Bool // set once Watch has returned
	lateRun atomic.Bool // fn was called after Watch returned
}

func startWatch(t *testing.T, s store.Store, key string) *watchRecorder {
	t.Helper()
	return startWatchCtx(t, t.Context(), s, key)
}

// startWatchCtx is startWatch with the watch's context derived from ctx.
func startWatchCtx(t *testing.T, ctx context.Context, s store.Store, key string) *watchRecorder {
	t.Helper()
	ctx, cancel := context.WithCancel(ctx)
	r := &watchRecorder{key: key, states: make(chan store.Change, 1024), cancel: cancel, done: make(chan error, 1)}
	go func() {
		err := store.Watch(ctx, s, key, func(c store.Change) {
			if r.ended.Load() {
				r.lateRun.Store(true)
			}
			select {
			case r.states <- c:
			default: // a test that lets 1024 calls pile up fails by what it reads anyway
			}
		})
		r.ended.Store(true)
		r.done <- err
	}()
	t.Cleanup(func() {
		r.cancel()
		<-r.done
	})
	return r
}

// next returns the watch's next call, failing the test if none comes or the watch ends.
func (r *watchRecorder) next(t *testing.T, what string) store.Change {
	t.Helper()
	select {
	case c := <-r.states:
		return c
	case err := <-r.done:
		r.done <- err
		t.Fatalf("T8: watch of %q ended (%v) while waiting for %s", r.key, err, what)
	case <-time.After(watchWait):
		t.Fatalf("T8: watch of %q: no call within %v while waiting for %s", r.key, watchWait, what)
	}
	return store.Change{}
}

// stop cancels the watch and checks that it returns the context's error, wrapped with the key.
func (r *watchRecorder) stop(t *testing.T) {
	t.Helper()
	r.cancel()
	var err error
	select {
	case err = <-r.done:
		r.done <- err
	case <-time.After(watchWait):
		t.Fatalf("T8: watch of %q did not return within %v of its context's cancellation", r.key, watchWait)
	}
	var ke *store.KeyError
	if !errors.Is(err, context.Canceled) || !errors.As(err, &ke) || ke.Op != "watch" || ke.Key != r.key {
		t.Errorf("T8: watch of %q ended by its context returned %v, want context.Canceled in a *store.KeyError for op watch and the key", r.key, err)
	}
	if r.lateRun.Load() {
		t.Errorf("T8: watch of %q called fn after it returned", r.key)
	}
}

// watchSupported reports whether s watches, checking that a store that cannot says so at once
// with ErrWatchUnsupported.
func watchSupported(t *testing.T, s store.Store) bool {
	t.Helper()
	r := startWatch(t, s, newKey(t))
	select {
	case <-r.states:
		return true
	case err := <-r.done:
		r.done <- err
		if !errors.Is(err, store.ErrWatchUnsupported) {
			t.Fatalf("T8: watch returned %v before its first call, want ErrWatchUnsupported or a first call", err)
		}
		return false
	case <-time.After(watchWait):
		t.Fatalf("T8: watch neither made its first call nor returned ErrWatchUnsupported within %v", watchWait)
	}
	return false
}

func (s *suite) watch(t *testing.T) {
	st := s.open(t)
	if !watchSupported(t, st) {
		t.Log("the store does not watch; Watch answers ErrWatchUnsupported")
		return
	}
	t.Run("Initial", s.run(testWatchInitial))
	t.Run("Order", s.run(testWatchOrder))
	t.Run("OtherKeys", s.run(testWatchOtherKeys))
	t.Run("Cancel", s.run(testWatchCancel))
	t.Run("Concurrent", s.run(testWatchConcurrent))
	t.Run("Heartbeat", s.run(testWatchHeartbeat))
}

func testWatchInitial(t *testing.T, s store.Store, key string) {
	r := startWatch(t, s, key)
	if c := r.next(t, "the first call"); c.Found || c.Doc != nil {
		t.Fatalf("T8: watch of missing %q first delivered %+v, want Found false and no document", key, c)
	}
	mustCreate(t, s, key, map[string]any{"n": 1})
	waitState(t, r, map[string]any{"n": float64(1)})
	r2 := startWatch(t, s, key)
	if c := r2.next(t, "the first call"); !c.Found || !reflect.DeepEqual(c.Doc, map[string]any{"n": float64(1)}) {
		t.Fatalf("T8: watch of existing %q first delivered %+v, want its document", key, c)
	}
}

// testWatchOrder writes a sequence of states, each told apart by n, and checks that the watch
// delivers some of them, in order, ending with the last.
func testWatchOrder(t *testing.T, s store.Store, key string) {
	r := startWatch(t, s, key)
	r.next(t, "the first call")
	const patches = 20
	mustCreate(t, s, key, map[string]any{"n": 0})
	for i := 1; i <= patches; i++ {
		if err := s.Patch(t.Context(), key, map[string]any{"n": i}, &store.Condition{Field: "n", Value: i - 1}); err != nil {
			t.Fatalf("patch %d: %v", i, err)
		}
	}
	if err := s.Delete(t.Context(), key, nil); err != nil {
		t.Fatal(err)
	}
	mustCreate(t, s, key, map[string]any{"n": 100})
	// The index of each state in the order written: deleted after the patches, recreated last.
	index := func(c store.Change) (int, error) {
		if !c.Found {
			return patches + 1, nil
		}
		n, ok := c.Doc["n"].(float64)
		switch {
		case !ok || len(c.Doc) != 1:
			return 0, fmt.Errorf("a document never written: %v", c.Doc)
		case n == 100:
			return patches + 2, nil
		case n >= 0 && n <= patches:
			return int(n), nil
		}
		return 0, fmt.Errorf("a document never written: %v", c.Doc)
	}
	last := -1
	for last != patches+2 {
		c := r.next(t, "the last write's state")
		i, err := index(c)
		if err != nil {
			t.Fatalf("T8: watch of %q delivered %v", key, err)
		}
		if i < last {
			t.Fatalf("T8: watch of %q delivered state %d of the writes after state %d: older after newer", key, i, last)
		}
		last = i
	}
}

func testWatchOtherKeys(t *testing.T, s store.Store, key string) {
	r := startWatch(t, s, key)
	r.next(t, "the first call")
	other := key + "-other"
	mustCreate(t, s, other, map[string]any{"n": 0})
	for i := 1; i <= 5; i++ {
		if err := s.Patch(t.Context(), other, map[string]any{"n": i}, nil); err != nil {
			t.Fatal(err)
		}
	}
	mustCreate(t, s, key, map[string]any{"mine": true})
	for {
		c := r.next(t, "the write to the watched key")
		if c.Found && reflect.DeepEqual(c.Doc, map[string]any{"mine": true}) {
			return
		}
		if c.Found {
			t.Fatalf("T8: watch of %q delivered %v, a document of another key", key, c.Doc)
		}
	}
}

func testWatchCancel(t *testing.T, s store.Store, key string) {
	r := startWatch(t, s, key)
	r.next(t, "the first call")
	r.stop(t)
	// Writes after the watch returned reach no one: fn records a late call if it is made.
	mustCreate(t, s, key, map[string]any{"n": 1})
	if err := s.Patch(t.Context(), key, map[string]any{"n": 2}, nil); err != nil {
		t.Fatal(err)
	}
	if r.lateRun.Load() {
		t.Errorf("T8: watch of %q called fn after it returned", key)
	}
	// A cancelled context before the call: the watch returns at once, with no call.
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	called := false
	err := store.Watch(ctx, s, key, func(store.Change) { called = true })
	if !errors.Is(err, context.Canceled) || called {
		t.Errorf("T8: watch with a cancelled context returned %v (fn called: %v), want context.Canceled and no call", err, called)
	}
}

func testWatchConcurrent(t *testing.T, s store.Store, key string) {
	a, b := startWatch(t, s, key), startWatch(t, s, key)
	a.next(t, "the first call")
	b.next(t, "the first call")
	mustCreate(t, s, key, map[string]any{"n": 7})
	want := map[string]any{"n": float64(7)}
	waitState(t, a, want)
	waitState(t, b, want)
	a.stop(t)
	if err := s.Patch(t.Context(), key, map[string]any{"n": 8}, nil); err != nil {
		t.Fatal(err)
	}
	waitState(t, b, map[string]any{"n": float64(8)})
}

// heartbeatEvery is the interval testWatchHeartbeat asks of a watch: short, so that the test
// is quick, and long enough that a networked store's round trips fit in it.
const heartbeatEvery = 50 * time.Millisecond

// testWatchHeartbeat checks a watch asked for heartbeats (store.WithHeartbeat): its first call
// is the key's state, not a heartbeat; then, with no write, it delivers heartbeats (carrying no
// state); a write is still delivered among them, and heartbeats go on after it. A watch not
// asked delivers none (the other subtests fail on a call that is neither a state nor expected).
func testWatchHeartbeat(t *testing.T, s store.Store, key string) {
	r := startWatchCtx(t, store.WithHeartbeat(t.Context(), heartbeatEvery), s, key)
	if c := r.next(t, "the first call"); c.Heartbeat || c.Found {
		t.Fatalf("T8: watch of missing %q asked for heartbeats first delivered %+v, want its state (Found false)", key, c)
	}
	plain := startWatch(t, s, key)
	plain.next(t, "the first call")
	// heartbeats waits for n heartbeats; the calls among them may repeat the state current,
	// nil for the key missing (a watch may repeat a state).
	heartbeats := func(n int, current map[string]any) {
		t.Helper()
		for i := 0; i < n; {
			c := r.next(t, fmt.Sprintf("heartbeat %d of %d", i+1, n))
			switch {
			case c.Heartbeat && (c.Found || c.Doc != nil):
				t.Fatalf("T8: watch of %q delivered a heartbeat with a state: %+v", key, c)
			case c.Heartbeat:
				i++
			case c.Found != (current != nil) || c.Found && !reflect.DeepEqual(c.Doc, current):
				t.Fatalf("T8: watch of %q delivered %+v among heartbeats, want only the current state %v again", key, c, current)
			}
		}
	}
	heartbeats(3, nil)
	mustCreate(t, s, key, map[string]any{"n": 1})
	for {
		c := r.next(t, "the write among the heartbeats")
		if c.Heartbeat {
			continue
		}
		if c.Found && reflect.DeepEqual(c.Doc, map[string]any{"n": float64(1)}) {
			break
		}
	}
	heartbeats(3, map[string]any{"n": float64(1)})
	// The watch not asked for heartbeats saw the write, and nothing else but states.
	for {
		c := plain.next(t, "the write")
		if c.Heartbeat {
			t.Fatalf("T8: watch of %q not asked for heartbeats delivered one", key)
		}
		if c.Found {
			break
		}
	}
	r.stop(t)
}

// waitState waits for the watch to deliver doc.
func waitState(t *testing.T, r *watchRecorder, doc map[string]any) {
	t.Helper()
	for {
		if c := r.next(t, fmt.Sprintf("document %v", doc)); c.Found && reflect.DeepEqual(c.Doc, doc) {
			return
		}
	}
}
