package postgres

import (
	"context"
	"errors"
	"net"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

// closeGrace is how long Close lets the pool close its connections politely before closing
// their sockets itself.
const closeGrace = time.Second

// connTracker keeps the sockets the pool dials, so that Close can end them. pgx, after an
// operation interrupted by its context, sends a cancel request and drains the connection for up
// to 15 seconds, and pgxpool.Close waits for that: on a cut network, Close would take 15
// seconds, and with it an application's Stop.
type connTracker struct {
	dial pgconn.DialFunc

	mu     sync.Mutex
	closed bool
	conns  map[*trackedConn]struct{}
}

var errStoreClosed = errors.New("postgres: store closed")

func newConnTracker(dial pgconn.DialFunc) *connTracker {
	if dial == nil {
		d := &net.Dialer{KeepAlive: 5 * time.Minute}
		dial = d.DialContext
	}
	return &connTracker{dial: dial, conns: map[*trackedConn]struct{}{}}
}

// Dial is a pgconn.DialFunc.
func (t *connTracker) Dial(ctx context.Context, network, addr string) (net.Conn, error) {
	c, err := t.dial(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		c.Close()
		return nil, errStoreClosed
	}
	tc := &trackedConn{Conn: c, t: t}
	t.conns[tc] = struct{}{}
	return tc, nil
}

// closeAll closes every socket, and refuses new ones.
func (t *connTracker) closeAll() {
	t.mu.Lock()
	t.closed = true
	conns := make([]*trackedConn, 0, len(t.conns))
	for c := range t.conns {
		conns = append(conns, c)
	}
	t.mu.Unlock()
	for _, c := range conns {
		c.Conn.Close()
	}
}

type trackedConn struct {
	net.Conn
	t *connTracker
}

func (c *trackedConn) Close() error {
	c.t.mu.Lock()
	delete(c.t.conns, c)
	c.t.mu.Unlock()
	return c.Conn.Close()
}
