package campaign

import (
	"testing"
	"time"
)

// TestTiming checks the timing a campaign runs with over a store that takes no R below its
// own least: R raised to it, L by as much and to at least 2R; other stores unchanged.
func TestTiming(t *testing.T) {
	const ms = time.Millisecond
	for _, c := range []struct {
		backend      string
		l, r         time.Duration
		wantL, wantR time.Duration
	}{
		{"file", time.Second, 250 * ms, time.Second, 250 * ms},
		{"gcs", time.Second, 250 * ms, 2 * time.Second, time.Second}, // the CI mode's timing
		{"gcs", 15 * time.Second, 5 * time.Second, 15 * time.Second, 5 * time.Second},
		{"gcs", 4 * time.Second, 500 * ms, 4500 * ms, time.Second},
		{"gcs", time.Second, 0, time.Second, 0}, // left for Options to refuse
	} {
		l, r := Timing(c.backend, c.l, c.r)
		if l != c.wantL || r != c.wantR {
			t.Errorf("Timing(%q, %v, %v) = %v, %v; want %v, %v", c.backend, c.l, c.r, l, r, c.wantL, c.wantR)
		}
	}
}
