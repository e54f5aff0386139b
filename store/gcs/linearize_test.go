package gcs

import (
	"testing"

	"github.com/leasehold/leasehold/store"
	"github.com/leasehold/leasehold/store/storetest/linearize"
)

// TestLinearizable: one object of the bucket as a compare-and-swap register, with 8 clients,
// each a store (and an HTTP client) of its own, and calls cut short by their deadlines (T1, T2,
// T7); see store/storetest/linearize.
func TestLinearizable(t *testing.T) {
	t.Parallel()
	ts := openTest(t)
	linearize.Run(t, func(t *testing.T) store.Store { return mustOpen(t, ts.url) })
}
