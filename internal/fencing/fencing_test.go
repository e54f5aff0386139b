package fencing

import (
	"testing"
	"time"
)

func TestFloor(t *testing.T) {
	for _, c := range []struct {
		now  time.Time
		want uint64
	}{
		{time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC), 1}, // synctest's fake clock
		{Epoch, 1},
		{Epoch.Add(999 * time.Millisecond), 1},
		{Epoch.Add(2 * time.Second), 2},
		{Epoch.Add(90*time.Second + 500*time.Millisecond), 90},
		{time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC), 92102400},
		{time.Date(2092, 1, 1, 0, 0, 0, 0, time.UTC), 2145916800}, // still an int32
	} {
		if got := Floor(c.now); got != c.want {
			t.Errorf("Floor(%v) = %d, want %d", c.now, got, c.want)
		}
	}
	if f := Floor(time.Date(2092, 1, 1, 0, 0, 0, 0, time.UTC)); f > 1<<31-1 {
		t.Errorf("Floor in 2092 = %d, does not fit an int32", f)
	}
}

func TestNext(t *testing.T) {
	past := time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)
	now := Epoch.Add(1000 * time.Second)
	for _, c := range []struct {
		prev, seen uint64
		now        time.Time
		want       uint64
	}{
		{0, 0, past, 1},
		{1, 0, past, 2},
		{1, 7, past, 8},
		{9, 3, past, 10},
		{0, 0, now, 1000},
		{5, 5, now, 1000},
		{1000, 0, now, 1001},
		{0, 2000, now, 2001},
	} {
		if got := Next(c.prev, c.seen, c.now); got != c.want {
			t.Errorf("Next(%d, %d, %v) = %d, want %d", c.prev, c.seen, c.now, got, c.want)
		}
	}
}
