package gcs

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"slices"
	"strconv"
	"sync"
	"testing"
)

// The emulator, fake-gcs-server 1.56.1 with its filesystem backend, lacks two guarantees of
// Cloud Storage that a lease rests on, which the tests restore with shim, a reverse proxy in
// front of it (TestEmulatorGaps shows both gaps, and fails once the emulator closes them):
//
//   - It ignores ifGenerationMatch on DELETE: a delete on a stale generation removes the object
//     that a concurrent Patch just wrote (two winners of one generation, against T2). Cloud
//     Storage answers 412 Precondition Failed, the store's lost race.
//   - Its reads are not atomic: it reads an object's metadata (the generation) under its lock,
//     but opens the content only when it writes the response, after the lock is released; a
//     write or delete in between gives the generation of one version with the content of
//     another, a 404 or a truncated body after a 200. Cloud Storage serves one version whole.
//
// shim holds one lock over each request to the emulator, the response's body included, and
// makes a DELETE with ifGenerationMatch conditional under that lock: it reads the object's
// metadata, answers 404 or 412 as Cloud Storage does when it is missing or of another
// generation, and otherwise deletes it. Everything else goes to the emulator as it came: the
// conditions of uploads (ifGenerationMatch, 0 to create), which it does check atomically, its
// status codes and its generations.
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
		gcsError(w, http.StatusBadGateway, "backendError", "shim: "+err.Error())
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
	q := r.URL.Query()
	if r.Method == http.MethodDelete && q.Has("ifGenerationMatch") {
		want, err := strconv.ParseInt(q.Get("ifGenerationMatch"), 10, 64)
		if err != nil {
			gcsError(w, http.StatusBadRequest, "invalid", "Invalid argument.")
			return
		}
		got, status := s.generation(r)
		switch {
		case status == http.StatusNotFound:
			gcsError(w, http.StatusNotFound, "notFound", "No such object.")
			return
		case status != http.StatusOK:
			gcsError(w, http.StatusBadGateway, "backendError", fmt.Sprintf("shim: metadata read answered %d", status))
			return
		case got != want:
			gcsError(w, http.StatusPreconditionFailed, "conditionNotMet", "At least one of the pre-conditions you specified did not hold.")
			return
		}
		q.Del("ifGenerationMatch")
		r.URL.RawQuery = q.Encode()
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

// generation reads the metadata of the object r names (JSON API path) from the emulator.
func (s *shim) generation(r *http.Request) (int64, int) {
	u := *s.target
	u.Path, u.RawPath = r.URL.Path, r.URL.RawPath
	req, err := http.NewRequestWithContext(r.Context(), http.MethodGet, u.String(), nil)
	if err != nil {
		return 0, http.StatusBadGateway
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, http.StatusBadGateway
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, resp.StatusCode
	}
	var attrs struct {
		Generation string `json:"generation"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&attrs); err != nil {
		return 0, http.StatusBadGateway
	}
	g, err := strconv.ParseInt(attrs.Generation, 10, 64)
	if err != nil {
		return 0, http.StatusBadGateway
	}
	return g, http.StatusOK
}

// gcsError answers as the JSON API does.
func gcsError(w http.ResponseWriter, code int, reason, msg string) {
	w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{
		"code": code, "message": msg,
		"errors": []any{map[string]any{"domain": "global", "reason": reason, "message": msg}},
	}})
}
