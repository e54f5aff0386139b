package storetest

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/leasehold/leasehold/store"
)

// What the conformance suite's T8/Watch subtests cannot see of a networked store's watch:
// what happens when its connection fails or the store is closed, and how it serves many
// watches at once. A store module calls the ones that apply from its own tests.

// WatchConnectionLost checks that a watch that knows it failed says so (T8): target is the
// server's host:port on loopback, and open returns a store whose client reaches it at addr
// instead, through a loopback proxy. Once a watch has made its first call, the proxy resets
// every connection; the watch must return an error, not its context's, naming the key, rather
// than sit silent. A new watch on the same store then delivers the key's state and a later
// write: the store recovers by itself.
//
// It suits stores whose watch cannot go on over a new connection without losing writes; a
// store whose client resumes a watch where it stopped (etcd) checks that instead.
func WatchConnectionLost(t *testing.T, target string, open func(t *testing.T, addr string) store.Store) {
	t.Helper()
	p, s := openProxied(t, target, open)
	key := newKey(t)
	mustCreate(t, s, key, map[string]any{"n": 1})
	r := startWatch(t, s, key)
	if c := r.next(t, "the first call"); !c.Found {
		t.Fatalf("T8: watch of %q first delivered %+v, want its document", key, c)
	}
	start := time.Now()
	p.Reset()
	var werr error
	select {
	case werr = <-r.done:
		r.done <- werr
	case <-time.After(watchWait):
		t.Fatalf("T8: watch of %q still running %v after its connection was reset", key, watchWait)
	}
	t.Logf("the watch returned %v after the reset: %v", time.Since(start), werr)
	var ke *store.KeyError
	if werr == nil || errors.Is(werr, context.Canceled) || !errors.As(werr, &ke) || ke.Key != key {
		t.Errorf("T8: watch of %q ended by a reset connection returned %v, want an error of its own in a *store.KeyError naming the key", key, werr)
	}
	// The store recovers: a new watch sees the key, then a write made after its first call.
	waitRecovered(t, s, key)
	r2 := startWatch(t, s, key)
	if c := r2.next(t, "the first call after the reset"); !c.Found {
		t.Fatalf("T8: watch of %q after the reset first delivered %+v, want its document", key, c)
	}
	if err := s.Patch(t.Context(), key, map[string]any{"n": 2}, nil); err != nil {
		t.Fatal(err)
	}
	waitState(t, r2, map[string]any{"n": float64(2)})
}

// WatchClosed checks that closing a store ends its watches (T8): each returns an error, not
// its context's, in a *store.KeyError naming its key, and a watch of the closed store returns
// an error without a call.
func WatchClosed(t *testing.T, s store.Store) {
	t.Helper()
	var rs []*watchRecorder
	for range 3 {
		r := startWatch(t, s, newKey(t))
		r.next(t, "the first call")
		rs = append(rs, r)
	}
	if err := store.Close(s); err != nil {
		t.Fatal(err)
	}
	for _, r := range rs {
		var err error
		select {
		case err = <-r.done:
			r.done <- err
		case <-time.After(watchWait):
			t.Fatalf("T8: watch of %q still running %v after the store was closed", r.key, watchWait)
		}
		var ke *store.KeyError
		if err == nil || errors.Is(err, context.Canceled) || !errors.As(err, &ke) || ke.Key != r.key {
			t.Errorf("T8: watch of %q ended by the store's Close returned %v, want an error of its own in a *store.KeyError naming the key", r.key, err)
		}
		t.Logf("a watch ended by Close: %v", err)
		if r.lateRun.Load() {
			t.Errorf("T8: watch of %q called fn after it returned", r.key)
		}
	}
	ctx, cancel := context.WithTimeout(t.Context(), watchWait)
	defer cancel()
	called := false
	err := store.Watch(ctx, s, newKey(t), func(store.Change) { called = true })
	if err == nil || called || ctx.Err() != nil {
		t.Errorf("T8: watch of a closed store returned %v (fn called: %v, context: %v), want an error at once and no call", err, called, ctx.Err())
	}
}

// WatchMany runs n watches of n keys of s at once, writes each key four times from n
// goroutines (a Create, then Patches each conditioned on the one before), and checks that each
// watch sees its own key's last document and never another key's (T8): what a store that shares
// one connection or consumer among its watches, or one inotify instance, must demultiplex. Once
// a watch has delivered a document it must not deliver a deletion, which was never written;
// before, a call may repeat the first call's state (the document missing), as Watcher allows.
func WatchMany(t *testing.T, s store.Store, n int) {
	t.Helper()
	base := newKey(t)
	keys := make([]string, n)
	rs := make([]*watchRecorder, n)
	for i := range keys {
		keys[i] = fmt.Sprintf("%s-%d", base, i)
		rs[i] = startWatch(t, s, keys[i])
	}
	for i, r := range rs {
		if c := r.next(t, "the first call"); c.Found {
			t.Fatalf("T8: watch of missing %q first delivered %v", keys[i], c.Doc)
		}
	}
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for _, key := range keys {
		wg.Go(func() {
			if err := s.Create(t.Context(), key, map[string]any{"key": key, "n": 0}); err != nil {
				errs <- err
				return
			}
			for i := 1; i <= 3; i++ {
				if err := s.Patch(t.Context(), key, map[string]any{"n": i}, &store.Condition{Field: "n", Value: i - 1}); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for i, r := range rs {
		want := map[string]any{"key": keys[i], "n": float64(3)}
		found := false // whether the watch has delivered a document of the key yet
		for {
			c := r.next(t, "the last write")
			if !c.Found {
				if found {
					t.Fatalf("T8: watch of %q delivered a deletion that was never written", keys[i])
				}
				continue // the first call's state again, which a watch may repeat
			}
			found = true
			if c.Doc["key"] != keys[i] {
				t.Fatalf("T8: watch of %q delivered %v, a document of another key", keys[i], c.Doc)
			}
			if reflect.DeepEqual(c.Doc, want) {
				break
			}
		}
	}
}

// BenchmarkWatchLatency measures how long a write takes to reach a watch of its key: each
// iteration patches the key and waits for the watch's call with that write's document, so the
// time is the write's own round trip and the notification's. It reports the p50 and p99 (in ms,
// to the µs). A store module's benchmark is one line:
//
//	func BenchmarkWatchLatency(b *testing.B) {
//		storetest.BenchmarkWatchLatency(b, func(b *testing.B) store.Store { return openTest(b) })
//	}
func BenchmarkWatchLatency(b *testing.B, open func(b *testing.B) store.Store) {
	s := open(b)
	ctx, cancel := context.WithCancel(b.Context())
	key := fmt.Sprintf("bench-watch-%d-%d", benchRun.Add(1), time.Now().UnixNano())
	if err := s.Create(ctx, key, map[string]any{"n": 0}); err != nil {
		b.Fatal(err)
	}
	seen := make(chan float64, 1024)
	done := make(chan error, 1)
	go func() {
		done <- store.Watch(ctx, s, key, func(c store.Change) {
			if n, ok := c.Doc["n"].(float64); ok {
				seen <- n
			}
		})
	}()
	defer func() {
		cancel()
		<-done
	}()
	wait := func(n float64) {
		for {
			select {
			case got := <-seen:
				if got == n {
					return
				}
			case err := <-done:
				b.Fatalf("the watch ended: %v", err)
			case <-time.After(watchWait):
				b.Fatalf("no call with n=%v within %v", n, watchWait)
			}
		}
	}
	wait(0)
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 1; i <= b.N; i++ {
		t0 := time.Now()
		if err := s.Patch(ctx, key, map[string]any{"n": i}, nil); err != nil {
			b.Fatal(err)
		}
		wait(float64(i))
		lat = append(lat, time.Since(t0))
	}
	b.StopTimer()
	slices.Sort(lat)
	pct := func(p float64) float64 {
		return float64(lat[min(len(lat)-1, int(p*float64(len(lat))))].Microseconds()) / 1000
	}
	b.ReportMetric(pct(0.50), "p50-ms")
	b.ReportMetric(pct(0.99), "p99-ms")
}

// WatchHeartbeatFrozen checks a watch's heartbeats (store.WithHeartbeat) against a connection
// that goes silent without failing (T8): target is the server's host:port on loopback, and open
// returns a store whose client reaches it at addr instead, through a loopback proxy. The watch,
// asked for heartbeats every 100ms, delivers them; then the proxy stops forwarding without
// closing anything (tcpproxy's Cut), and the heartbeats stop: at most the two whose answers
// may already have been on their way, until the watch ends with an error of its own (resumes
// false: the store gives up the silent connection, and its caller watches again), or until the
// client opens another connection (resumes true: a client, etcd's, that resumes its watches on
// a new connection by itself). Once the proxy forwards again (its Heal resets the frozen
// connections), heartbeats come again: from a new watch, or from the same one when it resumes.
func WatchHeartbeatFrozen(t *testing.T, target string, resumes bool, open func(t *testing.T, addr string) store.Store) {
	t.Helper()
	const every = 100 * time.Millisecond
	p, s := openProxied(t, target, open)
	key := newKey(t)
	mustCreate(t, s, key, map[string]any{"n": 1})
	ctx := store.WithHeartbeat(t.Context(), every)
	heartbeats := func(r *watchRecorder, n int) {
		t.Helper()
		for i := 0; i < n; {
			c := r.next(t, fmt.Sprintf("heartbeat %d of %d", i+1, n))
			switch {
			case c.Heartbeat:
				i++
			case !c.Found || c.Doc["n"] != float64(1):
				t.Fatalf("T8: watch of %q delivered %+v, never written", key, c)
			}
		}
	}
	r := startWatchCtx(t, ctx, s, key)
	if c := r.next(t, "the first call"); !c.Found || c.Heartbeat {
		t.Fatalf("T8: watch of %q first delivered %+v, want its document", key, c)
	}
	heartbeats(r, 3)
	accepted := p.Accepted()
	p.Cut()
	start := time.Now()
	after := 0 // heartbeats delivered after the cut
	for ended := false; !ended; {
		select {
		case c := <-r.states:
			if c.Heartbeat {
				after++
			}
		case err := <-r.done:
			r.done <- err
			if resumes {
				t.Fatalf("T8: watch of %q ended (%v) after its connection froze; the client should resume it", key, err)
			}
			t.Logf("the watch returned %v after its connection froze: %v", time.Since(start), err)
			var ke *store.KeyError
			if errors.Is(err, context.Canceled) || !errors.As(err, &ke) || ke.Key != key {
				t.Errorf("T8: watch of %q ended by a frozen connection returned %v, want an error of its own in a *store.KeyError naming the key", key, err)
			}
			ended = true
		case <-time.After(10 * time.Millisecond):
			// Polls the proxy: no call comes while the connection is frozen.
			if resumes && p.Accepted() > accepted {
				t.Logf("the client opened another connection %v after the freeze", time.Since(start))
				ended = true
			}
		}
		if !ended && time.Since(start) > watchWait {
			t.Fatalf("T8: watch of %q neither ended nor reconnected within %v of its connection freezing (%d heartbeats since)", key, watchWait, after)
		}
	}
	for draining := true; draining; { // calls made before the end
		select {
		case c := <-r.states:
			if c.Heartbeat {
				after++
			}
		default:
			draining = false
		}
	}
	if after > 2 {
		t.Errorf("T8: watch of %q delivered %d heartbeats after its connection froze, want at most the 2 that may have been on their way", key, after)
	}
	p.Heal()
	if !resumes {
		waitRecovered(t, s, key)
		var c store.Change
		r, c = watchAgain(t, ctx, s, key)
		if !c.Found || c.Heartbeat {
			t.Fatalf("T8: watch of %q after the freeze first delivered %+v, want its document", key, c)
		}
	}
	heartbeats(r, 3)
}

// watchAgain starts a watch of key as an Elector does after its watch ended with an error:
// should that watch too end with an error before its first call (its new connection slow to
// answer the first heartbeat on a loaded machine, which the short timeouts of these tests
// turn into an error), it watches again, as its caller would (T8), within watchWait. It
// returns the watch and its first call.
func watchAgain(t *testing.T, ctx context.Context, s store.Store, key string) (*watchRecorder, store.Change) {
	t.Helper()
	deadline := time.Now().Add(watchWait)
	for {
		r := startWatchCtx(t, ctx, s, key)
		select {
		case c := <-r.states:
			return r, c
		case err := <-r.done:
			r.done <- err
			if time.Now().After(deadline) {
				t.Fatalf("T8: watch of %q kept ending (%v) before its first call for %v after the freeze", key, err, watchWait)
			}
			t.Logf("a watch after the freeze ended before its first call (%v): watching again", err)
		case <-time.After(watchWait):
			t.Fatalf("T8: watch of %q: no call within %v after the freeze", key, watchWait)
		}
	}
}
