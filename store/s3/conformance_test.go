//go:build unix

package s3

import (
	"testing"

	"github.com/leasehold/leasehold/store"
	"github.com/leasehold/leasehold/store/storetest"
)

// TestConformance runs the store suite (T1–T5) against versitygw, in both delete modes.
func TestConformance(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{DeleteAuto, DeleteTombstone} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			s := openTest(t, testURL(t, "delete", mode))
			t.Logf("delete mode: %s", s.DeleteMode())
			storetest.Run(t, func(*testing.T) store.Store { return s })
		})
	}
}
