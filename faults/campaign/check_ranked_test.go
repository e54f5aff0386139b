package campaign

import (
	"strings"
	"testing"
	"time"

	"github.com/leasehold/leasehold/internal/proctest"
)

func rankedOptions() Options {
	o := testOptions()
	o.Ranked, o.StabilityWindow, o.HealthFailures = true, 2*time.Second, 2
	return o
}

// The bounds come from the rules: U2's failed checks, then a follower's poll, the holder's
// renewal and the asker's poll, each R; Q2's window, then the holder's renewal and the asker's
// poll.
func TestCheckRankedBounds(t *testing.T) {
	o := rankedOptions()
	if got, want := healthBound(o), 2*250*time.Millisecond+3*250*time.Millisecond+DefaultSlack; got != want {
		t.Errorf("healthBound = %v, want %v", got, want)
	}
	if got, want := preemptBound(o), 2*time.Second+2*250*time.Millisecond+DefaultSlack; got != want {
		t.Errorf("preemptBound = %v, want %v", got, want)
	}
}

// A leader whose check fails must be replaced by another instance within healthBound of the
// instant it started failing (U2): in time, no violation and the handover measured; late, a
// violation; never, a violation once the bound has passed before the end of the faults; a
// leader that had lost the lease before is owed nothing.
func TestCheckRankedHealthLeader(t *testing.T) {
	o := rankedOptions()
	bound := healthBound(o) / time.Millisecond // 1350
	fault := Fault{N: 1, Kind: HealthLeader, Target: "w3.1", Slot: 3, Start: 1000 * ms1, End: 3000 * ms1}
	for _, tc := range []struct {
		name     string
		lines    []proctest.Line
		end      int64 // of the faults, ms
		took     time.Duration
		violated string // in the violations; "" for none
	}{
		{"in time", linesOf(iv("w3.1", 1, 0, 1600), iv("w2.1", 2, 2000, 5000)), 6000, time.Second, ""},
		{"late", linesOf(iv("w3.1", 1, 0, 1600), iv("w2.1", 2, 1000+int64(bound)+1, 5000)), 6000, healthBound(o) + time.Millisecond, "beyond the bound"},
		{"never", linesOf(iv("w3.1", 1, 0, 6000)), 6000, 5 * time.Second, "no handover"},
		{"never, faults ended before the bound", linesOf(iv("w3.1", 1, 0, 2000)), 2000, 0, ""},
		{"not leading then", linesOf(iv("w3.1", 1, 0, 900), iv("w2.1", 2, 5000, 6000)), 6000, 0, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs, vs := checkRanked(o, tc.lines, nil, []Fault{fault}, tc.end*ms1)
			v := strings.Join(vs, "\n")
			if (tc.violated == "") != (v == "") || !strings.Contains(v, tc.violated) {
				t.Errorf("violations %q, want one about %q", v, tc.violated)
			}
			if tc.violated != "" && !strings.Contains(v, "U2") && tc.violated != "no handover" {
				t.Errorf("violation %q does not cite U2", v)
			}
			tk := fs[0].Takeover
			switch {
			case tc.took == 0 && tk != nil:
				t.Errorf("takeover %+v, want none", tk)
			case tc.took != 0 && (tk == nil || tk.Took != tc.took || tk.Bound != healthBound(o)):
				t.Errorf("takeover %+v, want %v within %v", tk, tc.took, healthBound(o))
			}
		})
	}
}

// A joiner of the highest priority must lead within preemptBound of its start (Q2, Q3), and
// must not ask to lead before its stability window has passed (Q2).
func TestCheckRankedPreempt(t *testing.T) {
	o := rankedOptions()
	fault := Fault{N: 1, Kind: Preempt, Target: "w3.1", Joiner: "w3.2", Via: "w2.1", Slot: 3, Start: 500 * ms1, Spawned: 900 * ms1, End: 1000 * ms1}
	lead := func(at int64) []proctest.Line {
		return linesOf(iv("w2.1", 2, 600, at), iv("w3.2", 3, at, at+1000))
	}
	ask := func(at int64) []askLine { return []askLine{{Instance: "w3.2", T: at * ms1, Holder: "w2.1"}} }
	for _, tc := range []struct {
		name     string
		lines    []proctest.Line
		asks     []askLine
		violated string
	}{
		{"in time", lead(3200), ask(3000), ""},
		{"late", lead(1000 + int64(preemptBound(o)/time.Millisecond) + 1), ask(3000), "beyond the bound"},
		{"asked within its window", lead(2200), ask(2000), "within its stability window"},
		{"asked just within its window", lead(3000), ask(2899), "within its stability window"},
		{"asked once its window passed", lead(3000), ask(2900), ""},
		{"never", linesOf(iv("w2.1", 2, 600, 9000)), nil, "no preemption"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs, vs := checkRanked(o, tc.lines, tc.asks, []Fault{fault}, 9000*ms1)
			v := strings.Join(vs, "\n")
			if (tc.violated == "") != (v == "") || !strings.Contains(v, tc.violated) {
				t.Errorf("violations %q, want one about %q", v, tc.violated)
			}
			if tk := fs[0].Takeover; tk == nil || tk.Bound != preemptBound(o) || tk.From != "w2.1" {
				t.Errorf("takeover %+v, want one from w2.1 bounded by %v", tk, preemptBound(o))
			}
		})
	}
	if tk := preemption(o, lead(3200), fault); tk.To != "w3.2" || tk.Took != 2200*time.Millisecond {
		t.Errorf("preemption = %+v, want w3.2 after 2.2s", tk)
	}
}

// A candidate whose check fails asks nobody to hand over (Q2, U1): from R after the check
// started failing (its first failed run comes within R) until it passes again.
func TestCheckRankedNoAskWhileFailing(t *testing.T) {
	o := rankedOptions()
	lines := linesOf(iv("w3.1", 1, 0, 9000))
	for _, kind := range []Kind{HealthFollower, HealthLeader} {
		target := "w1.1"
		if kind == HealthLeader {
			target = "w3.1"
			lines = linesOf(iv("w3.1", 1, 0, 1200), iv("w2.1", 2, 1300, 9000))
		}
		fault := Fault{N: 4, Kind: kind, Target: target, Start: 1000 * ms1, End: 3000 * ms1}
		for _, tc := range []struct {
			at      int64
			violate bool
		}{{1100, false}, {1000 + 250 + 100 + 1, true}, {2999, true}, {3100, false}} {
			_, vs := checkRanked(o, lines, []askLine{{Instance: target, T: tc.at * ms1, Holder: "w2.1"}}, []Fault{fault}, 9000*ms1)
			v := strings.Join(vs, "\n")
			if got := strings.Contains(v, "while its own check fails"); got != tc.violate {
				t.Errorf("%s: an ask at %dms: violations %q, want one: %v", kind, tc.at, v, tc.violate)
			}
		}
	}
}

// A request to hand over is a new revision of the holder's record (R1): a crashed leader's
// takeover is timed from the latest one on its record before the takeover (E6).
func TestLastAsk(t *testing.T) {
	asks := []askLine{
		{Instance: "w3.1", T: 100, Holder: "w1.1"},
		{Instance: "w3.1", T: 300, Holder: "w1.1"},
		{Instance: "w2.1", T: 400, Holder: "w1.1"},
		{Instance: "w3.1", T: 350, Holder: "w2.1"}, // another holder's record
		{Instance: "w3.1", T: 900, Holder: "w1.1"}, // after the takeover
	}
	if at, ok := lastAsk(asks, "w1.1", 200, 800); !ok || at != 400 {
		t.Errorf("lastAsk = %d, %v; want 400", at, ok)
	}
	if _, ok := lastAsk(asks, "w1.1", 400, 800); ok {
		t.Errorf("lastAsk found a request after 400 before 800")
	}
}

func TestHealthAndAskLinesRoundTrip(t *testing.T) {
	for _, l := range []healthLine{{"w1.2", 5, true}, {"w3.1", 6, false}} {
		if got, ok := parseHealthLine(l.String()); !ok || got != l {
			t.Errorf("parseHealthLine(%q) = %+v, %v", l.String(), got, ok)
		}
	}
	a := askLine{Instance: "w3.2", T: 7, Holder: "w2.1"}
	if got, ok := parseAskLine(a.String()); !ok || got != a {
		t.Errorf("parseAskLine(%q) = %+v, %v", a.String(), got, ok)
	}
	for _, s := range []string{"health w1 5 sick", "health w1 x ok", "ask w1 5", "clock w1 5 1h"} {
		_, h := parseHealthLine(s)
		_, a := parseAskLine(s)
		if h || a {
			t.Errorf("%q parsed as a health (%v) or ask (%v) line", s, h, a)
		}
	}
}

// A control file's "health fail" and "health ok" set the worker's check; anything else after
// "health " is an error naming the text, as is a health text for a worker without a check.
func TestApplyHealth(t *testing.T) {
	h := &healthSwitch{}
	if ok, err := applyHealth("w1.1", "health fail", h); !ok || err != nil || h.check(t.Context()) == nil {
		t.Fatalf("applyHealth(fail) = %v, %v; check %v", ok, err, h.check(t.Context()))
	}
	if ok, err := applyHealth("w1.1", "health ok", h); !ok || err != nil || h.check(t.Context()) != nil {
		t.Fatalf("applyHealth(ok) = %v, %v; check %v", ok, err, h.check(t.Context()))
	}
	if ok, err := applyHealth("w1.1", "health sick", h); !ok || err == nil || !strings.Contains(err.Error(), "health sick") {
		t.Errorf("applyHealth(sick) = %v, %v; want an error naming it", ok, err)
	}
	if ok, err := applyHealth("w1.1", "health fail", nil); !ok || err == nil {
		t.Errorf("applyHealth without a check = %v, %v; want an error", ok, err)
	}
	if ok, err := applyHealth("w1.1", "clock 1h", h); ok || err != nil {
		t.Errorf("applyHealth(clock) = %v, %v; want not a health text", ok, err)
	}
}

// While every candidate's check fails the leader keeps leading (U3): a handover on a request,
// or a request at all, between the leader's failure and its recovery is a violation.
func TestCheckRankedHealthAll(t *testing.T) {
	o := rankedOptions()
	fault := Fault{N: 2, Kind: HealthAll, Target: "w3.1", Slot: 3, Start: 1000 * ms1, End: 3000 * ms1}
	kept := linesOf(iv("w3.1", 1, 0, 5000))
	handed := []proctest.Line{
		{Instance: "w3.1", Kind: proctest.KindLead, Term: 1, T: 0, Deadline: 5000 * ms1},
		{Instance: "w3.1", Kind: proctest.KindUnlead, Term: 1, T: 2000 * ms1, Reason: "resign"},
		{Instance: "w2.1", Kind: proctest.KindLead, Term: 2, T: 2010 * ms1, Deadline: 5000 * ms1},
	}
	for _, tc := range []struct {
		name     string
		lines    []proctest.Line
		asks     []askLine
		violated string
	}{
		{"kept", kept, nil, ""},
		{"asked after the recovery", kept, []askLine{{Instance: "w2.1", T: 3500 * ms1, Holder: "w3.1"}}, ""},
		{"asked", kept, []askLine{{Instance: "w2.1", T: 2000 * ms1, Holder: "w3.1"}}, "while every check failed"},
		{"handed over", handed, nil, "U3"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, vs := checkRanked(o, tc.lines, tc.asks, []Fault{fault}, 9000*ms1)
			v := strings.Join(vs, "\n")
			if (tc.violated == "") != (v == "") || !strings.Contains(v, tc.violated) {
				t.Errorf("violations %q, want one about %q", v, tc.violated)
			}
		})
	}
}
