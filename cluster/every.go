package cluster

import (
	"context"
	"time"
)

// every calls step at once, then r after the start of its last call, start to start (a step
// that takes long delays the next, never overlaps it), until ctx ends or step returns false:
// the rhythm of the health check (U1) and of the partitions' planner (D6).
func every(ctx context.Context, r time.Duration, step func() bool) {
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

// sleepCtx waits d, and reports false when ctx ended first.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
