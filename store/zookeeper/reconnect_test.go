//go:build unix

package zookeeper

import (
	"context"
	"encoding/binary"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/leasehold/leasehold/internal/tcpproxy"
	"github.com/leasehold/leasehold/store"
)

// opSetWatches is ZooKeeper's opcode of the request that sets a session's watches again on a
// new connection.
const opSetWatches = 101

// sent parses what each client connection through a proxy sends (see tcpproxy.Inspect): its
// connect request, then its requests.
type sent struct {
	mu    sync.Mutex
	conns map[int]*sentOn
}

type sentOn struct {
	buf       []byte
	connected bool  // the connect request was read
	session   int64 // the session the connect request names: 0 for a new one
	ops       []int32
}

func (s *sent) inspect(conn int, b []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.conns[conn]
	if c == nil {
		c = &sentOn{}
		s.conns[conn] = c
	}
	c.buf = append(c.buf, b...)
	for len(c.buf) >= 4 {
		n := int(binary.BigEndian.Uint32(c.buf))
		if len(c.buf) < 4+n {
			return
		}
		body := c.buf[4 : 4+n]
		switch {
		case !c.connected:
			// A protocol version, the last transaction seen, a timeout, then the session.
			c.connected = true
			if len(body) >= 24 {
				c.session = int64(binary.BigEndian.Uint64(body[16:24]))
			}
		case len(body) >= 8: // an xid, then the opcode
			c.ops = append(c.ops, int32(binary.BigEndian.Uint32(body[4:8])))
		}
		c.buf = c.buf[4+n:]
	}
}

// resumed returns the sessions named by the connections that resumed one, in no order, and
// the number of setWatches requests sent on any connection.
func (s *sent) resumed() (sessions []int64, setWatches int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.conns {
		if c.session != 0 {
			sessions = append(sessions, c.session)
		}
		for _, op := range c.ops {
			if op == opSetWatches {
				setWatches++
			}
		}
	}
	return sessions, setWatches
}

// watchSession returns the store's watch client and its session.
func watchSession(s *Store) (*client, int64) {
	s.b.mu.Lock()
	defer s.b.mu.Unlock()
	if s.b.watch == nil {
		return nil, 0
	}
	return s.b.watch, s.b.watch.conn.SessionID()
}

// TestReconnectionCarriesNoWatch: go-zookeeper/zk sends a session's watches again on each
// new connection of the session (setWatches, with the last transaction it saw, which its
// receiving goroutine writes meanwhile: a data race), so neither of the store's clients may
// hold a watch when it reconnects with its session. Through a proxy that resets every
// connection five times, with a watch held (heartbeats on) and requests in flight: the
// requests' client reconnects with its session each time and never sends setWatches; the
// watches' client is replaced by one of a new session each time, and no connection ever
// resumes a session of the watches; the watch delivers each write made after a reset.
func TestReconnectionCarriesNoWatch(t *testing.T) {
	t.Parallel()
	p, err := tcpproxy.New(serverAddr(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	// Inspected from the first byte, so that each connection's connect request is read.
	s := &sent{conns: map[int]*sentOn{}}
	p.Inspect(s.inspect)
	raw, _ := serverURL(t, "session_timeout=4s")
	direct := openRaw(t, raw)
	via := openRaw(t, strings.Replace(raw, serverAddr(t), p.Addr(), 1))
	ctx := t.Context()
	if err := direct.Create(ctx, "k", map[string]any{"n": 0}); err != nil {
		t.Fatal(err)
	}
	r := watch(t, store.WithHeartbeat(ctx, 20*time.Millisecond), via, "k")
	r.until(t, map[string]any{"n": float64(0)})
	requests := via.Conn().SessionID()

	stop := make(chan struct{})
	var wg sync.WaitGroup
	t.Cleanup(func() {
		close(stop)
		wg.Wait()
	})
	wg.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			rctx, cancel := context.WithTimeout(ctx, time.Second)
			via.Get(rctx, "k")
			cancel()
		}
	})
	const resets = 5
	watches := map[int64]bool{}
	for i := 1; i <= resets; i++ {
		before, session := watchSession(via)
		if before == nil {
			t.Fatal("the store has no watch client while a watch runs")
		}
		watches[session] = true
		p.Reset()
		if err := direct.Patch(ctx, "k", map[string]any{"n": i}, nil); err != nil {
			t.Fatal(err)
		}
		r.until(t, map[string]any{"n": float64(i)})
		after, session := watchSession(via)
		if after == before || watches[session] {
			t.Fatalf("reset %d: the watch was armed again on the same watch client (session %x)", i, session)
		}
		// The requests' client reconnects by itself, a second after it lost its only server.
		deadline := time.Now().Add(watchWait)
		for {
			sessions, _ := s.resumed()
			if len(sessions) >= i {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%d connections resumed a session after %d resets, want %d", len(sessions), i, i)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	_, session := watchSession(via)
	watches[session] = true

	if now := via.Conn().SessionID(); now != requests {
		t.Errorf("the requests' session changed from %x to %x; the test needs it to reconnect with its session", requests, now)
	}
	sessions, setWatches := s.resumed()
	for _, sid := range sessions {
		if watches[sid] {
			t.Errorf("a connection resumed the session %x of a watch client", sid)
		}
		if sid != requests {
			t.Errorf("a connection resumed the session %x, not the requests' %x", sid, requests)
		}
	}
	if setWatches != 0 {
		t.Errorf("the clients sent setWatches %d times on a reconnection: they held watches", setWatches)
	}
	t.Logf("%d connections resumed the requests' session; %d watch sessions", len(sessions), len(watches))
}
