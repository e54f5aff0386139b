// Package pace holds the rhythms of the election's loops: a step every R, start to start,
// and a wait that a context cuts short.
package pace

import (
	"context"
	"time"
)

// Every calls step at once, then r after the start of its last call, start to start (a step
// that takes long delays the next, never overlaps it), until ctx ends or step returns false:
// the rhythm of the health check (U1) and of the partitions' planner (D6).
func Every(ctx context.Context, r time.Duration, step func() bool) {
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		start := time.Now()
		if !step() {
			return
		}
		t.Reset(time.Until(start.Add(r)))
	}
}

// Sleep waits d, and reports false when ctx ended first.
func Sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
