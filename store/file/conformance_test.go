package file

import (
	"testing"

	"github.com/leasehold/leasehold/store"
	"github.com/leasehold/leasehold/store/storetest"
)

// T5: the file store passes the conformance suite, with one store shared by every subtest and
// with a new store on the same file for each (as separate processes would open it).
func TestConformance(t *testing.T) {
	t.Run("OneStore", func(t *testing.T) {
		s := mustOpen(t, newPath(t))
		storetest.Run(t, func(*testing.T) store.Store { return s })
	})
	t.Run("StorePerSubtest", func(t *testing.T) {
		path := newPath(t)
		storetest.Run(t, func(t *testing.T) store.Store { return mustOpen(t, path) })
	})
}
