package azblob

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"sync"
	"testing"

	"github.com/leasehold/leasehold/internal/cloudemu"
	"github.com/leasehold/leasehold/store"
)

// proxy stands between a store and Azurite: it forwards every request, records each as the
// Blob service operation it is, and can answer the next write (PUT or DELETE) or read (GET)
// with a 503 of its own, after forwarding it (the write lands, its answer is lost) or without
// forwarding it.
type proxy struct {
	srv *httptest.Server
	mu  sync.Mutex
	ops []string // the operations, in order
	// failWrite: the next write is forwarded, and its answer replaced with a 503.
	// failRead: the next GET is answered with a 503, not forwarded.
	failWrite, failRead bool
}

func newProxy(t *testing.T, e *cloudemu.Emulator) *proxy {
	t.Helper()
	target, _ := url.Parse(e.Endpoint)
	rp := httputil.NewSingleHostReverseProxy(target)
	p := &proxy{}
	p.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.mu.Lock()
		p.ops = append(p.ops, operation(r))
		write := r.Method == http.MethodPut || r.Method == http.MethodDelete
		failWrite := write && p.failWrite
		failRead := r.Method == http.MethodGet && p.failRead
		if failWrite {
			p.failWrite = false
		}
		if failRead {
			p.failRead = false
		}
		p.mu.Unlock()
		switch {
		case failRead:
			http.Error(w, "injected", http.StatusServiceUnavailable)
		case failWrite:
			rec := httptest.NewRecorder()
			rp.ServeHTTP(rec, r) // the write lands...
			if rec.Code >= 300 {
				t.Errorf("the forwarded %s failed: %d %s", r.Method, rec.Code, rec.Body)
			}
			http.Error(w, "injected", http.StatusServiceUnavailable) // ...its answer is lost
		default:
			rp.ServeHTTP(w, r)
		}
	}))
	t.Cleanup(p.srv.Close)
	return p
}

// operation names the Blob service operation of r, as docs/backends.md and APICalls do.
func operation(r *http.Request) string {
	comp := r.URL.Query().Get("comp")
	switch {
	case r.Method == http.MethodGet && comp == "":
		return "Get Blob"
	case r.Method == http.MethodHead && comp == "":
		return "Get Blob Properties"
	case r.Method == http.MethodPut && comp == "":
		return "Put Blob"
	case r.Method == http.MethodDelete && comp == "":
		return "Delete Blob"
	}
	return r.Method + " comp=" + comp + " restype=" + r.URL.Query().Get("restype")
}

func (p *proxy) take() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	ops := p.ops
	p.ops = nil
	return ops
}

// openProxied opens a store on a fresh container through a new proxy.
func openProxied(t *testing.T) (*Store, *proxy) {
	t.Helper()
	e := emulator(t)
	name := newContainer(t, e)
	p := newProxy(t, e)
	q := url.Values{"connection_string_env": {connEnv}, "endpoint": {p.srv.URL + "/" + cloudemu.AzureAccount}}
	return openRaw(t, emulatorURL(name, "", q)), p
}

// TestWriteSentOnce: a write whose first attempt landed but whose answer was lost (a 503 after
// the service applied it) is sent once, and reported as an error that is neither a lost race
// nor "exists" nor "not found": an unknown outcome (T7). Were azcore's retries on for writes,
// the second attempt would find the ETag changed by the first, and Patch would answer
// ErrConditionFailed, Create ErrExists, Delete ErrNotFound: false answers. Reads are retried.
func TestWriteSentOnce(t *testing.T) {
	t.Parallel()
	s, p := openProxied(t)
	ctx := t.Context()
	if err := s.Create(ctx, "k", map[string]any{"rev": 1}); err != nil {
		t.Fatal(err)
	}
	definite := []error{store.ErrConditionFailed, store.ErrExists, store.ErrNotFound}
	for _, c := range []struct {
		name string
		op   func() error
		want map[string]any // the document after the write landed; nil: none
	}{
		{"Create", func() error { return s.Create(ctx, "c", map[string]any{"rev": 1}) }, map[string]any{"rev": 1.0}},
		{"Patch", func() error {
			return s.Patch(ctx, "k", map[string]any{"rev": 2}, &store.Condition{Field: "rev", Value: 1})
		}, map[string]any{"rev": 2.0}},
		{"Delete", func() error { return s.Delete(ctx, "k", &store.Condition{Field: "rev", Value: 2}) }, nil},
	} {
		p.take()
		p.mu.Lock()
		p.failWrite = true
		p.mu.Unlock()
		err := c.op()
		ops := p.take()
		t.Logf("%s: %v; requests %v", c.name, err, ops)
		if err == nil {
			t.Errorf("%s whose answer was lost succeeded", c.name)
		}
		for _, d := range definite {
			if errors.Is(err, d) {
				t.Errorf("%s whose first attempt landed answered %v: a write was sent again", c.name, err)
			}
		}
		writes := 0
		for _, op := range ops {
			if op == "Put Blob" || op == "Delete Blob" {
				writes++
			}
		}
		if writes != 1 {
			t.Errorf("%s sent %d writes, want 1: %v", c.name, writes, ops)
		}
		key := "k"
		if c.name == "Create" {
			key = "c"
		}
		doc, err := s.Get(ctx, key)
		switch {
		case c.want == nil && !errors.Is(err, store.ErrNotFound):
			t.Errorf("after the %s that landed: Get = %v, %v; want ErrNotFound", c.name, doc, err)
		case c.want != nil && (err != nil || doc["rev"] != c.want["rev"]):
			t.Errorf("after the %s that landed: Get = %v, %v; want %v", c.name, doc, err, c.want)
		}
	}
	// A read that gets a 503 is sent again, and succeeds.
	p.take()
	p.mu.Lock()
	p.failRead = true
	p.mu.Unlock()
	if doc, err := s.Get(ctx, "c"); err != nil || doc["rev"] != 1.0 {
		t.Errorf("Get after a 503: %v, %v; want the document (reads are retried)", doc, err)
	}
	if ops := p.take(); len(ops) != 2 {
		t.Errorf("Get after a 503 sent %v, want two Get Blob", ops)
	}
}
