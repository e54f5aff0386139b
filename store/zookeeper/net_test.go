//go:build unix

package zookeeper

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/leasehold/leasehold/internal/cuttest"
	"github.com/leasehold/leasehold/internal/leakcheck"
	"github.com/leasehold/leasehold/internal/storecluster"
	"github.com/leasehold/leasehold/internal/tcpproxy"
	"github.com/leasehold/leasehold/store"
	"github.com/leasehold/leasehold/store/storetest"
)

// watchWait bounds each wait for a watch's call; a call that never comes fails either way.
const watchWait = 30 * time.Second

// recorder runs a watch on a goroutine of its own and records its calls.
type recorder struct {
	calls chan store.Change
	done  chan error
}

func watch(t *testing.T, ctx context.Context, s store.Store, key string) *recorder {
	t.Helper()
	ctx, cancel := context.WithCancel(ctx)
	r := &recorder{calls: make(chan store.Change, 1024), done: make(chan error, 1)}
	go func() { r.done <- store.Watch(ctx, s, key, func(c store.Change) { r.calls <- c }) }()
	t.Cleanup(func() {
		cancel()
		<-r.done
	})
	return r
}

// until waits for a call delivering doc (nil: no record).
func (r *recorder) until(t *testing.T, doc map[string]any) {
	t.Helper()
	for {
		select {
		case c := <-r.calls:
			if !c.Heartbeat && c.Found == (doc != nil) && (doc == nil || reflect.DeepEqual(c.Doc, doc)) {
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

// proxied opens a store reaching the test server through a proxy, with the URL parameters
// params, and a direct store on the same chroot.
func proxied(t *testing.T, params ...string) (p *tcpproxy.Proxy, via, direct *Store) {
	t.Helper()
	p, err := tcpproxy.New(serverAddr(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	raw, _ := serverURL(t, params...)
	direct = openRaw(t, raw)
	via = openRaw(t, strings.Replace(raw, serverAddr(t), p.Addr(), 1))
	return p, via, direct
}

// opcode returns the ZooKeeper opcode of the request b starts with (a length, an xid, an
// opcode), or -1.
func opcode(b []byte) int32 {
	if len(b) < 12 {
		return -1
	}
	return int32(binary.BigEndian.Uint32(b[8:12]))
}

// ZooKeeper's opcodes of the writes.
const (
	opCreate  = 1
	opSetData = 5
)

// TestWriteSentOnce: a write whose request reached the server but whose answer was lost is
// an unknown outcome, never ErrExists, ErrConditionFailed or ErrNotFound, whether the call's
// deadline ends it or the client gives up the connection first; it is sent once, not again
// on the new connection, and it did land. The proxy lets the request through and cuts the
// connection at once, so that the server's answer is dropped.
func TestWriteSentOnce(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name     string
		op       int32
		deadline time.Duration // the call's; longer than the client's 2/3 of the session timeout for the second case
	}{
		{"patch, deadline", opSetData, 500 * time.Millisecond},
		{"create, connection given up", opCreate, time.Minute},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			// The longest session the test server grants, so that the session outlives the cut.
			p, via, direct := proxied(t, "session_timeout=4s")
			if err := direct.Create(t.Context(), "other", map[string]any{"n": 1}); err != nil {
				t.Fatal(err)
			}
			var sent atomic.Int32
			p.Inspect(func(_ int, b []byte) {
				if opcode(b) == c.op {
					sent.Add(1)
					p.Cut() // the request is forwarded; the answer will not be
				}
			})
			ctx, cancel := context.WithTimeout(t.Context(), c.deadline)
			defer cancel()
			var err error
			if c.op == opSetData {
				if err := direct.Create(t.Context(), "k", map[string]any{"n": 1}); err != nil {
					t.Fatal(err)
				}
				err = via.Patch(ctx, "k", map[string]any{"n": 2}, &store.Condition{Field: "n", Value: 1})
			} else {
				err = via.Create(ctx, "k", map[string]any{"n": 2})
			}
			t.Logf("the write whose answer was lost: %v", err)
			if err == nil || errors.Is(err, store.ErrExists) || errors.Is(err, store.ErrConditionFailed) || errors.Is(err, store.ErrNotFound) {
				t.Errorf("a write whose answer was lost returned %v, want an unknown outcome", err)
			}
			if c.op == opSetData && !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("a write cut short by its deadline returned %v, want the context's error", err)
			}
			p.Heal()
			// A read on the new connection comes after anything sent again on it.
			for {
				doc, err := via.Get(t.Context(), "k")
				if err == nil {
					if doc["n"] != float64(2) {
						t.Errorf("the record is %v, want the write that landed", doc)
					}
					break
				}
				select {
				case <-t.Context().Done():
					t.Fatal(err)
				case <-time.After(50 * time.Millisecond):
				}
			}
			if n := sent.Load(); n != 1 {
				t.Errorf("the write was sent %d times, want once", n)
			}
		})
	}
}

// TestCutConnection: when the network to the server goes silent, an operation fails by its
// context's deadline, well before the client gives up the connection (E3), and the store
// recovers once the network heals; see storetest.CutConnection.
func TestCutConnection(t *testing.T) {
	t.Parallel()
	raw, _ := serverURL(t)
	cuttest.URL(t, raw, func(ctx context.Context, raw string) (store.Store, error) { return Open(ctx, raw) }, "session_timeout", "4s")
}

// TestWatchHeartbeatFrozen: heartbeats stop while the watch's connection is silent, the
// client gives it up and the store dials a new watch client by itself, and once the network
// heals the same watch delivers heartbeats again (T8); see storetest.WatchHeartbeatFrozen.
func TestWatchHeartbeatFrozen(t *testing.T) {
	t.Parallel()
	raw, _ := serverURL(t, "session_timeout=2s")
	storetest.WatchHeartbeatFrozen(t, serverAddr(t), true, func(t *testing.T, addr string) store.Store {
		return openRaw(t, strings.Replace(raw, serverAddr(t), addr, 1))
	})
}

// TestWatchAcrossSessionExpiry: a watch whose connection is cut until the sessions expired
// goes on over a new session, and delivers the write made meanwhile (T8): the store arms it
// again on a new watch client, whose session is neither the lost one's nor the requests'.
func TestWatchAcrossSessionExpiry(t *testing.T) {
	t.Parallel()
	p, via, direct := proxied(t, "session_timeout=1s")
	ctx := t.Context()
	if err := direct.Create(ctx, "k", map[string]any{"n": 1}); err != nil {
		t.Fatal(err)
	}
	r := watch(t, ctx, via, "k")
	r.until(t, map[string]any{"n": float64(1)})
	session := via.Conn().SessionID()
	_, watchSID := watchSession(via)
	p.Cut()
	// The server expires the session once it has heard nothing of it for the session timeout,
	// and closes its connection: "cons" no longer lists it.
	sid := fmt.Sprintf("sid=0x%x", session)
	for {
		out, err := storecluster.ZooKeeperCommand(ctx, serverAddr(t), "cons")
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(out, sid) {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the server still has the session %s: %s", sid, out)
		case <-time.After(100 * time.Millisecond):
		}
	}
	if err := direct.Patch(ctx, "k", map[string]any{"n": 2}, nil); err != nil {
		t.Fatal(err)
	}
	p.Heal()
	r.until(t, map[string]any{"n": float64(2)})
	if now := via.Conn().SessionID(); now == session {
		t.Errorf("the session %x did not expire", session)
	}
	if _, now := watchSession(via); now == watchSID || now == via.Conn().SessionID() {
		t.Errorf("the watch stands on the session %x (it was on %x; the requests' is %x), want a new one of its own", now, watchSID, via.Conn().SessionID())
	}
	// And the watch goes on over the new session.
	if err := direct.Patch(ctx, "k", map[string]any{"n": 3}, nil); err != nil {
		t.Fatal(err)
	}
	r.until(t, map[string]any{"n": float64(3)})
}

// TestWatchDeleteAndCreate: a watch sees a deletion (the znode emptied) and the record created
// again.
func TestWatchDeleteAndCreate(t *testing.T) {
	t.Parallel()
	s := openTest(t)
	ctx := t.Context()
	r := watch(t, ctx, s, "k")
	r.until(t, nil)
	if err := s.Create(ctx, "k", map[string]any{"n": 1}); err != nil {
		t.Fatal(err)
	}
	r.until(t, map[string]any{"n": float64(1)})
	if err := s.Delete(ctx, "k", nil); err != nil {
		t.Fatal(err)
	}
	r.until(t, nil)
	if err := s.Create(ctx, "k", map[string]any{"n": 2}); err != nil {
		t.Fatal(err)
	}
	r.until(t, map[string]any{"n": float64(2)})
}

// TestCloseLeavesNoGoroutine: once Close has returned, no goroutine the store started runs:
// not the client's, not a call cut short by its context, not a watch's.
func TestCloseLeavesNoGoroutine(t *testing.T) {
	t.Parallel()
	raw, _ := serverURL(t)
	tr := leakcheck.New()
	tr.Do(func() {
		s, err := Open(t.Context(), raw)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Create(t.Context(), "k", map[string]any{"n": 1}); err != nil {
			t.Fatal(err)
		}
		r := watch(t, store.WithHeartbeat(t.Context(), 10*time.Millisecond), s, "k")
		r.until(t, map[string]any{"n": float64(1)})
		for range 20 { // calls that return at their deadline, their requests still in flight
			ctx, cancel := context.WithTimeout(t.Context(), time.Microsecond)
			s.Patch(ctx, "k", map[string]any{"n": 2}, nil)
			cancel()
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		select {
		case err := <-r.done:
			r.done <- err
			if err == nil || errors.Is(err, context.Canceled) {
				t.Errorf("the watch ended by Close returned %v, want an error of its own", err)
			}
		case <-time.After(watchWait):
			t.Fatal("the watch still runs after Close")
		}
	})
	tr.Check(t, 5*time.Second)
}

// gate forwards the connections it accepts to a target while open, and closes them at once
// while shut, counting them: a server that is down but whose port answers.
type gate struct {
	ln      net.Listener
	target  string
	open    atomic.Bool
	accepts atomic.Int32
	wg      sync.WaitGroup
	mu      sync.Mutex
	conns   []net.Conn
}

func newGate(t *testing.T, target string) *gate {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	g := &gate{ln: ln, target: target}
	g.open.Store(true)
	g.wg.Go(g.serve)
	t.Cleanup(func() {
		ln.Close()
		g.drop()
		g.wg.Wait()
	})
	return g
}

func (g *gate) serve() {
	for {
		c, err := g.ln.Accept()
		if err != nil {
			return
		}
		g.accepts.Add(1)
		if !g.open.Load() {
			c.Close()
			continue
		}
		s, err := net.Dial("tcp", g.target)
		if err != nil {
			c.Close()
			continue
		}
		g.mu.Lock()
		g.conns = append(g.conns, c, s)
		g.mu.Unlock()
		g.wg.Go(func() { io.Copy(s, c); s.Close() })
		g.wg.Go(func() { io.Copy(c, s); c.Close() })
	}
}

// drop closes every forwarded connection.
func (g *gate) drop() {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, c := range g.conns {
		c.Close()
	}
	g.conns = nil
}

// TestWatchWaitsForASession: a watch started while no server gives a session (its watch
// client sends nothing before it has one) waits for the session instead of failing, silent,
// then delivers the record and the writes after it. The same happens to a watch whose client
// was lost, while its new client has no session.
func TestWatchWaitsForASession(t *testing.T) {
	t.Parallel()
	raw, _ := serverURL(t, "session_timeout=4s")
	g := newGate(t, serverAddr(t))
	direct := openRaw(t, raw)
	via := openRaw(t, strings.Replace(raw, serverAddr(t), g.ln.Addr().String(), 1))
	ctx := t.Context()
	if err := direct.Create(ctx, "k", map[string]any{"n": 1}); err != nil {
		t.Fatal(err)
	}
	g.open.Store(false)
	g.drop()
	for via.Conn().State() == zk.StateHasSession {
		select {
		case <-ctx.Done():
			t.Fatal("the client kept its connection")
		case <-time.After(10 * time.Millisecond):
		}
	}
	r := watch(t, ctx, via, "k")
	// Two more refused connections: the clients have tried the server again since the watch
	// started.
	for seen := g.accepts.Load(); g.accepts.Load() < seen+2; {
		select {
		case err := <-r.done:
			r.done <- err // for the cleanup
			t.Fatalf("the watch ended while the client had no session: %v", err)
		case <-time.After(10 * time.Millisecond):
		}
	}
	select {
	case err := <-r.done:
		r.done <- err // for the cleanup
		t.Fatalf("the watch ended while the client had no session: %v", err)
	case c := <-r.calls:
		t.Fatalf("the watch delivered %+v while the client had no session", c)
	default:
	}
	g.open.Store(true)
	r.until(t, map[string]any{"n": float64(1)})
	if err := direct.Patch(ctx, "k", map[string]any{"n": 2}, nil); err != nil {
		t.Fatal(err)
	}
	r.until(t, map[string]any{"n": float64(2)})
}
