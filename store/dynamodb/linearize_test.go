package dynamodb

import (
	"testing"

	"github.com/leasehold/leasehold/store"
	"github.com/leasehold/leasehold/store/storetest/linearize"
)

// TestLinearizable: one item of the table as a compare-and-swap register, with 8 clients, each
// a store (and a client, with its connections) of its own, and calls cut short by their
// deadlines (T1, T2, T7); see store/storetest/linearize.
func TestLinearizable(t *testing.T) {
	t.Parallel()
	raw, _ := serverURL(t)
	openCleaned(t, raw) // creates the table, and deletes it when the test ends
	linearize.Run(t, func(t *testing.T) store.Store {
		s, err := Open(t.Context(), raw)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	})
}
