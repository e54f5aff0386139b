package sqlite

import (
	"testing"

	"github.com/leasehold/leasehold/store"
	"github.com/leasehold/leasehold/store/storetest"
)

// BenchmarkConditionalPatch is the shared benchmark of a lease renewal's write (see
// storetest.BenchmarkConditionalPatch), with 1 and 16 writers, for the default settings and
// two others that trade durability or concurrency:
//
//	go test -run '^$' -bench ConditionalPatch -benchtime 3s ./store/sqlite
func BenchmarkConditionalPatch(b *testing.B) {
	for _, params := range []string{"", "synchronous=NORMAL", "max_open_conns=4"} {
		name := params
		if name == "" {
			name = "default"
		}
		b.Run(name, func(b *testing.B) {
			storetest.BenchmarkConditionalPatch(b, func(b *testing.B) store.Store { return openTest(b, params) })
		})
	}
}
