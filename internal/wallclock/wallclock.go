// Package wallclock is the offset this process adds to the wall clock readings the election
// writes (the term's floor, the times in a record). It is zero but in the workers of the fault
// campaign, which jump their wall clock by it to show that a wall clock that jumps changes no
// decision, without touching the machine's clock.
package wallclock

import (
	"sync/atomic"
	"time"
)

var offset atomic.Int64

// Offset returns the offset in force.
func Offset() time.Duration { return time.Duration(offset.Load()) }

// Set puts d in force: every wall reading taken from now on is d later (earlier when d < 0).
func Set(d time.Duration) { offset.Store(int64(d)) }

// Reading returns the wall clock reading of now with the offset in force, without its
// monotonic reading: the one place the election's wall times come from (the term's floor, the
// times a record holds), so that a jump of the offset moves every Elector's and every
// partition's alike (M2). Decisions compare monotonic readings instead.
func Reading(now time.Time) time.Time { return now.Round(0).Add(Offset()) }
