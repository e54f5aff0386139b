package nats

import (
	"io"
	"net"
	"sync"
	"testing"
)

// proxy forwards TCP connections to a server until Cut, after which it closes them and accepts
// new ones without ever answering: a network partition as a client sees it.
type proxy struct {
	l      net.Listener
	target string
	wg     sync.WaitGroup

	mu    sync.Mutex
	cut   bool
	conns []net.Conn
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
	var held []net.Conn
	defer func() {
		for _, c := range held {
			c.Close()
		}
	}()
	for {
		c, err := p.l.Accept()
		if err != nil {
			return
		}
		if !p.track(c) {
			held = append(held, c) // never read, never answered
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
