package postgres

import (
	"testing"

	"github.com/leasehold/leasehold/internal/testenv"
	"github.com/leasehold/leasehold/internal/testurl"
	"github.com/leasehold/leasehold/store"
	"github.com/leasehold/leasehold/store/storetest/linearize"
)

// TestLinearizable: one key of the table as a compare-and-swap register, with 8 clients, each
// with a pool of its own, and calls cut short by their deadlines (T1, T2, T7); see
// store/storetest/linearize.
func TestLinearizable(t *testing.T) {
	t.Parallel()
	raw := testurl.With(t, serverURL(t), "table", testenv.TableName(t))
	opened := 0
	linearize.Run(t, func(t *testing.T) store.Store {
		s, err := Open(t.Context(), raw)
		if err != nil {
			t.Fatal(err)
		}
		if opened++; opened > 1 {
			t.Cleanup(func() { s.Close() })
		} else {
			t.Cleanup(func() { dropTable(t, s) })
		}
		return s
	})
}
