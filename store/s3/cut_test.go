//go:build unix

package s3

import (
	"testing"

	"github.com/leasehold/leasehold/store"
	"github.com/leasehold/leasehold/store/storetest"
)

// TestCutConnection: when the network to the service goes silent, an operation fails by its
// context's deadline (the SDK's HTTP client has no shorter timeout of its own for an answer),
// and the store works again once the network heals; see storetest.CutConnection.
func TestCutConnection(t *testing.T) {
	t.Parallel()
	bucket := newBucket(t)
	storetest.CutConnection(t, emulator(t).Addr, func(t *testing.T, addr string) store.Store {
		s, err := Open(t.Context(), bucketURL(t, bucket, "p", "endpoint", "http://"+addr))
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}
