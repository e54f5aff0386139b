package mysql

import (
	"testing"

	"github.com/leasehold/leasehold/store"
	"github.com/leasehold/leasehold/store/storetest"
)

// BenchmarkConditionalPatch is the shared benchmark of a lease renewal's write (see
// storetest.BenchmarkConditionalPatch), with 1 and 16 writers:
//
//	go test -run '^$' -bench ConditionalPatch -benchtime 3s ./store/mysql
func BenchmarkConditionalPatch(b *testing.B) {
	storetest.BenchmarkConditionalPatch(b, func(b *testing.B) store.Store { return openTest(b) })
}
