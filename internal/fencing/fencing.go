// Package fencing computes the terms of a lease: fencing tokens that never repeat, even after
// the record that held the last one is lost.
//
// A term is the larger of the terms known plus one and a floor read from the wall clock, as a
// hybrid logical clock does: the whole seconds elapsed since Epoch. A record lost with its term
// (a store that restarted empty, a deleted row) is created again above every term it held as
// long as the writer's clock is not behind the clocks of those who wrote them by more than
// the time elapsed since, and the lease changed hands less than once a second on average
// before. Seconds keep the terms within an int32 until 2092.
package fencing

import "time"

// Epoch is the instant the floor counts from: 2024-01-01T00:00:00Z.
var Epoch = time.Date(2024, time.January, 1, 0, 0, 0, 0, time.UTC)

// Floor returns the lowest term a new leadership may take at now: the whole seconds elapsed
// since Epoch, and at least 1 (a clock before Epoch gives 1).
func Floor(now time.Time) uint64 {
	s := now.Sub(Epoch) / time.Second
	if s < 1 {
		return 1
	}
	return uint64(s)
}

// Next returns the term of a new leadership: above prev (the term of the record it writes
// on, 0 when there is none) and above seen (the highest term the writer knows of), and at
// least Floor(now).
func Next(prev, seen uint64, now time.Time) uint64 {
	return max(prev+1, seen+1, Floor(now))
}

// Precision is the finest time every Lock keeps: a Kubernetes MicroTime holds microseconds,
// the store Lock's RFC 3339 times nanoseconds.
const Precision = time.Microsecond

// After returns now, at the precision every Lock keeps (Precision), and strictly after prev.
// A writer that stamps each write with After(its wall clock, the time of the write it
// replaces) orders its records by (Term, time) even when its clock has not moved between two
// writes (E9), or jumped back, or runs behind the previous writer's (M2).
func After(now, prev time.Time) time.Time {
	t := now.Round(0).UTC().Truncate(Precision)
	if p := prev.UTC().Truncate(Precision); !t.After(p) {
		t = p.Add(Precision)
	}
	return t
}
