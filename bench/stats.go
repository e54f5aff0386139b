package main

import (
	"slices"
	"time"
)

// quantile returns the q-quantile of sorted (nearest rank), or 0 for none.
func quantile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(q*float64(len(sorted))+0.999999) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

// Dist summarizes latencies: p50, p90, p99 and max over N trials.
type Dist struct {
	N                  int
	P50, P90, P99, Max time.Duration
	Samples            []time.Duration // sorted
}

func summarize(samples []time.Duration) Dist {
	s := slices.Clone(samples)
	slices.Sort(s)
	d := Dist{N: len(s), Samples: s}
	if len(s) > 0 {
		d.P50, d.P90, d.P99, d.Max = quantile(s, 0.5), quantile(s, 0.9), quantile(s, 0.99), s[len(s)-1]
	}
	return d
}
