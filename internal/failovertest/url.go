package failovertest

import (
	"context"
	"net/url"
	"testing"

	"github.com/leasehold/leasehold/store"
)

// RunURL is Run for a store opened by URL: each elector's store is opened with the URL's host
// replaced by its proxy's address, so every other parameter (TLS material, credentials, a
// prefix or table) reaches the server through the proxy as it is.
func RunURL(t *testing.T, raw string, open func(ctx context.Context, url string) (store.Store, error)) {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	Run(t, u.Host, func(t *testing.T, addr string) store.Store {
		v := *u
		v.Host = addr
		s, err := open(t.Context(), v.String())
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}
