package failovertest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"sync"
	"testing"

	"github.com/leasehold/leasehold/store"
	"github.com/leasehold/leasehold/store/driver"
	"github.com/leasehold/leasehold/store/memory"
)

// A networked store for the harness's own tests, with nothing but the standard library: a
// server holding a memory store, and a client speaking JSON lines to it over one pooled
// connection, which it drops on any error (as the real clients drop a broken connection).

type netRequest struct {
	Op     string           `json:"op"`
	Key    string           `json:"key"`
	Doc    map[string]any   `json:"doc,omitempty"`
	Cond   *store.Condition `json:"cond,omitempty"`
	Fields map[string]any   `json:"fields,omitempty"`
}

type netResponse struct {
	Doc  map[string]any `json:"doc,omitempty"`
	Kind string         `json:"kind,omitempty"` // a sentinel: notfound, exists, condition
	Err  string         `json:"err,omitempty"`
}

type netServer struct {
	ln  net.Listener
	mem *memory.Store
	wg  sync.WaitGroup

	mu    sync.Mutex
	conns map[net.Conn]bool
}

func startNetServer(t *testing.T) *netServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &netServer{ln: ln, mem: memory.New(), conns: map[net.Conn]bool{}}
	s.wg.Add(1)
	go s.accept()
	t.Cleanup(func() {
		ln.Close()
		s.mu.Lock()
		for c := range s.conns {
			c.Close()
		}
		s.mu.Unlock()
		s.wg.Wait()
	})
	return s
}

func (s *netServer) accept() {
	defer s.wg.Done()
	for {
		c, err := s.ln.Accept()
		if err != nil {
			return
		}
		s.mu.Lock()
		s.conns[c] = true
		s.mu.Unlock()
		s.wg.Add(1)
		go s.serve(c)
	}
}

func (s *netServer) serve(c net.Conn) {
	defer s.wg.Done()
	defer func() {
		s.mu.Lock()
		delete(s.conns, c)
		s.mu.Unlock()
		c.Close()
	}()
	dec, enc := json.NewDecoder(c), json.NewEncoder(c)
	ctx := context.Background()
	for {
		var req netRequest
		if err := dec.Decode(&req); err != nil {
			return
		}
		var resp netResponse
		var err error
		switch req.Op {
		case "get":
			resp.Doc, err = s.mem.Get(ctx, req.Key)
		case "create":
			err = s.mem.Create(ctx, req.Key, req.Doc)
		case "patch":
			err = s.mem.Patch(ctx, req.Key, req.Fields, req.Cond)
		case "delete":
			err = s.mem.Delete(ctx, req.Key, req.Cond)
		default:
			err = fmt.Errorf("unknown op %q", req.Op)
		}
		switch {
		case errors.Is(err, store.ErrNotFound):
			resp.Kind = "notfound"
		case errors.Is(err, store.ErrExists):
			resp.Kind = "exists"
		case errors.Is(err, store.ErrConditionFailed):
			resp.Kind = "condition"
		case err != nil:
			resp.Err = err.Error()
		}
		if enc.Encode(resp) != nil {
			return
		}
	}
}

// netClient is a store.Store talking to a netServer at addr.
type netClient struct {
	addr string

	mu   sync.Mutex
	idle net.Conn // the pooled connection, nil when none
}

var _ store.Store = (*netClient)(nil)

func (c *netClient) call(ctx context.Context, req netRequest) (map[string]any, error) {
	c.mu.Lock()
	conn := c.idle
	c.idle = nil
	c.mu.Unlock()
	if conn == nil {
		var d net.Dialer
		var err error
		if conn, err = d.DialContext(ctx, "tcp", c.addr); err != nil {
			return nil, driver.WrapKey(req.Op, req.Key, err)
		}
	}
	// The context's end closes the connection: a cut connection fails at the deadline.
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	var resp netResponse
	err := json.NewEncoder(conn).Encode(req)
	if err == nil {
		err = json.NewDecoder(conn).Decode(&resp)
	}
	if !stop() || err != nil {
		conn.Close()
		if ctx.Err() != nil {
			err = ctx.Err()
		}
		return nil, driver.WrapKey(req.Op, req.Key, err)
	}
	c.mu.Lock()
	if c.idle == nil {
		c.idle = conn
	} else {
		conn.Close()
	}
	c.mu.Unlock()
	switch {
	case resp.Kind == "notfound":
		return nil, driver.WrapKey(req.Op, req.Key, store.ErrNotFound)
	case resp.Kind == "exists":
		return nil, driver.WrapKey(req.Op, req.Key, store.ErrExists)
	case resp.Kind == "condition":
		return nil, driver.WrapKey(req.Op, req.Key, store.ErrConditionFailed)
	case resp.Err != "":
		return nil, driver.WrapKey(req.Op, req.Key, errors.New(resp.Err))
	}
	return resp.Doc, nil
}

func (c *netClient) Get(ctx context.Context, key string) (map[string]any, error) {
	return c.call(ctx, netRequest{Op: "get", Key: key})
}

func (c *netClient) Create(ctx context.Context, key string, doc map[string]any) error {
	_, err := c.call(ctx, netRequest{Op: "create", Key: key, Doc: doc})
	return err
}

func (c *netClient) Patch(ctx context.Context, key string, fields map[string]any, cond *store.Condition) error {
	_, err := c.call(ctx, netRequest{Op: "patch", Key: key, Fields: fields, Cond: cond})
	return err
}

func (c *netClient) Delete(ctx context.Context, key string, cond *store.Condition) error {
	_, err := c.call(ctx, netRequest{Op: "delete", Key: key, Cond: cond})
	return err
}

// Close closes the pooled connection.
func (c *netClient) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.idle != nil {
		c.idle.Close()
		c.idle = nil
	}
	return nil
}
