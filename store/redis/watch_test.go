package redis

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/leasehold/leasehold/store"
	"github.com/leasehold/leasehold/store/storetest"
)

// TestWatchConnectionLost: a reset of the Pub/Sub connection ends the watch with an error,
// since what was published meanwhile is lost; the store then watches again on a new one (T8).
func TestWatchConnectionLost(t *testing.T) {
	t.Parallel()
	raw, _ := serverURL(t)
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	storetest.WatchConnectionLost(t, u.Host, func(t *testing.T, addr string) store.Store {
		v := *u
		v.Host = addr
		s, err := Open(t.Context(), v.String())
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}

// TestWatchHeartbeatFrozen: asked for heartbeats, a watch gets the answers to the PINGs on its
// Pub/Sub connection; when that connection goes silent without failing, the heartbeats stop and
// the unanswered PING ends the watch with an error; a new watch gets heartbeats again (T8).
func TestWatchHeartbeatFrozen(t *testing.T) {
	t.Parallel()
	raw, _ := serverURL(t)
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	storetest.WatchHeartbeatFrozen(t, u.Host, false, func(t *testing.T, addr string) store.Store {
		v := *u
		v.Host = addr
		s, err := Open(t.Context(), v.String())
		if err != nil {
			t.Fatal(err)
		}
		s.b.watches.pingTimeout = time.Second // the test waits for the end, not for the time
		return s
	})
}

// TestWatchClosed: closing the store ends its watches with an error (T8).
func TestWatchClosed(t *testing.T) {
	t.Parallel()
	raw, _ := serverURL(t)
	s, err := Open(t.Context(), raw)
	if err != nil {
		t.Fatal(err)
	}
	storetest.WatchClosed(t, s)
}

// TestWatchMany: 200 watches of 200 keys share one Pub/Sub connection, and each sees its own
// key's last document, never another's (T8).
func TestWatchMany(t *testing.T) {
	t.Parallel()
	raw, _ := serverURL(t)
	name := "leasehold-watch-many-" + strings.ReplaceAll(t.Name(), "/", "-")
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("client_name", name)
	u.RawQuery = q.Encode()
	s, err := Open(t.Context(), u.String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	// While the watches run, the server counts one Pub/Sub connection of this store.
	check := make(chan struct{})
	t.Cleanup(func() {
		select {
		case <-check:
		default:
			t.Error("the connection count was not checked")
		}
	})
	storetest.WatchMany(t, &countingStore{Store: s, once: func() {
		defer close(check)
		list, err := s.Client().ClientList(context.Background()).Result()
		if err != nil {
			t.Error(err)
			return
		}
		n := 0
		for _, line := range strings.Split(list, "\n") {
			if strings.Contains(line, " name="+name+" ") && strings.Contains(line, " sub=") && !strings.Contains(line, " sub=0 ") {
				n++
			}
		}
		if n != 1 {
			t.Errorf("%d connections of the store subscribe to channels, want 1:\n%s", n, list)
		}
	}}, 200)
}

// TestWatchManyStartTogether: a thousand watches started at once on one Store all get their
// first state. Each watch's read (syncScript) goes with the others' in a pipeline, on a few of
// the pool's connections, as the writes do: one connection each would make most of them wait
// for the pool, and fail when the wait ran out (here at once, in production after a few
// seconds), which is what a Store starting thousands of watches did.
func TestWatchManyStartTogether(t *testing.T) {
	t.Parallel()
	raw, prefix := serverURL(t)
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	// As many connections as the Store's writes, reads and watch reads have in flight at most;
	// a call that must wait for one fails at once.
	q.Set("pool_size", "4")
	q.Set("pool_timeout", "1ms")
	u.RawQuery = q.Encode()
	s := openCleaned(t, u.String(), prefix)
	const n = 1000
	var wg sync.WaitGroup
	defer wg.Wait()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	first := make(chan struct{}, n)
	ended := make(chan error, n)
	for k := range n {
		wg.Go(func() {
			var once sync.Once
			err := s.Watch(ctx, fmt.Sprintf("k%d", k), func(store.Change) {
				once.Do(func() { first <- struct{}{} })
			})
			if ctx.Err() == nil {
				ended <- err
			}
		})
	}
	for range n {
		select {
		case <-first:
		case err := <-ended:
			t.Fatalf("a watch ended before its first state: %v", err)
		}
	}
}

// countingStore calls once before the first Create: by then every watch of WatchMany has made
// its first call, so every channel is subscribed.
type countingStore struct {
	*Store
	once   func()
	called sync.Once
}

func (c *countingStore) Create(ctx context.Context, key string, doc map[string]any) error {
	c.called.Do(c.once)
	return c.Store.Create(ctx, key, doc)
}

// TestWatchWriteScriptsPublish: each write publishes the key's new state on its channel, in
// the order written: the document after Create and Patch, an empty message after Delete.
func TestWatchWriteScriptsPublish(t *testing.T) {
	t.Parallel()
	s := openTest(t)
	ctx := t.Context()
	ps := s.Client().Subscribe(ctx, s.b.watchChannel(s.Key("k")))
	defer ps.Close()
	if _, err := ps.Receive(ctx); err != nil { // the subscription's confirmation
		t.Fatal(err)
	}
	if err := s.Create(ctx, "k", map[string]any{"a": 1}); err != nil {
		t.Fatal(err)
	}
	if err := s.Create(ctx, "k", map[string]any{"a": 2}); err == nil {
		t.Fatal("second Create succeeded")
	}
	if err := s.Patch(ctx, "k", map[string]any{"b": true}, &store.Condition{Field: "a", Value: 1}); err != nil {
		t.Fatal(err)
	}
	if err := s.Patch(ctx, "k", map[string]any{"b": false}, &store.Condition{Field: "a", Value: 7}); err == nil {
		t.Fatal("Patch on a false condition succeeded")
	}
	if err := s.Delete(ctx, "k", nil); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`{"a":1}`, `{"a":1,"b":true}`, ``} {
		m, err := ps.ReceiveMessage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if m.Payload != want {
			t.Errorf("published %q, want %q", m.Payload, want)
		}
	}
}

// BenchmarkWatchLatency: from a Patch's call to its document's arrival at a watch of the key;
// see storetest.BenchmarkWatchLatency.
//
//	go test -run '^$' -bench WatchLatency ./store/redis
func BenchmarkWatchLatency(b *testing.B) {
	storetest.BenchmarkWatchLatency(b, func(b *testing.B) store.Store { return openTest(b) })
}
