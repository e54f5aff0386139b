package proctest

import (
	"strings"
	"testing"
)

func TestLineRoundTrip(t *testing.T) {
	for _, l := range []Line{
		{Instance: "w1", Kind: KindLead, Term: 3, T: 1000, Deadline: 1400},
		{Instance: "w2", Kind: KindStopped, T: 5, Reason: "cluster: lease \"x\": stop: leader callbacks have not returned"},
		{Instance: "w3", Kind: KindUnlead, Term: 1, T: 7, Reason: "stop"},
	} {
		got, err := ParseLine(l.String())
		if err != nil || got != l {
			t.Errorf("ParseLine(%q) = %+v, %v; want %+v", l.String(), got, err, l)
		}
	}
	for _, bad := range []string{"", "w1 lead 1 2", "w1 lead x 2 3 -", "w1 jump 1 2 3 -"} {
		if _, err := ParseLine(bad); err == nil {
			t.Errorf("ParseLine(%q): no error", bad)
		}
	}
}

// lines parses a log written one line per string.
func lines(t *testing.T, log ...string) []Line {
	t.Helper()
	var out []Line
	for _, s := range log {
		l, err := ParseLine(s)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, l)
	}
	return out
}

// The checker must catch what it is there to catch (E2, E5, W7, W8): each log here breaks one
// rule, and one log breaks none.
func TestCheckExclusive(t *testing.T) {
	for _, tc := range []struct {
		name string
		log  []string
		want string // substring of the error; "" for none
	}{
		{"handover after a kill and a clean stop", []string{
			"w1 lead 1 100 500 -",
			"w1 renew 1 300 700 -", // w1 killed: leads until 700 at most
			"w2 lead 2 800 1200 -",
			"w2 unlead 2 900 0 stop", // ends at 900, before its deadline
			"w3 lead 3 950 1350 -",
		}, ""},
		{"a killed leader's deadline after the next lead", []string{
			"w1 lead 1 100 500 -",
			"w1 renew 1 300 700 -",
			"w2 lead 2 650 1050 -",
		}, "two leaders at once"},
		{"an unlead after the next lead", []string{
			"w1 lead 1 100 500 -",
			"w2 lead 2 200 600 -",
			"w1 unlead 1 300 0 stop",
		}, "two leaders at once"},
		{"a long interval hiding behind a short one", []string{
			"w1 lead 1 100 2000 -",
			"w2 lead 2 2100 2500 -",
			"w2 unlead 2 2200 0 stop",
			"w3 lead 3 1500 3000 -",
		}, "two leaders at once"},
		{"same term for a new leader", []string{
			"w1 lead 1 100 500 -",
			"w1 unlead 1 200 0 stop",
			"w2 lead 1 300 700 -",
		}, "not the term"},
		{"term going down", []string{
			"w1 lead 4 100 500 -",
			"w1 unlead 4 200 0 stop",
			"w2 lead 3 300 700 -",
		}, "term went down"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ivs, err := Intervals(lines(t, tc.log...))
			if err != nil {
				t.Fatal(err)
			}
			err = CheckExclusive(ivs)
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("CheckExclusive: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("CheckExclusive: %v, want an error with %q\n%s", err, tc.want, formatIntervals(ivs))
			}
		})
	}
}

func TestIntervalsEnds(t *testing.T) {
	ivs, err := Intervals(lines(t,
		"w1 lead 1 100 500 -",
		"w1 renew 1 300 700 -",
		"w1 unlead 1 800 0 deadline", // noticed late: IsLeader was false from 700 (W7)
		"w2 lead 2 1000 1400 -",      // never unleads: killed
	))
	if err != nil {
		t.Fatal(err)
	}
	want := []Interval{
		{Instance: "w1", Term: 1, Start: 100, End: 700},
		{Instance: "w2", Term: 2, Start: 1000, End: 1400, Open: true},
	}
	if len(ivs) != len(want) {
		t.Fatalf("Intervals = %v, want %v", ivs, want)
	}
	for i := range want {
		if ivs[i] != want[i] {
			t.Errorf("interval %d = %v, want %v", i, ivs[i], want[i])
		}
	}
}

func TestIntervalsBadLogs(t *testing.T) {
	for _, log := range [][]string{
		{"w1 renew 1 100 500 -"},
		{"w1 unlead 1 100 0 stop"},
		{"w1 lead 1 100 500 -", "w1 lead 2 200 600 -"},
		{"w1 lead 1 100 500 -", "w1 renew 2 200 600 -"},
		{"w1 ready 0 100 0 -"},
	} {
		if _, err := Intervals(lines(t, log...)); err == nil {
			t.Errorf("Intervals(%q): no error", log)
		}
	}
}
