package storetest_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/leasehold/leasehold/store"
	"github.com/leasehold/leasehold/store/driver"
	"github.com/leasehold/leasehold/store/memory"
	"github.com/leasehold/leasehold/store/storetest"
)

// patchCounter is a memory store that counts the conditional Patches per key, and fails them
// all when failing is set.
type patchCounter struct {
	*memory.Store
	failing bool

	mu      sync.Mutex
	patches map[string]int
}

func (p *patchCounter) Patch(ctx context.Context, key string, fields map[string]any, cond *store.Condition) error {
	if cond == nil {
		return errors.New("patchCounter: the benchmark's Patch has no condition")
	}
	if p.failing {
		return driver.WrapKey("patch", key, store.ErrConditionFailed)
	}
	p.mu.Lock()
	p.patches[key]++
	p.mu.Unlock()
	return p.Store.Patch(ctx, key, fields, cond)
}

// TestBenchmarkConditionalPatch: the shared benchmark runs 1 and then 16 writers, each making
// conditional Patches on a key of its own that all succeed (the memory store checks each
// condition against the revision the writer wrote last), and a failing Patch fails it.
func TestBenchmarkConditionalPatch(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a benchmark")
	}
	s := &patchCounter{Store: memory.New(), patches: map[string]int{}}
	if failed := runBenchmark(s); failed {
		t.Fatal("the benchmark failed on a store whose Patches all succeed")
	}
	writers := map[string]int{}
	for key, n := range s.patches {
		if n == 0 {
			continue
		}
		w, _, _ := strings.Cut(strings.TrimPrefix(key, "bench-"), "-")
		writers[w]++
	}
	if writers["1"] == 0 || writers["16"] < 16 {
		t.Errorf("keys patched per writer count: %v, want some for 1 writer and 16 or more for 16", writers)
	}

	failing := &patchCounter{Store: memory.New(), patches: map[string]int{}, failing: true}
	if failed := runBenchmark(failing); !failed {
		t.Error("the benchmark succeeded on a store whose Patches all fail")
	}
}

// runBenchmark runs the shared benchmark on s and reports whether it failed (a sub-benchmark's
// failure marks its parent failed; testing.Benchmark's result does not say).
func runBenchmark(s store.Store) (failed bool) {
	testing.Benchmark(func(b *testing.B) {
		storetest.BenchmarkConditionalPatch(b, func(*testing.B) store.Store { return s })
		failed = b.Failed()
	})
	return failed
}
