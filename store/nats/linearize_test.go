package nats

import (
	"testing"

	"github.com/leasehold/leasehold/store"
	"github.com/leasehold/leasehold/store/storetest/linearize"
)

// TestLinearizable: one key of the bucket as a compare-and-swap register, with 8 clients, each
// with a connection of its own, and calls cut short by their deadlines (T1, T2, T7); see
// store/storetest/linearize.
func TestLinearizable(t *testing.T) {
	t.Parallel()
	raw, bucket := serverURL(t)
	openCleaned(t, raw, bucket) // for the cleanup, when the test ends
	linearize.Run(t, func(t *testing.T) store.Store {
		s, err := Open(t.Context(), raw)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	})
}
