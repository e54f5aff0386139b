// Package testurl rewrites the URLs of the backends' test servers: a parameter set, the address
// swapped for a proxy's. The backends' tests all start from one server URL and derive the rest.
package testurl

import (
	"net/url"
	"testing"
)

// Parse parses raw, failing the test when it is not a URL.
func Parse(t testing.TB, raw string) *url.URL {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// With returns raw with the query parameters of the pairs kv set.
func With(t testing.TB, raw string, kv ...string) string {
	t.Helper()
	u := Parse(t, raw)
	q := u.Query()
	for i := 0; i+1 < len(kv); i += 2 {
		q.Set(kv[i], kv[i+1])
	}
	u.RawQuery = q.Encode()
	return u.String()
}

// Host returns raw pointing at hostport (a proxy's, say) instead of its own address.
func Host(t testing.TB, raw, hostport string) string {
	t.Helper()
	u := Parse(t, raw)
	u.Host = hostport
	return u.String()
}
