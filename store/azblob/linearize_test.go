package azblob

import (
	"testing"

	"github.com/leasehold/leasehold/store"
	"github.com/leasehold/leasehold/store/storetest/linearize"
)

// TestLinearizable: one blob as a compare-and-swap register, with 8 clients, each a store of
// its own (its own connections), and calls cut short by their deadlines (T1, T2, T7); see
// store/storetest/linearize.
//
// An emulator gap: Azurite (3.35) makes an ETag from the time in milliseconds times a random
// integer from 70,000 to 100,000, so two writes of one blob in the same millisecond get the
// same ETag once in 30,001, and a write on the older one's ETag then passes its If-Match. Azure
// gives every write a new ETag, and the store relies on it: scripts/cloud-emulators makes
// Azurite's ETags the time followed by a counter, so that this test checks the store, not the
// emulator's chance.
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
