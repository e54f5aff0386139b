package azblob

import (
	"testing"

	"github.com/leasehold/leasehold/store"
	"github.com/leasehold/leasehold/store/storetest/linearize"
)

// TestLinearizable: one blob as a compare-and-swap register, with 8 clients, each a store of
// its own (its own connections), and calls cut short by their deadlines (T1, T2, T7); see
// store/storetest/linearize.
func TestLinearizable(t *testing.T) {
	t.Parallel()
	raw, _ := testURL(t)
	linearize.Run(t, func(t *testing.T) store.Store {
		s, err := Open(t.Context(), raw)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	})
}
