package nats

import (
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/leasehold/leasehold/store"
)

// BenchmarkConditionalPatch measures a lease renewal's write: a Patch conditioned on the
// document's current revision, by 1 and by 16 concurrent writers (each on its own key, so every
// write succeeds). It reports the p50 and p99 latency and the throughput of all writers.
func BenchmarkConditionalPatch(b *testing.B) {
	for _, writers := range []int{1, 16} {
		b.Run(fmt.Sprintf("writers=%d", writers), func(b *testing.B) {
			benchConditionalPatch(b, openTest(b), writers)
		})
	}
}

func benchConditionalPatch(b *testing.B, s store.Store, writers int) {
	ctx := b.Context()
	for w := range writers {
		if err := s.Create(ctx, fmt.Sprintf("bench:%d", w), map[string]any{"rev": 0, "holder": "me"}); err != nil {
			b.Fatal(err)
		}
	}
	var next atomic.Int64
	lat := make([][]time.Duration, writers)
	var wg sync.WaitGroup
	b.ResetTimer()
	start := time.Now()
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			key := fmt.Sprintf("bench:%d", w)
			for rev := 0; next.Add(1) <= int64(b.N); rev++ {
				t0 := time.Now()
				err := s.Patch(ctx, key, map[string]any{"rev": rev + 1, "renewedAt": t0.UnixNano()}, &store.Condition{Field: "rev", Value: rev})
				lat[w] = append(lat[w], time.Since(t0))
				if err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	all := slices.Concat(lat...)
	slices.Sort(all)
	if len(all) == 0 {
		return
	}
	b.ReportMetric(float64(all[len(all)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(all[len(all)*99/100].Microseconds())/1000, "p99-ms")
	b.ReportMetric(float64(len(all))/elapsed.Seconds(), "patches/s")
}
