package memory_test

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/leasehold/leasehold/store"
	"github.com/leasehold/leasehold/store/memory"
)

// leaseDoc is shaped like the lease record the Registry lock keeps.
func leaseDoc() map[string]any {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).Format(time.RFC3339Nano)
	return map[string]any{
		"holder":     "host-1234-abcdef",
		"term":       3,
		"acquiredAt": now,
		"renewedAt":  now,
		"duration":   15000,
		"revision":   "a",
	}
}

func BenchmarkGet(b *testing.B) {
	s := memory.New()
	ctx := b.Context()
	if err := s.Create(ctx, "cluster:leader", leaseDoc()); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.Get(ctx, "cluster:leader"); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPatchConditional is a lease renewal: a compare-and-swap on the revision that also
// sets the renewal time.
func BenchmarkPatchConditional(b *testing.B) {
	s := memory.New()
	ctx := b.Context()
	if err := s.Create(ctx, "cluster:leader", leaseDoc()); err != nil {
		b.Fatal(err)
	}
	renewed := time.Date(2026, 1, 1, 0, 0, 5, 0, time.UTC).Format(time.RFC3339Nano)
	toB := map[string]any{"revision": "b", "renewedAt": renewed}
	toA := map[string]any{"revision": "a", "renewedAt": renewed}
	condA := &store.Condition{Field: "revision", Value: "a"}
	condB := &store.Condition{Field: "revision", Value: "b"}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		fields, cond := toB, condA
		if i%2 == 1 {
			fields, cond = toA, condB
		}
		if err := s.Patch(ctx, "cluster:leader", fields, cond); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

// BenchmarkPatchConditionalParallel renews one lease per goroutine, all in one store.
func BenchmarkPatchConditionalParallel(b *testing.B) {
	s := memory.New()
	ctx := b.Context()
	var next atomic.Int64
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		key := fmt.Sprintf("cluster:lease-%d", next.Add(1))
		if err := s.Create(ctx, key, leaseDoc()); err != nil {
			b.Error(err)
			return
		}
		toB := map[string]any{"revision": "b"}
		toA := map[string]any{"revision": "a"}
		condA := &store.Condition{Field: "revision", Value: "a"}
		condB := &store.Condition{Field: "revision", Value: "b"}
		i := 0
		for pb.Next() {
			fields, cond := toB, condA
			if i%2 == 1 {
				fields, cond = toA, condB
			}
			if err := s.Patch(ctx, key, fields, cond); err != nil {
				b.Error(err)
				return
			}
			i++
		}
	})
}
