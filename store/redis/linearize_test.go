package redis

import (
	"context"
	"testing"

	"github.com/leasehold/leasehold/store"
	"github.com/leasehold/leasehold/store/storetest/linearize"
)

// TestLinearizable: one key as a compare-and-swap register, with 8 clients, each with
// connections of its own, and calls cut short by their deadlines (T1, T2, T7); see
// store/storetest/linearize.
func TestLinearizable(t *testing.T) {
	t.Parallel()
	raw, prefix := serverURL(t)
	opened := 0
	linearize.Run(t, func(t *testing.T) store.Store {
		s, err := Open(t.Context(), raw)
		if err != nil {
			t.Fatal(err)
		}
		if opened++; opened > 1 {
			t.Cleanup(func() { s.Close() })
			return s
		}
		t.Cleanup(func() {
			ctx := context.Background()
			iter := s.Client().Scan(ctx, 0, prefix+"*", 1000).Iterator()
			for iter.Next(ctx) {
				s.Client().Del(ctx, iter.Val())
			}
			if err := iter.Err(); err != nil {
				t.Errorf("cleaning up %s*: %v", prefix, err)
			}
			s.Close()
		})
		return s
	})
}
