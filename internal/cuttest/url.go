package cuttest

import (
	"context"
	"testing"

	"github.com/leasehold/leasehold/internal/testurl"
	"github.com/leasehold/leasehold/store"
	"github.com/leasehold/leasehold/store/storetest"
)

// URL is storetest.CutConnection for a store opened by URL: the target is raw's host, and the
// store is opened with raw pointing at the proxy, with the parameters of the pairs kv set (the
// client's own timeouts or keepalives, made far longer than the test's deadlines).
func URL(t *testing.T, raw string, open func(ctx context.Context, raw string) (store.Store, error), kv ...string) {
	t.Helper()
	storetest.CutConnection(t, testurl.Parse(t, raw).Host, func(t *testing.T, addr string) store.Store {
		s, err := open(t.Context(), testurl.With(t, testurl.Host(t, raw, addr), kv...))
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}
