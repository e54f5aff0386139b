package zookeeper

import (
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"
)

// client is one zk.Conn and what the store follows of it.
//
// The store holds two: one for its requests, which never sets a watch and reconnects with its
// session as the library does, and one for its watches, which is never connected again once
// it has had a session (see watch.go). The library sends a session's watches again on each new
// connection of the session (setWatches, with the last transaction it saw) while its receiving
// goroutine already updates that transaction, unsynchronised: a data race it only runs into
// when the connection holds watches, which neither client ever does on a reconnection.
//
// The library also runs that code on a client's first connection, right after it reports the
// session. The store sends nothing on a watch client before that report, and its first watch
// is set by the answer to a request sent after at least one more round trip (the credentials,
// or the sync before each read), by which time the library has long found no watch to send
// again; only a stall of its goroutine over those round trips would let it read one.
type client struct {
	conn   *zk.Conn
	events <-chan zk.Event // closed once the library's goroutines for conn have ended
	redial bool            // whether conn may connect again after its first session

	mu      sync.Mutex
	had     bool          // conn has had a session
	session chan struct{} // closed at conn's first session
	lost    chan struct{} // closed when a connection of a client that never redials ends
	ready   chan struct{} // closed once the store may send the client's first request
	err     error         // why the client cannot be used, set before ready is closed
}

// errNoRedial is the dial error of a watch client that has had its session.
var errNoRedial = errors.New("store/zookeeper: the watches' connection is not opened again; the store dials another client")

// connect starts a client; it connects in the background. A client that does not redial
// refuses, in its dialer, every connection after the one that gave it its session, so that it
// never reconnects with its watches, whenever the store closes it.
func (b *backend) connect(redial bool) (*client, error) {
	c := &client{redial: redial, session: make(chan struct{}), lost: make(chan struct{}), ready: make(chan struct{})}
	dial := b.dialer
	if !redial {
		dial = func(network, address string, timeout time.Duration) (net.Conn, error) {
			c.mu.Lock()
			had := c.had
			c.mu.Unlock()
			if had {
				return nil, errNoRedial
			}
			return b.dialer(network, address, timeout)
		}
	}
	conn, events, err := zk.Connect(b.servers, b.sessionTimeout,
		zk.WithDialer(dial), zk.WithHostProvider(&hosts{DNSHostProvider: zk.NewDNSHostProvider()}), zk.WithLogger(discard{}), zk.WithLogInfo(false), zk.WithEventCallback(c.event))
	if err != nil {
		return nil, fmt.Errorf("store/zookeeper: %w", err)
	}
	c.conn, c.events = conn, events
	return c, nil
}

// event follows the client's state. It runs on the library's goroutine, the one that also
// dials, and must not block.
func (c *client) event(ev zk.Event) {
	if ev.Type != zk.EventSession {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	switch ev.State {
	case zk.StateHasSession:
		if !c.had {
			c.had = true
			close(c.session)
		}
	case zk.StateDisconnected, zk.StateExpired:
		// Before its first session, a client tries the next server by itself.
		if c.had && !c.redial {
			c.loseLocked()
		}
	}
}

// lose marks the client as lost: the store dials another in its place.
func (c *client) lose() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.loseLocked()
}

func (c *client) loseLocked() {
	select {
	case <-c.lost:
	default:
		close(c.lost)
	}
}

func (c *client) isLost() bool {
	select {
	case <-c.lost:
		return true
	default:
		return false
	}
}

// fail makes err the answer of every wait for the client, which is lost.
func (c *client) fail(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.err = err
	close(c.ready)
	c.loseLocked()
}

// close ends the client's session and waits until its goroutines have ended.
func (c *client) close() {
	c.conn.Close()
	for range c.events { // closed once the library's loop has ended
	}
}

// hosts is the library's DNSHostProvider, but that the first server tried after losing a
// connection is dialled at once, once a second at most. The library otherwise waits a second
// before it when it has tried every server since its last connection, which with a single
// server is at once: the requests' client would answer nothing for a second after each reset,
// while the watches' client, a new one, reads at once.
type hosts struct {
	*zk.DNSHostProvider
	mu    sync.Mutex
	fresh bool      // no server tried since the last connection
	eager time.Time // when a server was last dialled at once
}

func (h *hosts) Connected() {
	h.DNSHostProvider.Connected()
	h.mu.Lock()
	defer h.mu.Unlock()
	h.fresh = true
}

func (h *hosts) Next() (string, bool) {
	server, retryStart := h.DNSHostProvider.Next()
	h.mu.Lock()
	defer h.mu.Unlock()
	// A server that drops each connection at once is not dialled in a loop.
	if h.fresh && retryStart && time.Since(h.eager) >= time.Second {
		retryStart = false
		h.eager = time.Now()
	}
	h.fresh = false
	return server, retryStart
}
