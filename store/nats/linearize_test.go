package nats

import (
	"context"
	"testing"
	"time"

	"github.com/leasehold/leasehold/store"
	"github.com/leasehold/leasehold/store/storetest/linearize"
)

// TestLinearizable: one key of the bucket as a compare-and-swap register, with 8 clients, each
// with a connection of its own, and calls cut short by their deadlines (T1, T2, T7); see
// store/storetest/linearize.
func TestLinearizable(t *testing.T) {
	t.Parallel()
	raw, bucket := serverURL(t)
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
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := s.JetStream().DeleteKeyValue(ctx, bucket); err != nil {
				t.Errorf("deleting bucket %s: %v", bucket, err)
			}
			s.Close()
		})
		return s
	})
}
