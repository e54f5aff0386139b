package nats

import (
	"context"
	"net/url"
	"sync"
	"testing"
	"time"

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
