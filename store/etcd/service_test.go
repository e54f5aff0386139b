package etcd

import (
	"context"
	"encoding/json"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/store"
)

func decodeService(t *testing.T, config string) (*Service, error) {
	t.Helper()
	d := json.NewDecoder(strings.NewReader(config))
	d.DisallowUnknownFields()
	var s Service
	return &s, d.Decode(&s)
}

// TestService decodes the service's parameters strictly, as the application does, and uses it
// as a store without an application.
func TestService(t *testing.T) {
	t.Parallel()
	if !slices.Contains(leasehold.ServiceTypes(), ServiceType) {
		t.Fatalf("%s is not registered: %v", ServiceType, leasehold.ServiceTypes())
	}
	raw, prefix := serverURL(t)
	u, _ := url.Parse(raw)
	u.RawQuery = "" // the prefix comes from the parameter
	cfg, _ := json.Marshal(map[string]any{"url": u.String(), "prefix": prefix})
	svc, err := decodeService(t, string(cfg))
	if err != nil {
		t.Fatal(err)
	}
	if err := svc.Init(t.Context(), nil); err != nil {
		t.Fatal(err)
	}
	var s store.Store = svc
	if err := s.Create(t.Context(), "cluster:leader", map[string]any{"holder": "a"}); err != nil {
		t.Fatal(err)
	}
	// The parameter, not the URL's default, sets where documents go.
	if resp, err := svc.Store().Client().Get(t.Context(), prefix+"cluster:leader"); err != nil || len(resp.Kvs) != 1 {
		t.Errorf("document not under the configured prefix %q: %v, %v", prefix, resp, err)
	}
	if err := s.Patch(t.Context(), "cluster:leader", map[string]any{"holder": "b"}, &store.Condition{Field: "holder", Value: "a"}); err != nil {
		t.Fatal(err)
	}
	if doc, err := s.Get(t.Context(), "cluster:leader"); err != nil || doc["holder"] != "b" {
		t.Errorf("Get = %v, %v", doc, err)
	}
	if err := s.Delete(t.Context(), "cluster:leader", nil); err != nil {
		t.Fatal(err)
	}
	if err := svc.Stop(t.Context()); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(t.Context(), "x"); err == nil || !strings.Contains(err.Error(), "not initialized") {
		t.Errorf("Get after Stop: %v", err)
	}
}

// TestServiceParameters checks that bad parameters are refused with an error naming them.
func TestServiceParameters(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ config, want string }{
		{`{}`, `"url" is required`},
		{`{"url": "postgres://x@y/z"}`, `"url"`},
		{`{"url": "not a url at all"}`, `"url"`},
		{`{"url": "etcd://127.0.0.1:2379?nonsense=1"}`, `nonsense`},
		{`{"url": "etcd://u:secretpw1@127.0.0.1:1?dial_timeout=1s"}`, `"url"`},
	} {
		svc, err := decodeService(t, c.config)
		if err != nil {
			t.Fatalf("%s: %v", c.config, err)
		}
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
		err = svc.Init(ctx, nil)
		cancel()
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "secretpw1") {
			t.Errorf("Init with %s: %v, want an error naming %s", c.config, err, c.want)
		}
	}
	if _, err := decodeService(t, `{"url": "etcd://x", "bucket": "b"}`); err == nil {
		t.Error("an unknown parameter was accepted")
	}
}

// TestCutConnection checks that when the network to the server goes silent, an operation fails
// by its context's deadline, well before the keepalive would notice (as the elector needs: an
// attempt has no answer within L − R is a failure).
func TestCutConnection(t *testing.T) {
	t.Parallel()
	raw, _ := serverURL(t)
	u, _ := url.Parse(raw)
	p := startProxy(t, u.Host)
	u.Host = p.Addr()
	q := u.Query()
	q.Set("keepalive", "0")
	u.RawQuery = q.Encode()
	s, err := Open(t.Context(), u.String())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Create(t.Context(), "k", map[string]any{"rev": 1}); err != nil {
		t.Fatal(err)
	}
	p.Cut()
	const deadline = 300 * time.Millisecond
	for _, op := range []string{"get", "patch"} {
		ctx, cancel := context.WithTimeout(t.Context(), deadline)
		start := time.Now()
		if op == "get" {
			_, err = s.Get(ctx, "k")
		} else {
			err = s.Patch(ctx, "k", map[string]any{"rev": 2}, &store.Condition{Field: "rev", Value: 1})
		}
		elapsed := time.Since(start)
		cancel()
		if err == nil {
			t.Fatalf("%s through a cut connection succeeded", op)
		}
		if elapsed > deadline+2*time.Second {
			t.Errorf("%s through a cut connection took %v with a %v deadline", op, elapsed, deadline)
		}
		t.Logf("%s failed after %v: %v", op, elapsed, err)
		if !strings.Contains(err.Error(), `"k"`) {
			t.Errorf("%s error does not name the key: %v", op, err)
		}
	}
	// Once the partition heals, the same store works again, and the writes that failed during it
	// did not happen.
	p.Heal()
	t.Logf("recovered %v after the partition healed", waitRecovered(t, s, "k"))
	if err := s.Patch(t.Context(), "k", map[string]any{"rev": 2}, &store.Condition{Field: "rev", Value: 1}); err != nil {
		t.Errorf("Patch after the partition healed: %v", err)
	}
}
