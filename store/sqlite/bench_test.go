package sqlite

import (
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/leasehold/leasehold/store"
)

// BenchmarkConditionalPatch measures a conditional Patch (the Elector's renewal: set the record,
// on condition that its revision is the one last read) with 1 and 16 concurrent writers, each on
// a key of its own so that every call succeeds. It reports the latency percentiles of single
// calls and the throughput of all writers together.
//
//	go test -run '^$' -bench ConditionalPatch -benchtime 3s ./store/sqlite
func BenchmarkConditionalPatch(b *testing.B) {
	for _, params := range []string{"", "synchronous=NORMAL", "max_open_conns=4"} {
		s := openTest(b, params)
		name := params
		if name == "" {
			name = "default"
		}
		for _, writers := range []int{1, 16} {
			b.Run(fmt.Sprintf("%s/writers=%d", name, writers), func(b *testing.B) { benchPatch(b, s, writers) })
		}
	}
}

func benchPatch(b *testing.B, s store.Store, writers int) {
	ctx := b.Context()
	keys := make([]string, writers)
	for i := range keys {
		keys[i] = fmt.Sprintf("bench-%d-%d-%d", writers, i, time.Now().UnixNano())
		if err := s.Create(ctx, keys[i], map[string]any{"rev": 0, "holder": "bench"}); err != nil {
			b.Fatal(err)
		}
	}
	lat := make([][]time.Duration, writers)
	var next atomic.Int64
	var failed atomic.Value
	b.ResetTimer()
	start := time.Now()
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			rev := 0
			for next.Add(1) <= int64(b.N) {
				t0 := time.Now()
				err := s.Patch(ctx, keys[w], map[string]any{"rev": rev + 1, "renewedAt": t0.UnixMilli()},
					&store.Condition{Field: "rev", Value: rev})
				lat[w] = append(lat[w], time.Since(t0))
				if err != nil {
					failed.Store(err)
					return
				}
				rev++
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	if err, ok := failed.Load().(error); ok {
		b.Fatal(err)
	}
	all := slices.Concat(lat...)
	slices.Sort(all)
	pct := func(p float64) float64 {
		return float64(all[min(len(all)-1, int(p*float64(len(all))))].Microseconds())
	}
	b.ReportMetric(pct(0.50), "p50-µs")
	b.ReportMetric(pct(0.99), "p99-µs")
	b.ReportMetric(float64(len(all))/elapsed.Seconds(), "patches/s")
}
