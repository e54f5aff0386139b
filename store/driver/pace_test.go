package driver

import (
	"testing"
	"testing/synctest"
	"time"
)

func TestShortest(t *testing.T) {
	for _, tc := range []struct {
		asked map[int]time.Duration
		want  time.Duration
	}{
		{nil, 0},
		{map[int]time.Duration{1: 0}, 0},
		{map[int]time.Duration{1: 3 * time.Second, 2: time.Second, 3: 0}, time.Second},
	} {
		if got := Shortest(tc.asked); got != tc.want {
			t.Errorf("Shortest(%v) = %v, want %v", tc.asked, got, tc.want)
		}
	}
}

// A Pace ticks at the interval last given, from the moment it was given, and never at 0.
func TestPace(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var p Pace
		defer p.Stop()
		if p.C(0) != nil {
			t.Fatal("a Pace of interval 0 has a channel")
		}
		start := time.Now()
		at := <-p.C(time.Second)
		if d := at.Sub(start); d != time.Second {
			t.Fatalf("first tick after %v, want 1s", d)
		}
		c := p.C(time.Second) // the same interval keeps the ticker
		if at = <-c; at.Sub(start) != 2*time.Second {
			t.Fatalf("second tick at %v, want 2s", at.Sub(start))
		}
		time.Sleep(time.Second / 2)
		changed := time.Now()
		if at = <-p.C(3 * time.Second); at.Sub(changed) != 3*time.Second {
			t.Fatalf("tick %v after the change to 3s", at.Sub(changed))
		}
		if p.C(0) != nil {
			t.Fatal("a Pace set back to 0 has a channel")
		}
	})
}
