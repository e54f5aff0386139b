// Package tlstest holds what the TLS tests of the store backends share: a test server's URL with
// its parameters, the round trips over the connections that must work, the refusals whose errors
// must name the parameter at fault and quote no secret, and the conformance suite and the
// failover test over TLS. Each backend keeps only how it starts its server and which URLs it
// tries.
package tlstest

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/leasehold/leasehold/internal/failovertest"
	"github.com/leasehold/leasehold/internal/testcerts"
	"github.com/leasehold/leasehold/store"
	"github.com/leasehold/leasehold/store/storetest"
)

// OpenFunc opens a store of the backend under test from its URL.
type OpenFunc func(ctx context.Context, raw string) (store.Store, error)

// URL returns base with the user info user ("name", or "name:password" for a password in the
// URL; none for "") and the query defaults, in which the pairs kv set or replace parameters.
func URL(base url.URL, user string, defaults url.Values, kv ...string) string {
	if user != "" {
		base.User = url.User(user)
		if name, pw, ok := strings.Cut(user, ":"); ok {
			base.User = url.UserPassword(name, pw)
		}
	}
	q := url.Values{}
	for k, v := range defaults {
		q[k] = append([]string(nil), v...)
	}
	for i := 0; i+1 < len(kv); i += 2 {
		q.Set(kv[i], kv[i+1])
	}
	base.RawQuery = q.Encode()
	return base.String()
}

// Run runs, on one server, the subtests Open (openCases: the round trips and refusals), then
// Conformance and Failover on stores opened with suiteURL(t, "conformance") and
// suiteURL(t, "failover"). The failover test's proxies forward the TLS connections as they are:
// the server's certificate holds 127.0.0.1, their address.
func Run(t *testing.T, open OpenFunc, openCases func(t *testing.T), suiteURL func(t *testing.T, name string) string) {
	t.Run("Open", openCases)
	t.Run("Conformance", func(t *testing.T) {
		s, err := open(t.Context(), suiteURL(t, "conformance"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { store.Close(s) })
		storetest.Run(t, func(*testing.T) store.Store { return s })
	})
	t.Run("Failover", func(t *testing.T) {
		failovertest.RunURL(t, suiteURL(t, "failover"), func(ctx context.Context, u string) (store.Store, error) { return open(ctx, u) })
	})
}

// RoundTrips opens a store with each of urls, each within 20s, and checks that a document
// created under a key of its own reads back.
func RoundTrips(t *testing.T, open OpenFunc, urls ...string) {
	t.Helper()
	for i, raw := range urls {
		func() {
			ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
			defer cancel()
			s, err := open(ctx, raw)
			if err != nil {
				t.Fatalf("%d: Open(%s): %v", i, store.RedactString(raw), err)
			}
			defer store.Close(s)
			// A key of its own: the URLs may share a table, bucket or prefix. Dashes only, as
			// NATS key-value keys take no colon.
			key := fmt.Sprintf("tls-test-%d-%d", i, time.Now().UnixNano())
			if err := s.Create(ctx, key, map[string]any{"v": float64(i)}); err != nil {
				t.Fatalf("%d: Create: %v", i, err)
			}
			if doc, err := s.Get(ctx, key); err != nil || doc["v"] != float64(i) {
				t.Fatalf("%d: Get = %v, %v", i, doc, err)
			}
		}()
	}
}

// Refusal is a URL Open must refuse, with an error saying each of Wants (the parameter at
// fault, or the server's reason).
type Refusal struct {
	Name  string
	URL   string
	Wants []string
}

// Refused returns the Refusal name of raw, whose error must say each of wants.
func Refused(name, raw string, wants ...string) Refusal {
	return Refusal{Name: name, URL: raw, Wants: wants}
}

// Refusals runs a subtest a case: Open, within 20s, fails; its error says each of the case's
// Wants, is no store sentinel, and quotes none of secrets nor a line of the private keys of c.
func Refusals(t *testing.T, open OpenFunc, c *testcerts.Set, secrets []string, cases []Refusal) {
	t.Helper()
	for _, bad := range cases {
		t.Run(bad.Name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
			defer cancel()
			s, err := open(ctx, bad.URL)
			if err == nil {
				store.Close(s)
				t.Fatal("Open succeeded")
			}
			msg := err.Error()
			for _, w := range bad.Wants {
				if !strings.Contains(msg, w) {
					t.Errorf("error %q does not say %q", msg, w)
				}
			}
			if errors.Is(err, store.ErrNotFound) {
				t.Errorf("error %v is a store sentinel", err)
			}
			NoSecret(t, msg, c, secrets...)
		})
	}
}

// NoSecret fails when out holds one of secrets or a line of one of the private keys of c.
func NoSecret(t testing.TB, out string, c *testcerts.Set, secrets ...string) {
	t.Helper()
	for _, s := range secrets {
		if s == "" {
			t.Fatal("NoSecret: an empty secret, which every output holds")
		}
		if strings.Contains(out, s) {
			t.Errorf("output quotes the secret %q: %s", s, out)
		}
	}
	for _, f := range []string{c.ClientKey, c.OtherKey, c.ServerKey} {
		for _, line := range testcerts.KeyMaterial(t, f) {
			if strings.Contains(out, line) {
				t.Errorf("output quotes the key %s: %s", f, out)
			}
		}
	}
}
