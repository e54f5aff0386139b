package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/leasehold/leasehold/internal/testenv"
	"github.com/leasehold/leasehold/internal/testurl"
	"github.com/leasehold/leasehold/internal/watchtest"
	"github.com/leasehold/leasehold/store"
	"github.com/leasehold/leasehold/store/storetest"
)

// T8: the listening connection killed by the server ends every watch with an error; a watch
// started after it works (on a new listener).
func TestWatchListenerTerminated(t *testing.T) {
	t.Parallel()
	s := openTest(t)
	a, b := watchtest.Start(t, s, "a"), watchtest.Start(t, s, "b")
	a.Next(t)
	b.Next(t)
	pid := s.b.listenerPID()
	if pid == 0 {
		t.Fatal("no listener while watches run")
	}
	conn, err := pgx.Connect(t.Context(), serverURL(t))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var ok bool
	if err := conn.QueryRow(t.Context(), `SELECT pg_terminate_backend($1)`, int32(pid)).Scan(&ok); err != nil || !ok {
		t.Fatalf("pg_terminate_backend(%d) = %v, %v", pid, ok, err)
	}
	for _, r := range []*watchtest.Rec{a, b} {
		err := r.Ended(t)
		if err == nil || errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "listening connection") {
			t.Fatalf("watch of %q after its listener was terminated returned %v, want the listener's error", r.Key, err)
		}
		t.Logf("watch of %q: %v", r.Key, err)
	}
	c := watchtest.Start(t, s, "a")
	c.Next(t)
	if s.b.listenerPID() == pid {
		t.Fatal("the new watch uses the terminated listener")
	}
	if err := s.Create(t.Context(), "a", map[string]any{"n": 1}); err != nil {
		t.Fatal(err)
	}
	c.WaitDoc(t, map[string]any{"n": float64(1)})
}

// T8: a network partition between the listener and the server (the test proxy's Cut) ends the
// watches by the listener's heartbeat, with an error.
func TestWatchListenerCut(t *testing.T) {
	t.Parallel()
	p := newProxy(t, testurl.Parse(t, serverURL(t)).Host)
	s := openTest(t)
	cut, err := Open(t.Context(), testurl.With(t, testurl.Host(t, serverURL(t), p.Addr()), "table", s.Table()))
	if err != nil {
		t.Fatal(err)
	}
	defer cut.Close()
	cut.b.listenCheck = 100 * 1000 * 1000 // 100ms: the test waits for the failure, not for the time
	r := watchtest.Start(t, cut, "k")
	r.Next(t)
	if err := s.Create(t.Context(), "k", map[string]any{"n": 1}); err != nil {
		t.Fatal(err)
	}
	r.WaitDoc(t, map[string]any{"n": float64(1)})
	p.Cut()
	if err := r.Ended(t); err == nil || errors.Is(err, context.Canceled) {
		t.Fatalf("watch through a cut connection returned %v, want the listener's error", err)
	} else {
		t.Logf("watch through a cut connection: %v", err)
	}
}

// notify=false (for transaction-pooling proxies): Watch answers ErrWatchUnsupported, the writes
// send no notification, and the store works.
func TestWatchNotifyOff(t *testing.T) {
	t.Parallel()
	on := openTest(t)
	off, err := Open(t.Context(), testurl.With(t, serverURL(t), "table", on.Table(), "notify", "false"))
	if err != nil {
		t.Fatal(err)
	}
	defer off.Close()
	if err := store.Watch(t.Context(), off, "k", func(store.Change) {}); !errors.Is(err, store.ErrWatchUnsupported) {
		t.Fatalf("Watch with notify=false returned %v, want ErrWatchUnsupported", err)
	}
	for name, q := range map[string]string{"create": off.b.q.create, "patch": off.b.q.patch, "patchIf": off.b.q.patchIf, "delete": off.b.q.del, "deleteIf": off.b.q.delIf} {
		if strings.Contains(q, "pg_notify") {
			t.Errorf("with notify=false, the %s statement notifies: %s", name, q)
		}
	}
	// A store with notifications on the same table sees the off store's writes only by reading:
	// its watch's marker proves the listener runs, and the off store's write, made before a
	// write of the on store, does not reach it as a notification of its own.
	r := watchtest.Start(t, on, "k")
	r.Next(t)
	ctx := t.Context()
	if err := off.Create(ctx, "k", map[string]any{"by": "off"}); err != nil {
		t.Fatal(err)
	}
	if err := off.Patch(ctx, "k", map[string]any{"n": 1}, &store.Condition{Field: "by", Value: "off"}); err != nil {
		t.Fatal(err)
	}
	doc, err := off.Get(ctx, "k")
	if err != nil || doc["n"] != float64(1) {
		t.Fatalf("Get = %v, %v", doc, err)
	}
	if err := on.Patch(ctx, "k", map[string]any{"by": "on"}, nil); err != nil {
		t.Fatal(err)
	}
	// The first state after the start is the on store's write: the off store's two writes sent
	// nothing (a notification of them would be delivered first, being committed first).
	if c := r.Next(t); !c.Found || c.Doc["by"] != "on" {
		t.Fatalf("first state after the writes = %+v, want the notifying store's write (the other store's writes notified)", c)
	}
	if err := off.Delete(ctx, "k", nil); err != nil {
		t.Fatal(err)
	}
	for _, raw := range []string{"notify=maybe", "notify="} {
		_, err := Open(ctx, testurl.With(t, serverURL(t), "table", on.Table())+"&"+raw)
		if err == nil || !strings.Contains(err.Error(), "notify") {
			t.Errorf("Open with %s: %v, want an error naming the parameter", raw, err)
		}
	}
}

// T8: 200 watches share the store's one listening connection, and each delivers its own key's
// final state.
func TestWatchManyKeys(t *testing.T) {
	t.Parallel()
	s := openTest(t)
	storetest.WatchMany(t, s, 200)
}

// T8: a document too large for a notification's payload is read, and so is one whose key is
// too large for the payload.
func TestWatchLargeDocument(t *testing.T) {
	t.Parallel()
	s := openTest(t)
	big := strings.Repeat("x", 9000)
	for _, key := range []string{"k", strings.Repeat("\x01", 2000)} {
		r := watchtest.Start(t, s, key)
		r.Next(t)
		if err := s.Create(t.Context(), key, map[string]any{"big": big}); err != nil {
			t.Fatal(err)
		}
		r.WaitDoc(t, map[string]any{"big": big})
		if err := s.Patch(t.Context(), key, map[string]any{"big": "small"}, nil); err != nil {
			t.Fatal(err)
		}
		r.WaitDoc(t, map[string]any{"big": "small"})
		if err := s.Delete(t.Context(), key, nil); err != nil {
			t.Fatal(err)
		}
		r.WaitMissing(t)
	}
}

// Close ends the store's watches with an error.
func TestWatchEndsOnClose(t *testing.T) {
	t.Parallel()
	s := openTest(t)
	storetest.WatchClosed(t, s)
}

// BenchmarkWatchLatency: how long a Patch takes to reach a watch of its key through
// LISTEN/NOTIFY:
//
//	go test -run '^$' -bench WatchLatency ./store/postgres
func BenchmarkWatchLatency(b *testing.B) {
	storetest.BenchmarkWatchLatency(b, func(b *testing.B) store.Store { return openTest(b) })
}

// T8: tables of one name in two schemas share a notification channel (its name is a digest of
// the table's): a watch delivers the writes of its own table only.
func TestWatchIgnoresSameNameInOtherSchema(t *testing.T) {
	t.Parallel()
	table := testenv.TableName(t)
	conn, err := pgx.Connect(t.Context(), serverURL(t))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var stores []*Store
	for _, schema := range []string{table + "_a", table + "_b"} {
		id := pgx.Identifier{schema}.Sanitize()
		if _, err := conn.Exec(t.Context(), `CREATE SCHEMA `+id); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			c, err := pgx.Connect(ctx, serverURL(t))
			if err != nil {
				t.Errorf("drop schema %s: %v", schema, err)
				return
			}
			defer c.Close(ctx)
			if _, err := c.Exec(ctx, `DROP SCHEMA `+id+` CASCADE`); err != nil {
				t.Errorf("drop schema %s: %v", schema, err)
			}
		})
		s, err := Open(t.Context(), testurl.With(t, serverURL(t), "table", table, "search_path", schema))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		stores = append(stores, s)
	}
	mine, other := stores[0], stores[1]
	rec := watchtest.Start(t, mine, "k")
	if c := rec.Next(t); c.Found {
		t.Fatalf("first state %v; want the key missing", c.Doc)
	}
	if err := other.Create(t.Context(), "k", map[string]any{"from": "other"}); err != nil {
		t.Fatal(err)
	}
	if err := other.Patch(t.Context(), "k", map[string]any{"from": "other, again"}, nil); err != nil {
		t.Fatal(err)
	}
	if err := mine.Create(t.Context(), "k", map[string]any{"from": "mine"}); err != nil {
		t.Fatal(err)
	}
	if c := rec.Next(t); !c.Found || c.Doc["from"] != "mine" {
		t.Fatalf("next state %+v; want this table's document, not the other schema's", c)
	}
}

// T8: asked for heartbeats, a watch gets one after each round trip on the listening connection;
// when that connection goes silent without failing, the heartbeats stop and the unanswered round
// trip ends the watch with an error; a new watch gets heartbeats again.
func TestWatchHeartbeatFrozen(t *testing.T) {
	t.Parallel()
	base := openTest(t)
	storetest.WatchHeartbeatFrozen(t, testurl.Parse(t, serverURL(t)).Host, false, func(t *testing.T, addr string) store.Store {
		s, err := Open(t.Context(), testurl.With(t, testurl.Host(t, serverURL(t), addr), "table", base.Table()))
		if err != nil {
			t.Fatal(err)
		}
		s.b.listenCheck = time.Second // the test waits for the end, not for the time
		return s
	})
}

// T8: the listening connection is dialled by the store, not under the lock its watches share
// nor with one watch's context: while that dial is stalled (the proxy accepts the connection
// and forwards nothing), another lease's watch with a short context returns with its context's
// error, and the watch that started the dial returns at once when its context is cancelled,
// both before the proxy lets the dial through. Once it does, a new watch works.
func TestWatchStalledDialHoldsNoOne(t *testing.T) {
	t.Parallel()
	p := newProxy(t, testurl.Parse(t, serverURL(t)).Host)
	base := openTest(t)
	// connect_timeout far beyond the test's bounds: a watch held up by the dial would wait it out.
	s, err := Open(t.Context(), testurl.With(t, testurl.Host(t, serverURL(t), p.Addr()), "table", base.Table(), "connect_timeout", "120"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	accepted := p.Accepted()
	p.Hold()
	a := watchtest.Start(t, s, "a")
	for deadline := time.Now().Add(watchtest.Wait); p.Accepted() == accepted; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the watch did not dial its listening connection")
		}
	}
	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- store.Watch(ctx, s, "b", func(store.Change) {}) }()
	select {
	case err := <-done:
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("watch b during a stalled dial returned %v, want its context's error", err)
		}
	case <-time.After(watchtest.Wait):
		p.Release()
		t.Fatalf("watch b, whose context ended, still waits %v for the stalled dial of another watch", watchtest.Wait)
	}
	stopped := make(chan error, 1)
	go func() { stopped <- a.Stop() }()
	select {
	case err := <-stopped:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("watch a cancelled during its stalled dial returned %v, want context.Canceled", err)
		}
	case <-time.After(watchtest.Wait):
		p.Release()
		t.Fatalf("watch a, cancelled, still waits %v for its stalled dial", watchtest.Wait)
	}
	p.Release()
	c := watchtest.Start(t, s, "c")
	c.Next(t)
	if err := s.Create(t.Context(), "c", map[string]any{"n": 1}); err != nil {
		t.Fatal(err)
	}
	c.WaitDoc(t, map[string]any{"n": float64(1)})
}

// Thousands of watches started at once take turns for a bounded share of the pool's
// connections: a write made meanwhile (a lease's renewal) finds a connection at once, rather
// than queueing behind every watch's first read and missing its deadline, as members holding
// 10,000 partitions each did at their start. With 4 connections and 2,000 watches starting,
// the write must be answered before most of the watches have their first state (it was
// answered after all of them).
func TestWatchStartsLeaveWritesAConnection(t *testing.T) {
	s := openTest(t, "pool_max_conns", "4")
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	const n = 2000
	var first atomic.Int64
	begun := make(chan struct{}) // closed once 100 watches have their first state
	var wg sync.WaitGroup
	for i := range n {
		key := fmt.Sprintf("w%d", i)
		wg.Go(func() {
			once := false
			_ = store.Watch(ctx, s, key, func(store.Change) {
				if !once {
					once = true
					if first.Add(1) == 100 {
						close(begun)
					}
				}
			})
		})
	}
	defer wg.Wait()
	defer cancel()
	// The others are queued for their first read by then: they all began together.
	select {
	case <-begun:
	case <-ctx.Done():
		t.Fatal(ctx.Err())
	}
	if err := s.Create(t.Context(), "renewal", map[string]any{"n": 1}); err != nil {
		t.Fatal(err)
	}
	if got := first.Load(); got > n/2 {
		t.Fatalf("the write was answered after %d of %d watches had their first state; want fewer than half", got, n)
	}
}
