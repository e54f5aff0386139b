package tcpproxy

import (
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/leasehold/leasehold/internal/leakcheck"
)

// echoServer echoes what each connection sends, and keeps every byte it received.
type echoServer struct {
	ln       net.Listener
	accepted chan struct{} // one value per connection accepted
	wg       sync.WaitGroup

	mu       sync.Mutex
	received bytes.Buffer
}

func newEchoServer(t *testing.T) *echoServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &echoServer{ln: ln, accepted: make(chan struct{}, 100)}
	var conns []net.Conn
	var mu sync.Mutex
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			s.accepted <- struct{}{}
			s.wg.Add(1)
			go func() {
				defer s.wg.Done()
				buf := make([]byte, 1024)
				for {
					n, err := c.Read(buf)
					if n > 0 {
						s.mu.Lock()
						s.received.Write(buf[:n])
						s.mu.Unlock()
						c.Write(buf[:n])
					}
					if err != nil {
						c.Close()
						return
					}
				}
			}()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		s.wg.Wait()
	})
	return s
}

func (s *echoServer) got() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.received.String()
}

func startProxy(t *testing.T, target string) *Proxy {
	t.Helper()
	p, err := New(target)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

func dial(t *testing.T, p *Proxy) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// roundTrip sends msg and reads it back within a generous timeout.
func roundTrip(t *testing.T, c net.Conn, msg string) {
	t.Helper()
	if _, err := c.Write([]byte(msg)); err != nil {
		t.Fatalf("write %q: %v", msg, err)
	}
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	buf := make([]byte, len(msg))
	if _, err := io.ReadFull(c, buf); err != nil {
		t.Fatalf("echo of %q: %v", msg, err)
	}
	if string(buf) != msg {
		t.Fatalf("echo of %q: got %q", msg, buf)
	}
}

// silent sends msg and checks that nothing comes back within wait and the connection stays
// open: the read ends by its deadline, not by an error or EOF.
func silent(t *testing.T, c net.Conn, msg string, wait time.Duration) {
	t.Helper()
	if _, err := c.Write([]byte(msg)); err != nil {
		t.Fatalf("write %q during the cut: %v", msg, err)
	}
	c.SetReadDeadline(time.Now().Add(wait))
	n, err := c.Read(make([]byte, 64))
	if !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("read during the cut: %d bytes, %v; want nothing until the deadline", n, err)
	}
}

// broken checks that the connection was ended by the proxy: a read returns an error other than
// its deadline (EOF or a reset) well before a generous deadline.
func broken(t *testing.T, c net.Conn, what string) {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	for {
		_, err := c.Read(make([]byte, 64))
		if err == nil {
			continue // bytes the proxy forwarded before it ended the connection
		}
		if errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("%s: still open after 5s, want it reset", what)
		}
		return
	}
}

func TestForwardsBothWaysAndInspects(t *testing.T) {
	srv := newEchoServer(t)
	p := startProxy(t, srv.ln.Addr().String())
	var mu sync.Mutex
	seen := map[int]string{}
	p.Inspect(func(conn int, b []byte) {
		mu.Lock()
		seen[conn] += string(b)
		mu.Unlock()
	})
	a, b := dial(t, p), dial(t, p)
	roundTrip(t, a, "hello")
	roundTrip(t, b, "world")
	roundTrip(t, a, "again")
	mu.Lock()
	defer mu.Unlock()
	// The connections are numbered in the order the proxy accepted them, which need not be the
	// order of the dials: check the pairs.
	if !(seen[1] == "helloagain" && seen[2] == "world") && !(seen[1] == "world" && seen[2] == "helloagain") {
		t.Errorf("Inspect saw %q, want each connection's bytes under its number", seen)
	}
	if got := p.Conns(); got != 2 {
		t.Errorf("Conns() = %d, want 2", got)
	}
}

// TestCutIsSilent: during a cut, open connections stay open but nothing goes through either
// way, and a new connection is accepted but never reaches the target.
func TestCutIsSilent(t *testing.T) {
	srv := newEchoServer(t)
	p := startProxy(t, srv.ln.Addr().String())
	a := dial(t, p)
	roundTrip(t, a, "before")
	<-srv.accepted
	p.Cut()
	silent(t, a, "during", 200*time.Millisecond)
	if p.Dropped() == 0 {
		t.Error("Dropped() = 0 after bytes were sent during the cut")
	}
	b := dial(t, p) // accepted by the listener: the dial succeeds
	silent(t, b, "new", 200*time.Millisecond)
	select {
	case <-srv.accepted:
		t.Error("a connection accepted during the cut reached the target")
	default:
	}
	if strings.Contains(srv.got(), "during") || strings.Contains(srv.got(), "new") {
		t.Errorf("the target received %q, sent during the cut", srv.got())
	}
	if got := p.Conns(); got != 2 {
		t.Errorf("Conns() = %d during the cut, want 2 (nothing closed)", got)
	}
}

// TestHeal: connections that lost bytes during the cut, or were accepted during it, are reset;
// an idle one carries on; new connections are forwarded; what was sent during the cut never
// reaches the target.
func TestHeal(t *testing.T) {
	srv := newEchoServer(t)
	p := startProxy(t, srv.ln.Addr().String())
	idle, talker := dial(t, p), dial(t, p)
	roundTrip(t, idle, "i1")
	roundTrip(t, talker, "t1")
	p.Cut()
	silent(t, talker, "lost", 100*time.Millisecond)
	held := dial(t, p)
	silent(t, held, "held", 100*time.Millisecond)
	p.Heal()
	broken(t, talker, "a connection that lost bytes during the cut")
	broken(t, held, "a connection accepted during the cut")
	roundTrip(t, idle, "i2")
	roundTrip(t, dial(t, p), "fresh")
	if got := srv.got(); strings.Contains(got, "lost") || strings.Contains(got, "held") {
		t.Errorf("the target received %q: bytes sent during the cut were delivered", got)
	}
	p.Heal() // no partition: nothing happens
	roundTrip(t, idle, "i3")
}

// TestHold: during a hold, open connections carry on and new ones are accepted but not dialled;
// Release dials them and forwards what their clients sent meanwhile.
func TestHold(t *testing.T) {
	srv := newEchoServer(t)
	p := startProxy(t, srv.ln.Addr().String())
	open := dial(t, p)
	roundTrip(t, open, "o1")
	<-srv.accepted
	p.Hold()
	held := dial(t, p)
	silent(t, held, "early", 100*time.Millisecond)
	select {
	case <-srv.accepted:
		t.Error("a connection accepted during the hold reached the target")
	default:
	}
	roundTrip(t, open, "o2")
	if got := p.Accepted(); got != 2 {
		t.Errorf("Accepted() = %d, want 2", got)
	}
	p.Release()
	<-srv.accepted
	held.SetReadDeadline(time.Now().Add(5 * time.Second))
	buf := make([]byte, len("early"))
	if _, err := io.ReadFull(held, buf); err != nil || string(buf) != "early" {
		t.Fatalf("echo of what was sent during the hold: %q, %v", buf, err)
	}
	roundTrip(t, held, "late")
}

func TestReset(t *testing.T) {
	srv := newEchoServer(t)
	p := startProxy(t, srv.ln.Addr().String())
	a := dial(t, p)
	roundTrip(t, a, "a")
	p.Reset()
	broken(t, a, "a connection open at Reset")
	if got := p.Conns(); got != 0 {
		t.Errorf("Conns() = %d after Reset, want 0", got)
	}
	roundTrip(t, dial(t, p), "b")

	// Reset during a cut resets the connections but keeps the partition.
	c := dial(t, p)
	roundTrip(t, c, "c")
	p.Cut()
	p.Reset()
	broken(t, c, "a connection open at a Reset during a cut")
	silent(t, dial(t, p), "d", 100*time.Millisecond)
	p.Heal()
	roundTrip(t, dial(t, p), "e")
}

// TestLatency: each direction is delayed by the latency, so a round trip takes at least twice
// as long (a lower bound: the machine may add more, never less).
func TestLatency(t *testing.T) {
	srv := newEchoServer(t)
	p := startProxy(t, srv.ln.Addr().String())
	a := dial(t, p)
	roundTrip(t, a, "warm")
	const d = 50 * time.Millisecond
	p.Latency(d)
	start := time.Now()
	roundTrip(t, a, "slow")
	if rt := time.Since(start); rt < 2*d {
		t.Errorf("round trip with latency %v took %v, want at least %v", d, rt, 2*d)
	}
	p.Latency(0)
	roundTrip(t, a, "fast")
}

func TestDialFailureClosesTheClient(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	p := startProxy(t, addr)
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		// The reset came before the dial returned: that is the expected outcome too.
		t.Logf("dial through the proxy: %v", err)
		return
	}
	defer c.Close()
	broken(t, c, "a connection whose target cannot be dialled")
}

func TestLoopbackOnly(t *testing.T) {
	for _, target := range []string{"10.0.0.1:5432", "example.com:80", "[2001:db8::1]:80", "no-port"} {
		if p, err := New(target); err == nil {
			p.Close()
			t.Errorf("New(%q) succeeded, want an error", target)
		} else if !strings.Contains(err.Error(), target) {
			t.Errorf("New(%q): %v, want an error naming the target", target, err)
		}
	}
	for _, target := range []string{"127.0.0.1:1", "127.0.0.2:1", "[::1]:1", "localhost:1"} {
		p, err := New(target)
		if err != nil {
			t.Errorf("New(%q): %v", target, err)
			continue
		}
		p.Close()
	}
}

// TestCloseEndsEveryGoroutine: Close returns once every goroutine of the proxy has returned,
// whatever its connections were doing: forwarding, held by a cut, or waiting on the latency.
func TestCloseEndsEveryGoroutine(t *testing.T) {
	srv := newEchoServer(t)
	tr := leakcheck.New()
	var p *Proxy
	tr.Do(func() {
		var err error
		p, err = New(srv.ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
	})
	forwarding := dial(t, p)
	roundTrip(t, forwarding, "x")
	p.Latency(time.Hour)
	waiting := dial(t, p)
	if _, err := waiting.Write([]byte("y")); err != nil {
		t.Fatal(err)
	}
	p.Cut()
	silent(t, dial(t, p), "z", 50*time.Millisecond)
	if len(tr.Running()) == 0 {
		t.Fatal("the tracker sees none of the proxy's goroutines: the check below would prove nothing")
	}
	if err := p.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	tr.Check(t, time.Second)
	if err := p.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	broken(t, forwarding, "a connection open at Close")
	if _, err := net.Dial("tcp", p.Addr()); err == nil {
		t.Error("the proxy still accepts connections after Close")
	}
}
