package campaign

import (
	"testing"
	"time"

	"github.com/leasehold/leasehold/internal/wallclock"
)

func TestClockLineRoundTrip(t *testing.T) {
	for _, d := range []time.Duration{time.Hour, -time.Hour, 0} {
		l := clockLine{Instance: "w1.2", T: 1234, Offset: d}
		got, ok := parseClockLine(l.String())
		if !ok || got != l {
			t.Errorf("parseClockLine(%q) = %+v, %v; want %+v", l.String(), got, ok, l)
		}
	}
	for _, s := range []string{"clock w1 12", "clock w1 x 1h", "clock w1 12 1hour", "watch w1 12 pass"} {
		if _, ok := parseClockLine(s); ok {
			t.Errorf("parseClockLine(%q) accepted", s)
		}
	}
}

// A control file's "clock OFFSET" is put in force in the process's wallclock; a watch fault's
// text is left to the watch faults; a bad offset is an error naming the text.
func TestApplyClock(t *testing.T) {
	t.Cleanup(func() { wallclock.Set(0) })
	if ok, err := applyClock("w1.1", "clock -1h0m0s"); !ok || err != nil || wallclock.Offset() != -time.Hour {
		t.Fatalf("applyClock(clock -1h) = %v, %v, offset %v; want true, nil, -1h", ok, err, wallclock.Offset())
	}
	if ok, err := applyClock("w1.1", "drop"); ok || err != nil || wallclock.Offset() != -time.Hour {
		t.Fatalf("applyClock(drop) = %v, %v, offset %v; want false, nil, the offset kept", ok, err, wallclock.Offset())
	}
	if ok, err := applyClock("w1.1", "clock soon"); !ok || err == nil {
		t.Fatalf("applyClock(clock soon) = %v, %v; want true and an error", ok, err)
	}
}
