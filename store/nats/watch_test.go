package nats

import (
	"context"
	"errors"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/leasehold/leasehold/internal/tcpproxy"
	"github.com/leasehold/leasehold/store"
	"github.com/leasehold/leasehold/store/storetest"
)

// TestWatchConnectionLost: a reset connection ends the watch with an error, though nats.go
// reconnects by itself, since entries may be missed meanwhile; the store then watches again
// (T8).
func TestWatchConnectionLost(t *testing.T) {
	t.Parallel()
	raw, bucket := serverURL(t)
	u, _ := url.Parse(raw)
	t.Cleanup(func() { deleteBucket(t, raw, bucket) })
	storetest.WatchConnectionLost(t, u.Host, func(t *testing.T, addr string) store.Store {
		c := *u
		c.Host = addr
		q := c.Query()
		q.Set("reconnect_wait", "50ms")
		c.RawQuery = q.Encode()
		s, err := Open(t.Context(), c.String())
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}

// TestWatchHeartbeatFrozen: asked for heartbeats, a watch gets one after each flush of the
// connection (a PING answered by a PONG); when the connection goes silent without failing, the
// heartbeats stop and the unanswered flush ends the watch with an error; a new watch gets
// heartbeats again once nats.go has reconnected (T8).
func TestWatchHeartbeatFrozen(t *testing.T) {
	t.Parallel()
	raw, bucket := serverURL(t)
	u, _ := url.Parse(raw)
	t.Cleanup(func() { deleteBucket(t, raw, bucket) })
	storetest.WatchHeartbeatFrozen(t, u.Host, false, func(t *testing.T, addr string) store.Store {
		c := *u
		c.Host = addr
		q := c.Query()
		q.Set("reconnect_wait", "50ms")
		c.RawQuery = q.Encode()
		s, err := Open(t.Context(), c.String())
		if err != nil {
			t.Fatal(err)
		}
		s.b.watches.pingTimeout = time.Second // the test waits for the end, not for the time
		return s
	})
}

// TestWatchStalledStartHoldsNoOne: the bucket's consumer is started by the store, not under the
// lock its watches share nor with one watch's context: while that start is stalled (the
// connection forwards nothing), another lease's watch with a short context returns with its
// context's error, and the watch that started it returns at once when its context is cancelled,
// both before the connection is let through again. Then a new watch works.
func TestWatchStalledStartHoldsNoOne(t *testing.T) {
	t.Parallel()
	raw, bucket := serverURL(t)
	u, _ := url.Parse(raw)
	t.Cleanup(func() { deleteBucket(t, raw, bucket) })
	p, err := tcpproxy.New(u.Host)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	c := *u
	c.Host = p.Addr()
	q := c.Query()
	q.Set("reconnect_wait", "50ms")
	c.RawQuery = q.Encode()
	s, err := Open(t.Context(), c.String())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	const wait = 30 * time.Second
	p.Cut()
	// The watch that starts the consumer, with a deadline far beyond the test's bounds: a watch
	// held up by the start would wait it out.
	actx, cancelA := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancelA()
	aDone := make(chan error, 1)
	go func() { aDone <- store.Watch(actx, s, "a", func(store.Change) {}) }()
	// b comes once a's start is under way: a's request to create the consumer has reached the
	// proxy, which drops it.
	waitFor(t, func() bool { return p.Dropped() > 0 }, "the request to create the consumer")
	bctx, cancelB := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancelB()
	bDone := make(chan error, 1)
	go func() { bDone <- store.Watch(bctx, s, "b", func(store.Change) {}) }()
	select {
	case err := <-bDone:
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("watch b during a stalled start returned %v, want its context's error", err)
		}
	case <-time.After(wait):
		p.Heal()
		t.Fatalf("watch b, whose context ended, still waits %v for the stalled start of another watch", wait)
	}
	cancelA()
	select {
	case err := <-aDone:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("watch a cancelled during its stalled start returned %v, want context.Canceled", err)
		}
	case <-time.After(wait):
		p.Heal()
		t.Fatalf("watch a, cancelled, still waits %v for its stalled start", wait)
	}
	p.Heal()
	// The stalled start may fail once the connection is reset: watch until a watch works.
	deadline := time.Now().Add(wait)
	for {
		first := make(chan struct{})
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		var once sync.Once
		go func() { done <- store.Watch(ctx, s, "c", func(store.Change) { once.Do(func() { close(first) }) }) }()
		select {
		case <-first:
			cancel()
			<-done
			return
		case err := <-done:
			cancel()
			if time.Now().After(deadline) {
				t.Fatalf("no watch works %v after the connection was let through: %v", wait, err)
			}
			time.Sleep(50 * time.Millisecond)
		case <-time.After(wait):
			cancel()
			t.Fatalf("a watch made no call within %v after the connection was let through", wait)
		}
	}
}

// waitFor polls cond until it holds, failing the test after 30s.
func waitFor(t *testing.T, cond func() bool, what string) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no sign of %s within 30s", what)
		}
	}
}

// TestWatchClosed: closing the store ends its watches with an error (T8).
func TestWatchClosed(t *testing.T) {
	t.Parallel()
	raw, bucket := serverURL(t)
	s, err := Open(t.Context(), raw)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { deleteBucket(t, raw, bucket) })
	storetest.WatchClosed(t, s)
}

// TestWatchMany: 200 watches of 200 keys share one consumer of the bucket, and each sees its
// own key's last document, never another's (T8).
func TestWatchMany(t *testing.T) {
	t.Parallel()
	s := openTest(t)
	checked := false
	t.Cleanup(func() {
		if !checked {
			t.Error("the consumer count was not checked")
		}
	})
	storetest.WatchMany(t, &countingStore{Store: s, once: func() {
		checked = true
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		info, err := s.b.stream.Info(ctx)
		if err != nil {
			t.Error(err)
			return
		}
		if n := info.State.Consumers; n != 1 {
			t.Errorf("the bucket's stream has %d consumers while 200 watches run, want 1", n)
		}
	}}, 200)
}

// countingStore calls once before the first Create: by then every watch of WatchMany has made
// its first call.
type countingStore struct {
	*Store
	once   func()
	called sync.Once
}

func (c *countingStore) Create(ctx context.Context, key string, doc map[string]any) error {
	c.called.Do(c.once)
	return c.Store.Create(ctx, key, doc)
}

// TestWatchPurge: a purge by another client (its marker) is delivered as a missing document,
// as a Delete's marker is.
func TestWatchPurge(t *testing.T) {
	t.Parallel()
	s := openTest(t)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	if err := s.Create(ctx, "p", map[string]any{"n": 1}); err != nil {
		t.Fatal(err)
	}
	calls := make(chan store.Change, 16)
	done := make(chan error, 1)
	go func() { done <- s.Watch(ctx, "p", func(c store.Change) { calls <- c }) }()
	next := func() store.Change {
		select {
		case c := <-calls:
			return c
		case err := <-done:
			t.Fatalf("the watch ended: %v", err)
		case <-time.After(20 * time.Second):
			t.Fatal("no call within 20s")
		}
		return store.Change{}
	}
	if c := next(); !c.Found {
		t.Fatalf("first call %+v, want the document", c)
	}
	if err := s.Bucket().Purge(ctx, EncodeKey("p")); err != nil {
		t.Fatal(err)
	}
	if c := next(); c.Found {
		t.Fatalf("after a purge: %+v, want no document", c)
	}
	cancel()
	<-done
	// A watch begun after the purge starts from its marker.
	ctx2, cancel2 := context.WithCancel(t.Context())
	defer cancel2()
	go func() { done <- s.Watch(ctx2, "p", func(c store.Change) { calls <- c }) }()
	if c := next(); c.Found {
		t.Fatalf("first call after a purge: %+v, want no document", c)
	}
	cancel2()
	<-done
}

// BenchmarkWatchLatency: from a Patch's call to its document's arrival at a watch of the key;
// see storetest.BenchmarkWatchLatency.
//
//	go test -run '^$' -bench WatchLatency ./store/nats
func BenchmarkWatchLatency(b *testing.B) {
	storetest.BenchmarkWatchLatency(b, func(b *testing.B) store.Store { return openTest(b) })
}

// TestWatchHubsOneAfterAnother: watches asking for frequent heartbeats end and start again on
// one store, so that a hub's ping goroutine, still asking the stream for its last sequence,
// outlives the hub while the next hub starts. Each hub asks through a Stream of its own: under
// -race, hubs sharing the store's (nats.go keeps an Info answer in its Stream without a lock)
// were a data race. Each watch still delivers its document, then heartbeats (T8).
func TestWatchHubsOneAfterAnother(t *testing.T) {
	t.Parallel()
	s := openTest(t)
	key := "hubs-" + t.Name()
	if err := s.Create(t.Context(), key, map[string]any{"n": 1}); err != nil {
		t.Fatal(err)
	}
	for i := range 15 {
		ctx, cancel := context.WithCancel(store.WithHeartbeat(t.Context(), 2*time.Millisecond))
		calls := make(chan store.Change, 64)
		done := make(chan error, 1)
		go func() {
			done <- store.Watch(ctx, s, key, func(c store.Change) {
				select {
				case calls <- c:
				default:
				}
			})
		}()
		beats := 0
		for first := true; beats < 3; first = false {
			select {
			case c := <-calls:
				switch {
				case first && (!c.Found || c.Heartbeat):
					t.Fatalf("watch %d first delivered %+v, want the document", i, c)
				case c.Heartbeat:
					beats++
				}
			case err := <-done:
				t.Fatalf("watch %d ended: %v", i, err)
			case <-time.After(10 * time.Second):
				t.Fatalf("watch %d: %d heartbeats in 10s, want 3", i, beats)
			}
		}
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Fatalf("watch %d returned %v after its context's end", i, err)
		}
	}
}
