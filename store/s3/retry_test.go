//go:build unix

package s3

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/leasehold/leasehold/store"
)

// lyingProxy forwards requests to the emulator; when armed, it forwards the next write (PUT or
// DELETE of an object), lets it land, and answers 500 InternalError instead of the emulator's
// answer: a write that took effect and whose answer was lost, which the SDK retries.
type lyingProxy struct {
	*httptest.Server
	armed  atomic.Bool
	writes atomic.Int32
}

func newLyingProxy(t *testing.T) *lyingProxy {
	t.Helper()
	target, _ := url.Parse(emulator(t).Endpoint)
	rp := httputil.NewSingleHostReverseProxy(target)
	p := &lyingProxy{}
	p.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		object := strings.Count(strings.Trim(r.URL.Path, "/"), "/") >= 1
		if !object || (r.Method != http.MethodPut && r.Method != http.MethodDelete) {
			rp.ServeHTTP(w, r)
			return
		}
		p.writes.Add(1)
		if !p.armed.CompareAndSwap(true, false) {
			rp.ServeHTTP(w, r)
			return
		}
		rp.ServeHTTP(httptest.NewRecorder(), r) // it lands; its answer is lost
		w.Header().Set("Content-Type", "application/xml")
		w.WriteHeader(http.StatusInternalServerError)
		w.Write([]byte(`<?xml version="1.0" encoding="UTF-8"?><Error><Code>InternalError</Code><Message>We encountered an internal error. Please try again.</Message></Error>`))
	}))
	t.Cleanup(p.Close)
	return p
}

// TestWritesAreSentOnce: a write whose answer is lost after it landed is an unknown outcome,
// never ErrExists or ErrConditionFailed, and is sent once. With the SDK's retries on (as the
// store never opens it), the same lost answer makes a Create report ErrExists for the record it
// made, and a Patch ErrConditionFailed for the patch it applied: the test can tell the two.
func TestWritesAreSentOnce(t *testing.T) {
	t.Parallel()
	for _, retry := range []bool{false, true} {
		name := "sent once"
		if retry {
			name = "with SDK retries"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			p := newLyingProxy(t)
			bucket := newBucket(t)
			q := url.Values{"endpoint": {p.URL}, "path_style": {"true"}, "region": {"us-east-1"}, "delete": {"tombstone"}}
			u := &url.URL{Scheme: "s3", Host: bucket, Path: "/p/", RawQuery: q.Encode()}
			s, err := open(t.Context(), u, retry)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			sentinels := []error{store.ErrExists, store.ErrConditionFailed, store.ErrNotFound}
			definite := func(err error) bool {
				for _, s := range sentinels {
					if errors.Is(err, s) {
						return true
					}
				}
				return false
			}

			p.armed.Store(true)
			p.writes.Store(0)
			cerr := s.Create(t.Context(), "k", map[string]any{"rev": 1})
			cwrites := p.writes.Load()
			doc, gerr := s.Get(t.Context(), "k")
			if gerr != nil || doc["rev"] != 1.0 {
				t.Fatalf("the Create did not land: %v, %v", doc, gerr)
			}

			p.armed.Store(true)
			p.writes.Store(0)
			perr := s.Patch(t.Context(), "k", map[string]any{"rev": 2}, &store.Condition{Field: "rev", Value: 1})
			pwrites := p.writes.Load()
			doc, gerr = s.Get(t.Context(), "k")
			if gerr != nil || doc["rev"] != 2.0 {
				t.Fatalf("the Patch did not land: %v, %v", doc, gerr)
			}
			t.Logf("create: %v (%d writes); patch: %v (%d writes)", cerr, cwrites, perr, pwrites)
			if !retry {
				for op, err := range map[string]error{"create": cerr, "patch": perr} {
					if err == nil || definite(err) || !strings.Contains(err.Error(), "InternalError") {
						t.Errorf("%s whose answer was lost: %v, want an unknown outcome (the 500)", op, err)
					}
				}
				if cwrites != 1 || pwrites != 1 {
					t.Errorf("writes sent: %d for the create, %d for the patch; want 1 each", cwrites, pwrites)
				}
				return
			}
			// What the store avoids: a retry loses to its own first attempt.
			if !errors.Is(cerr, store.ErrExists) || !errors.Is(perr, store.ErrConditionFailed) {
				t.Errorf("with retries: create %v, patch %v; want the false ErrExists and ErrConditionFailed that retries cause", cerr, perr)
			}
		})
	}
}
