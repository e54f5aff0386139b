// Package tcpproxy is a TCP proxy for tests, on loopback only, that a test can partition
// (Cut, Heal), reset (Reset) and slow down (Latency), to see how a store's client and the
// election behave when the network to a server fails.
//
// A cut is a partition as a client sees it: nothing is forwarded, in either direction, and no
// connection is closed, so an operation hangs until its own deadline (a closed connection would
// be noticed at once; a silent one only by a deadline). Bytes sent during a cut are lost. When
// the partition heals, the connections that lost bytes are reset, as TCP breaks a connection
// whose data could not be delivered (forwarding the rest of a stream with a hole in it would
// hand the peer garbage, and delivering the lost bytes late would replay writes the client has
// given up on); connections idle through the cut carry on.
package tcpproxy

import (
	"context"
	"fmt"
	"net"
	"sync"
	"time"
)

// Proxy forwards the TCP connections it accepts on a loopback address to a target on loopback.
// Its methods may be called from any goroutine.
type Proxy struct {
	ln     net.Listener
	target string
	ctx    context.Context // cancelled by Close, ends pending dials
	cancel context.CancelFunc
	wg     sync.WaitGroup // every goroutine of the proxy

	mu      sync.Mutex
	cut     bool
	hold    chan struct{} // non-nil during a hold; closed by Release
	latency time.Duration
	inspect func(conn int, b []byte)
	links   map[*link]struct{}
	nconn   int
	dropped int
	closed  bool
}

// link is one client connection and, once dialled, its connection to the target.
type link struct {
	id     int
	client net.Conn
	server net.Conn      // nil until dialled, and for ever when accepted during a cut
	lost   bool          // bytes were dropped: Heal resets it
	done   chan struct{} // closed when the link is closed
}

// New starts a proxy listening on 127.0.0.1 (a port of its own) and forwarding to target, a
// host:port on loopback (127.0.0.0/8, ::1 or localhost). Close stops it.
func New(target string) (*Proxy, error) {
	if err := checkLoopback(target); err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("tcpproxy: listen: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	p := &Proxy{ln: ln, target: target, ctx: ctx, cancel: cancel, links: map[*link]struct{}{}}
	p.wg.Add(1)
	go p.accept()
	return p, nil
}

func checkLoopback(target string) error {
	host, _, err := net.SplitHostPort(target)
	if err != nil {
		return fmt.Errorf("tcpproxy: target %q: %w", target, err)
	}
	if host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("tcpproxy: target %q is not a loopback address (the proxy is for tests on loopback only)", target)
	}
	return nil
}

// Addr returns the host:port clients dial to reach the target through the proxy.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Cut starts a partition: from now on nothing is forwarded, bytes read from either side are
// dropped, and connections accepted meanwhile go nowhere (the target is not dialled). No
// connection is closed. Calling it during a cut does nothing.
func (p *Proxy) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = true
}

// Heal ends a partition: connections that lost bytes during it, and those accepted during it,
// are reset (their clients see an error and dial again); the others carry on, and new
// connections are forwarded. Calling it when there is no partition does nothing.
func (p *Proxy) Heal() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = false
	for l := range p.links {
		if l.lost {
			p.closeLocked(l, true)
		}
	}
}

// Hold stalls new connections: those accepted from now on are neither dialled nor closed until
// Release, while the open ones carry on (a server, or a middlebox, that accepts connections and
// answers nothing). Calling it during a hold does nothing.
func (p *Proxy) Hold() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.hold == nil {
		p.hold = make(chan struct{})
	}
}

// Release ends a hold: the connections it stalled are dialled and forwarded, with the bytes
// their clients sent meanwhile, and so are new ones. Calling it when there is no hold does
// nothing.
func (p *Proxy) Release() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.hold != nil {
		close(p.hold)
		p.hold = nil
	}
}

// Reset resets every open connection (a TCP RST to both sides), as a middlebox that drops its
// state would. It does not end or start a partition: new connections are forwarded unless the
// proxy is cut.
func (p *Proxy) Reset() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for l := range p.links {
		p.closeLocked(l, true)
	}
}

// Latency delays every chunk of bytes, in each direction, by d from the moment the proxy read
// it; a round trip takes 2d more. Zero (or less) forwards at once.
func (p *Proxy) Latency(d time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.latency = max(d, 0)
}

// Inspect sets f to be shown the bytes each client sends, as they are forwarded to the target,
// with the number of its connection (1 for the first one accepted); nil stops it. f runs on the
// proxy's goroutines: it must be safe for concurrent use.
func (p *Proxy) Inspect(f func(conn int, b []byte)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.inspect = f
}

// Conns returns the number of client connections open through the proxy.
func (p *Proxy) Conns() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.links)
}

// Accepted returns the number of client connections the proxy has accepted so far, open or
// closed.
func (p *Proxy) Accepted() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.nconn
}

// Dropped returns the number of chunks of bytes the proxy has dropped, in either direction,
// because it was cut: a test sees by it that a client sent something into a partition.
func (p *Proxy) Dropped() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.dropped
}

// Close stops listening, closes every connection and returns once every goroutine of the proxy
// has returned. Calling it again does nothing.
func (p *Proxy) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		p.wg.Wait()
		return nil
	}
	p.closed = true
	p.cancel()
	err := p.ln.Close()
	for l := range p.links {
		p.closeLocked(l, false)
	}
	p.mu.Unlock()
	p.wg.Wait()
	return err
}

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			// Close ends the listener; any other error (out of file descriptors) ends
			// accepting too, rather than spin: the test sees its dials fail.
			return
		}
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			c.Close()
			return
		}
		p.nconn++
		l := &link{id: p.nconn, client: c, done: make(chan struct{})}
		p.links[l] = struct{}{}
		cut, hold := p.cut, p.hold
		l.lost = cut // it never reaches the target: Heal resets it
		p.wg.Add(1)
		p.mu.Unlock()
		go p.serve(l, cut, hold)
	}
}

// serve dials the target for l (unless the proxy was cut when l was accepted; once hold is
// closed, when it was held) and forwards both ways until l is closed.
func (p *Proxy) serve(l *link, cut bool, hold chan struct{}) {
	defer p.wg.Done()
	if cut {
		p.pipe(l, l.client, nil, false)
		return
	}
	if hold != nil {
		select {
		case <-hold:
		case <-l.done:
			return
		case <-p.ctx.Done():
			p.closeLink(l, false)
			return
		}
	}
	var d net.Dialer
	up, err := d.DialContext(p.ctx, "tcp", p.target)
	if err != nil {
		p.closeLink(l, true)
		return
	}
	p.mu.Lock()
	select {
	case <-l.done:
		p.mu.Unlock()
		up.Close()
		return
	default:
	}
	l.server = up
	p.wg.Add(1)
	p.mu.Unlock()
	go func() {
		defer p.wg.Done()
		p.pipe(l, up, l.client, false)
	}()
	p.pipe(l, l.client, up, true)
}

// pipe copies from src to dst (nil: nowhere) until either fails or l is closed; fromClient
// says whether the bytes are the client's.
func (p *Proxy) pipe(l *link, src, dst net.Conn, fromClient bool) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 && !p.forward(l, dst, buf[:n], time.Now(), fromClient) {
			p.closeLink(l, false)
			return
		}
		if err != nil {
			p.closeLink(l, false)
			return
		}
	}
}

// forward writes b, read at readAt, to dst after the latency, or drops it when the proxy is cut
// by then. It reports false when the link is finished.
func (p *Proxy) forward(l *link, dst net.Conn, b []byte, readAt time.Time, fromClient bool) bool {
	p.mu.Lock()
	delay := p.latency
	p.mu.Unlock()
	if wait := time.Until(readAt.Add(delay)); delay > 0 && wait > 0 {
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-l.done:
			t.Stop()
			return false
		}
	}
	p.mu.Lock()
	if p.cut || dst == nil {
		l.lost = true
		p.dropped++
		p.mu.Unlock()
		return true
	}
	inspect, id := p.inspect, l.id
	p.mu.Unlock()
	if fromClient && inspect != nil {
		inspect(id, b)
	}
	_, err := dst.Write(b)
	return err == nil
}

func (p *Proxy) closeLink(l *link, reset bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closeLocked(l, reset)
}

// closeLocked closes both sides of l, with a RST when reset is set (a connection reset, rather
// than an orderly end), and forgets it. p.mu is held.
func (p *Proxy) closeLocked(l *link, reset bool) {
	select {
	case <-l.done:
		return
	default:
	}
	close(l.done)
	delete(p.links, l)
	for _, c := range []net.Conn{l.client, l.server} {
		if c == nil {
			continue
		}
		if tc, ok := c.(*net.TCPConn); ok && reset {
			tc.SetLinger(0) // close sends a RST
		}
		c.Close()
	}
}
