package storetest

import (
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/leasehold/leasehold/store"
)

// BenchmarkConditionalPatch measures a lease renewal's write, a Patch conditioned on the
// document's current revision, by 1 and by 16 concurrent writers, each on a key of its own so
// that every write succeeds. It reports the p50 and p99 latency of single calls (in ms, to the
// µs) and the throughput of all writers together. open is called once; every run uses new keys,
// so the store may already hold documents. A store module's benchmark is one line:
//
//	func BenchmarkConditionalPatch(b *testing.B) {
//		storetest.BenchmarkConditionalPatch(b, func(b *testing.B) store.Store { return openTest(b) })
//	}
//
// run as `go test -run '^$' -bench ConditionalPatch ./...` in the module.
func BenchmarkConditionalPatch(b *testing.B, open func(b *testing.B) store.Store) {
	s := open(b)
	for _, writers := range []int{1, 16} {
		b.Run(fmt.Sprintf("writers=%d", writers), func(b *testing.B) { benchPatch(b, s, writers) })
	}
}

// benchRun numbers the runs of benchPatch, which b.Run repeats while it sizes b.N, so that each
// run's keys are new.
var benchRun atomic.Int64

func benchPatch(b *testing.B, s store.Store, writers int) {
	ctx := b.Context()
	run := benchRun.Add(1)
	keys := make([]string, writers)
	for i := range keys {
		keys[i] = fmt.Sprintf("bench-%d-%d-%d-%d", writers, i, run, time.Now().UnixNano())
		if err := s.Create(ctx, keys[i], map[string]any{"rev": 0, "holder": "bench"}); err != nil {
			b.Fatal(err)
		}
	}
	lat := make([][]time.Duration, writers)
	var next atomic.Int64
	var failed atomic.Pointer[error]
	b.ResetTimer()
	start := time.Now()
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for rev := 0; next.Add(1) <= int64(b.N); rev++ {
				t0 := time.Now()
				err := s.Patch(ctx, keys[w], map[string]any{"rev": rev + 1, "renewedAt": t0.UnixMilli()},
					&store.Condition{Field: "rev", Value: rev})
				lat[w] = append(lat[w], time.Since(t0))
				if err != nil {
					failed.CompareAndSwap(nil, &err)
					next.Store(int64(b.N)) // the other writers stop too
					return
				}
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	if err := failed.Load(); err != nil {
		b.Fatal(*err)
	}
	all := slices.Concat(lat...)
	if len(all) == 0 {
		return
	}
	slices.Sort(all)
	pct := func(p float64) float64 {
		return float64(all[min(len(all)-1, int(p*float64(len(all))))].Microseconds()) / 1000
	}
	b.ReportMetric(pct(0.50), "p50-ms")
	b.ReportMetric(pct(0.99), "p99-ms")
	b.ReportMetric(float64(len(all))/elapsed.Seconds(), "patches/s")
}
