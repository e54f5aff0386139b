//go:build unix

package cloudemu

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strconv"
	"sync"
	"time"
)

// fake-gcs-server (1.56) lacks two guarantees of Cloud Storage that a lease rests on, which
// gcsShim, a reverse proxy in front of it, restores (store/gcs's TestEmulatorGaps shows both
// on the emulator alone, and fails once the emulator closes them):
//
//   - It ignores ifGenerationMatch on DELETE: a delete on a stale generation removes the
//     object that a concurrent write just replaced (two winners of one generation). Cloud
//     Storage answers 412 Precondition Failed.
//   - Its reads are not atomic: it reads an object's metadata (the generation) under its lock
//     but its content only when it writes the response, after the lock is released; a write
//     or delete in between gives the generation of one version with the content of another,
//     a 404 or a short body after a 200. Cloud Storage serves one version whole.
//
// The shim holds one lock over each request to the emulator, the response included, and makes
// a DELETE with ifGenerationMatch conditional under it: it reads the object's metadata,
// answers 404 or 412 as Cloud Storage does when the object is missing or of another
// generation, and deletes it otherwise. A request's body is read whole before the lock is
// taken, so that a client that stops sending (a cut network) holds up no other. Everything
// else goes to the emulator as it came: the conditions of uploads (ifGenerationMatch, 0 to
// create), which it checks atomically, its status codes and its generations.
type gcsShim struct {
	mu     sync.Mutex
	target *url.URL
	proxy  *httputil.ReverseProxy
	srv    *http.Server
}

// startGCSShim starts a shim on addr in front of the emulator at endpoint.
func startGCSShim(addr, endpoint string) (*gcsShim, error) {
	target, err := url.Parse(endpoint)
	if err != nil {
		return nil, err
	}
	s := &gcsShim{target: target}
	s.proxy = &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(target) // the Host header too: the emulator's XML API answers on its own host only
		},
		ErrorHandler: func(w http.ResponseWriter, _ *http.Request, err error) {
			// The emulator is down (killed, paused past the client's deadline) or the client
			// gave up.
			gcsError(w, http.StatusBadGateway, "backendError", "cloudemu shim: "+err.Error())
		},
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("cloudemu: the GCS shim: %w", err)
	}
	s.srv = &http.Server{Handler: s, ReadHeaderTimeout: time.Minute}
	go func() { _ = s.srv.Serve(l) }()
	return s, nil
}

// Close stops the shim and closes its connections.
func (s *gcsShim) Close() error { return s.srv.Close() }

func (s *gcsShim) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return // the client is gone
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	s.mu.Lock()
	defer s.mu.Unlock()
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
			gcsError(w, http.StatusBadGateway, "backendError", fmt.Sprintf("cloudemu shim: metadata read answered %d", status))
			return
		case got != want:
			gcsError(w, http.StatusPreconditionFailed, "conditionNotMet", "At least one of the pre-conditions you specified did not hold.")
			return
		}
		q.Del("ifGenerationMatch")
		r.URL.RawQuery = q.Encode()
	}
	s.proxy.ServeHTTP(w, r)
}

// generation reads the metadata of the object r names (JSON API path) from the emulator.
func (s *gcsShim) generation(r *http.Request) (int64, int) {
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

// gcsError answers as Cloud Storage's JSON API does.
func gcsError(w http.ResponseWriter, code int, reason, msg string) {
	w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{
		"code": code, "message": msg,
		"errors": []any{map[string]any{"domain": "global", "reason": reason, "message": msg}},
	}})
}
