package redis

import (
	"context"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/leasehold/leasehold/store"
)

// proxy forwards TCP connections to a server until Cut, after which it closes them and accepts
// new ones without ever answering: a network partition as a client sees it. Heal ends the
// partition.
type proxy struct {
	l      net.Listener
	target string
	wg     sync.WaitGroup

	mu    sync.Mutex
	cut   bool
	conns []net.Conn
	held  []net.Conn // accepted while cut
}

func startProxy(t *testing.T, target string) *proxy {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{l: l, target: target}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(func() {
		l.Close()
		p.Cut()
		p.wg.Wait()
	})
	return p
}

// Addr returns the address clients dial.
func (p *proxy) Addr() string { return p.l.Addr().String() }

// Cut closes every connection and black-holes the ones accepted from now on.
func (p *proxy) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = true
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}

// hold keeps a connection accepted during the cut, never read nor answered, until Heal or the
// end of the test. It reports false when the cut has ended meanwhile.
func (p *proxy) hold(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.cut {
		return false
	}
	p.held = append(p.held, c)
	return true
}

// Heal forwards new connections again, and closes the ones accepted during the cut so that their
// clients dial again.
func (p *proxy) Heal() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = false
	for _, c := range p.held {
		c.Close()
	}
	p.held = nil
}

func (p *proxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cut {
		return false
	}
	p.conns = append(p.conns, c)
	return true
}

func (p *proxy) accept() {
	defer p.wg.Done()
	defer func() {
		p.mu.Lock()
		defer p.mu.Unlock()
		for _, c := range p.held {
			c.Close()
		}
	}()
	for {
		c, err := p.l.Accept()
		if err != nil {
			return
		}
		if p.hold(c) {
			continue
		}
		if !p.track(c) {
			c.Close()
			continue
		}
		s, err := net.Dial("tcp", p.target)
		if err != nil || !p.track(s) {
			c.Close()
			if s != nil {
				s.Close()
			}
			continue
		}
		p.wg.Add(2)
		go p.pipe(c, s)
		go p.pipe(s, c)
	}
}

func (p *proxy) pipe(dst, src net.Conn) {
	defer p.wg.Done()
	io.Copy(dst, src)
	dst.Close()
	src.Close()
}

// waitRecovered waits until a Get of key succeeds again after a partition healed, and returns
// how long that took. There is no event to wait for: the client reconnects on its own schedule.
func waitRecovered(t *testing.T, s store.Store, key string) time.Duration {
	t.Helper()
	start := time.Now()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		_, err := s.Get(ctx, key)
		cancel()
		if err == nil {
			return time.Since(start)
		}
		if time.Since(start) > 15*time.Second {
			t.Fatalf("the store did not recover within 15s of the partition healing: %v", err)
		}
		<-tick.C
	}
}
