package gcs

import (
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"slices"
	"sync"
	"testing"
)

// shim is a reverse proxy in front of the emulator (whose Endpoint already goes through
// internal/cloudemu's shim, which gives it Cloud Storage's conditional deletes and atomic
// reads) for the tests' hooks: it records each request, and can lose the answers of writes.
type shim struct {
	mu     sync.Mutex
	target *url.URL
	proxy  *httputil.ReverseProxy

	// Tests' hooks, under mu: each request's method and path is recorded (TestLeastPermissions);
	// while loseAnswers is set, an upload or delete is forwarded and its answer dropped, the
	// connection closed instead (TestWriteSentOnce), and writes counts the writes forwarded.
	requests    []string
	loseAnswers bool
	writes      int
}

// startShim starts a shim in front of the emulator at endpoint and returns its endpoint.
func startShim(t testing.TB, endpoint string) string {
	t.Helper()
	_, u := newShim(t, endpoint)
	return u
}

// newShim is startShim, with the shim for the tests' hooks.
func newShim(t testing.TB, endpoint string) (*shim, string) {
	t.Helper()
	target, err := url.Parse(endpoint)
	if err != nil {
		t.Fatal(err)
	}
	s := &shim{target: target}
	s.proxy = &httputil.ReverseProxy{Rewrite: func(r *httputil.ProxyRequest) {
		r.SetURL(target) // the Host header too: the emulator's XML API answers on its own host only
	}, ErrorHandler: func(w http.ResponseWriter, _ *http.Request, err error) {
		// Mostly a client that gave up (its deadline): nobody reads the answer.
		http.Error(w, "shim: "+err.Error(), http.StatusBadGateway)
	}}
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	return s, srv.URL
}

// recorded returns the requests the shim has seen, as "METHOD path?query".
func (s *shim) recorded() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.requests)
}

// setLoseAnswers sets loseAnswers, and returns the writes forwarded so far.
func (s *shim) setLoseAnswers(v bool) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.loseAnswers = v
	return s.writes
}

func (s *shim) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests = append(s.requests, r.Method+" "+r.URL.RequestURI())
	write := r.Method == http.MethodPost || r.Method == http.MethodPut || r.Method == http.MethodDelete
	if write {
		s.writes++
	}
	if write && s.loseAnswers {
		// The write reaches the emulator and takes effect; its answer is lost with the
		// connection.
		s.proxy.ServeHTTP(httptest.NewRecorder(), r)
		if conn, _, err := w.(http.Hijacker).Hijack(); err == nil {
			conn.Close()
		}
		return
	}
	s.proxy.ServeHTTP(w, r)
}
