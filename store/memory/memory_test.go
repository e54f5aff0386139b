package memory_test

import (
	"testing"

	"github.com/leasehold/leasehold/store"
	"github.com/leasehold/leasehold/store/memory"
	"github.com/leasehold/leasehold/store/storetest"
)

// TestConformance runs the store conformance suite (T1–T3, T5) on a fresh store per subtest.
func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store { return memory.New() })
}

// TestConformanceShared runs it again on one store shared by every subtest, as networked stores
// run it against one table: the suite's keys must not collide.
func TestConformanceShared(t *testing.T) {
	storetestRun(t, memory.New())
}

func storetestRun(t *testing.T, s store.Store) {
	storetest.Run(t, func(t *testing.T) store.Store { return s })
}
