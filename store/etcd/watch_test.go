package etcd

import (
	"context"
	"errors"
	"net/url"
	"reflect"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/leasehold/leasehold/internal/tcpproxy"
	"github.com/leasehold/leasehold/store"
	"github.com/leasehold/leasehold/store/storetest"
)

// watchWait bounds each wait for a watch's call; a call that never comes fails either way.
const watchWait = 20 * time.Second

// recorder runs a watch on a goroutine of its own and records its calls.
type recorder struct {
	calls  chan store.Change
	done   chan error
	cancel context.CancelFunc
}

func watch(t *testing.T, s store.Store, key string) *recorder {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	r := &recorder{calls: make(chan store.Change, 1024), done: make(chan error, 1), cancel: cancel}
	go func() { r.done <- store.Watch(ctx, s, key, func(c store.Change) { r.calls <- c }) }()
	t.Cleanup(func() {
		cancel()
		<-r.done
	})
	return r
}

// until waits for a call delivering doc.
func (r *recorder) until(t *testing.T, doc map[string]any) {
	t.Helper()
	for {
		select {
		case c := <-r.calls:
			if c.Found && reflect.DeepEqual(c.Doc, doc) {
				return
			}
		case err := <-r.done:
			r.done <- err
			t.Fatalf("the watch ended (%v) while waiting for %v", err, doc)
		case <-time.After(watchWait):
			t.Fatalf("no call with %v within %v", doc, watchWait)
		}
	}
}

// proxied opens a store reaching the embedded etcd through a proxy, without keepalive pings
// (so that a cut loses only what the test sends), and a direct store on the same prefix.
func proxied(t *testing.T) (p *tcpproxy.Proxy, via, direct *Store) {
	t.Helper()
	raw, _ := serverURL(t)
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	p, err = tcpproxy.New(u.Host)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	c := *u
	c.Host = p.Addr()
	q := c.Query()
	q.Set("keepalive", "0")
	c.RawQuery = q.Encode()
	if via, err = Open(t.Context(), c.String()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { via.Close() })
	if direct, err = Open(t.Context(), raw); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { direct.Close() })
	return p, via, direct
}

// TestWatchResumesAfterReset: when every connection is reset, clientv3 resumes the watch on a
// new one from the revision after the last it delivered, so the watch goes on and a write made
// while it was disconnected still reaches it (T8: a reconnection that loses nothing is no
// failure).
func TestWatchResumesAfterReset(t *testing.T) {
	t.Parallel()
	p, via, direct := proxied(t)
	if err := direct.Create(t.Context(), "k", map[string]any{"n": 1}); err != nil {
		t.Fatal(err)
	}
	r := watch(t, via, "k")
	r.until(t, map[string]any{"n": float64(1)})
	conns := p.Conns()
	p.Reset()
	if err := direct.Patch(t.Context(), "k", map[string]any{"n": 2}, nil); err != nil {
		t.Fatal(err)
	}
	r.until(t, map[string]any{"n": float64(2)})
	t.Logf("%d connection(s) reset; the watch went on", conns)
	if conns == 0 {
		t.Error("the store had no connection through the proxy to reset")
	}
}

// TestWatchHeartbeatFrozen: asked for heartbeats, a watch gets one for each progress
// notification it requests; when its connection goes silent without failing, the heartbeats
// stop until gRPC's keepalive gives the connection up and dials another; once the network is
// back, clientv3 resumes the same watch, and the heartbeats come again (T8).
func TestWatchHeartbeatFrozen(t *testing.T) {
	t.Parallel()
	raw, _ := serverURL(t)
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	storetest.WatchHeartbeatFrozen(t, u.Host, true, func(t *testing.T, addr string) store.Store {
		c := *u
		c.Host = addr
		q := c.Query()
		q.Set("keepalive", "10s") // the shortest the gRPC client allows
		q.Set("keepalive_timeout", "1s")
		c.RawQuery = q.Encode()
		s, err := Open(t.Context(), c.String())
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}

// TestWatchCompacted: a watch that cannot resume, because the revisions it missed while cut
// off were compacted away, ends with an error rather than go on with a hole (T8). Not
// parallel: the compaction is of the whole embedded server, and would cut short the other
// tests' watches that start from a revision it removes.
func TestWatchCompacted(t *testing.T) {
	p, via, direct := proxied(t)
	ctx := t.Context()
	if err := direct.Create(ctx, "k", map[string]any{"n": 1}); err != nil {
		t.Fatal(err)
	}
	r := watch(t, via, "k")
	r.until(t, map[string]any{"n": float64(1)})
	p.Cut()
	for i := 2; i <= 3; i++ {
		if err := direct.Patch(ctx, "k", map[string]any{"n": i}, nil); err != nil {
			t.Fatal(err)
		}
	}
	resp, err := direct.Client().Get(ctx, direct.Prefix()+"k")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := direct.Client().Compact(ctx, resp.Header.Revision); err != nil {
		t.Fatal(err)
	}
	p.Heal() // resets the connection whose watch events were dropped: the client resumes
	var werr error
	select {
	case werr = <-r.done:
		r.done <- werr
	case <-time.After(watchWait):
		t.Fatalf("the watch still runs %v after resuming from a compacted revision", watchWait)
	}
	if werr == nil || errors.Is(werr, context.Canceled) || !strings.Contains(werr.Error(), "compacted") {
		t.Errorf("the watch returned %v, want an error saying the revision was compacted", werr)
	}
	t.Logf("the watch returned: %v", werr)
	for len(r.calls) > 0 {
		if c := <-r.calls; c.Found && c.Doc["n"] != float64(1) {
			t.Errorf("the watch delivered %v across the hole", c.Doc)
		}
	}
}

// TestWatchClosed: closing the store ends its watches with an error (T8).
func TestWatchClosed(t *testing.T) {
	t.Parallel()
	raw, prefix := serverURL(t)
	s, err := Open(t.Context(), raw)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		d, err := Open(context.Background(), raw)
		if err == nil {
			d.Client().Delete(context.Background(), prefix, clientv3.WithPrefix())
			d.Close()
		}
	})
	storetest.WatchClosed(t, s)
}

// TestWatchMany: 200 watches of 200 keys over one client, each seeing its own key's last
// document, never another's (T8).
func TestWatchMany(t *testing.T) {
	t.Parallel()
	storetest.WatchMany(t, openTest(t), 200)
}

// BenchmarkWatchLatency: from a Patch's call to its document's arrival at a watch of the key;
// see storetest.BenchmarkWatchLatency.
//
//	go test -run '^$' -bench WatchLatency ./store/etcd
func BenchmarkWatchLatency(b *testing.B) {
	storetest.BenchmarkWatchLatency(b, func(b *testing.B) store.Store { return openTest(b) })
}
