package campaign

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/leasehold/leasehold/internal/proctest"
)

const ms1 = int64(time.Millisecond)

func iv(id string, term uint64, start, end int64) proctest.Interval {
	return proctest.Interval{Instance: id, Term: term, Start: start * ms1, End: end * ms1}
}

func testOptions() Options {
	return Options{Backend: "file", Instances: 3, LeaseDuration: time.Second, RenewInterval: 250 * time.Millisecond, Slack: DefaultSlack}
}

// linesOf writes the intervals as a worker's log would: a lead line with the deadline, and an
// unlead line unless the interval is open.
func linesOf(ivs ...proctest.Interval) []proctest.Line {
	var out []proctest.Line
	for _, v := range ivs {
		out = append(out, proctest.Line{Instance: v.Instance, Kind: proctest.KindLead, Term: v.Term, T: v.Start, Deadline: v.End})
		if !v.Open {
			out = append(out, proctest.Line{Instance: v.Instance, Kind: proctest.KindUnlead, Term: v.Term, T: v.End, Reason: "stop"})
		}
	}
	return out
}

// The checks must catch what they are there to catch (E2, E5, W7, W8): two leaders at once is
// a violation, unless a SIGSTOP pause of one of them explains a late deadline in its lines.
func TestOverlapsAreViolationsOutsidePauses(t *testing.T) {
	o := testOptions()
	lines := linesOf(iv("w1.1", 1, 0, 1000), iv("w2.1", 2, 900, 2000))
	rep := analyze(o, false, lines, nil, nil, 0, 3000*ms1, 3000*ms1)
	if len(rep.Overlaps) != 1 || rep.Overlaps[0].InPause || rep.Overlaps[0].Length != 100*time.Millisecond {
		t.Fatalf("overlaps = %+v, want one of 100ms outside pauses", rep.Overlaps)
	}
	if !rep.Failed() || !strings.Contains(strings.Join(rep.Violations, "\n"), "two leaders at once") {
		t.Errorf("violations = %q, want two leaders at once", rep.Violations)
	}

	pause := []Fault{{N: 1, Kind: PauseLeader, Target: "w1.1", Start: 500 * ms1, End: 2500 * ms1}}
	rep = analyze(o, false, lines, nil, pause, 0, 3000*ms1, 3000*ms1)
	if len(rep.Overlaps) != 1 || !rep.Overlaps[0].InPause || rep.Failed() {
		t.Errorf("with w1.1 paused: overlaps %+v, violations %q; want one in a pause, no violation", rep.Overlaps, rep.Violations)
	}
	// A pause of an instance that is neither of the two does not excuse the overlap.
	other := []Fault{{N: 1, Kind: PauseFollower, Target: "w3.1", Start: 500 * ms1, End: 2500 * ms1}}
	if rep = analyze(o, false, lines, nil, other, 0, 3000*ms1, 3000*ms1); !rep.Failed() {
		t.Errorf("with w3.1 paused: no violation for an overlap of w1.1 and w2.1")
	}
}

func TestTermMustGrowWithEachLeader(t *testing.T) {
	rep := analyze(testOptions(), false, linesOf(iv("w1.1", 2, 0, 100), iv("w2.1", 2, 200, 300)), nil, nil, 0, ms1*400, ms1*400)
	if !strings.Contains(strings.Join(rep.Violations, "\n"), "not the term") {
		t.Errorf("violations = %q, want the leader changed but not the term (W8)", rep.Violations)
	}
}

// Fencing (W8) and acting only while leading (W7): an action accepted with a lower term than
// one accepted before, or sent outside the sender's leadership, is a violation; a rejected
// stale action is counted; so is an old term's action accepted before the new leader acted.
func TestActionChecks(t *testing.T) {
	lines := linesOf(iv("w1.1", 1, 0, 1000), iv("w2.1", 2, 1500, 3000))
	for _, tc := range []struct {
		name string
		acts []Action
		want ActionStats
		rule string // in the violations; "" for none
	}{
		{"in order", []Action{
			{Instance: "w1.1", Term: 1, Sent: 10 * ms1, Recv: 11 * ms1, Accepted: true},
			{Instance: "w2.1", Term: 2, Sent: 1600 * ms1, Recv: 1601 * ms1, Accepted: true},
		}, ActionStats{Total: 2, Accepted: 2}, ""},
		{"stale rejected", []Action{
			{Instance: "w2.1", Term: 2, Sent: 1600 * ms1, Recv: 1601 * ms1, Accepted: true},
			{Instance: "w1.1", Term: 1, Sent: 990 * ms1, Recv: 1700 * ms1, Accepted: false},
		}, ActionStats{Total: 2, Accepted: 1, StaleRejected: 1}, ""},
		{"late but accepted: the new leader had not acted", []Action{
			{Instance: "w1.1", Term: 1, Sent: 990 * ms1, Recv: 1550 * ms1, Accepted: true},
			{Instance: "w2.1", Term: 2, Sent: 1600 * ms1, Recv: 1601 * ms1, Accepted: true},
		}, ActionStats{Total: 2, Accepted: 2, LateAccepted: 1}, ""},
		{"stale accepted", []Action{
			{Instance: "w2.1", Term: 2, Sent: 1600 * ms1, Recv: 1601 * ms1, Accepted: true},
			{Instance: "w1.1", Term: 1, Sent: 990 * ms1, Recv: 1700 * ms1, Accepted: true},
		}, ActionStats{Total: 2, Accepted: 2, AcceptedStale: 1, LateAccepted: 1}, "fencing"},
		{"sent after the deadline", []Action{
			{Instance: "w1.1", Term: 1, Sent: 1100 * ms1, Recv: 1101 * ms1, Accepted: true},
		}, ActionStats{Total: 1, Accepted: 1, OutsideLeadership: 1}, "outside"},
		{"sent with another leader's term", []Action{
			{Instance: "w1.1", Term: 2, Sent: 10 * ms1, Recv: 11 * ms1, Accepted: true},
		}, ActionStats{Total: 1, Accepted: 1, OutsideLeadership: 1}, "outside"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rep := analyze(testOptions(), false, lines, tc.acts, nil, 0, 4000*ms1, 4000*ms1)
			if rep.Actions != tc.want {
				t.Errorf("stats = %+v, want %+v", rep.Actions, tc.want)
			}
			v := strings.Join(rep.Violations, "\n")
			if (tc.rule == "") != (v == "") || !strings.Contains(v, tc.rule) {
				t.Errorf("violations = %q, want one about %q", v, tc.rule)
			}
		})
	}
}

func TestLongestLeaderlessLeavesOutOutages(t *testing.T) {
	ivs := []proctest.Interval{iv("w1.1", 1, 0, 1000), iv("w2.1", 2, 1400, 2000), iv("w3.1", 3, 5000, 6000)}
	faults := []Fault{
		{N: 1, Kind: KillLeader, Target: "w1.1", Start: 900 * ms1, End: 900 * ms1},
		{N: 2, Kind: Outage, Start: 2100 * ms1, End: 3500 * ms1},
	}
	d, at, after := longestLeaderless(ivs, faults, 7000*ms1)
	if d != 400*time.Millisecond || at != 1000*ms1 || !strings.Contains(after, "fault 1") {
		t.Errorf("longestLeaderless = %v at %d after %q; want 400ms at 1s after fault 1 (the 3s gap overlaps the outage)", d, at, after)
	}
}

func TestTakeoverOver(t *testing.T) {
	for _, tc := range []struct {
		t    *Takeover
		over bool
	}{
		{nil, false},
		{&Takeover{Took: time.Second}, false}, // not bounded
		{&Takeover{Took: time.Second, Bound: time.Second}, false},
		{&Takeover{Took: time.Second + 1, Bound: time.Second}, true},
	} {
		if got := tc.t.Over(); got != tc.over {
			t.Errorf("%+v.Over() = %v, want %v", tc.t, got, tc.over)
		}
	}
}

// The fenced resource rejects a term lower than one it has seen (W8), accepts equal and higher
// ones, and records every action.
func TestResourceFences(t *testing.T) {
	r, err := startResource()
	if err != nil {
		t.Fatal(err)
	}
	defer r.close()
	post := func(id, term string) int {
		resp, err := http.Post("http://"+r.addr()+"/act?i="+id+"&t="+term+"&s=1", "text/plain", nil)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	for _, tc := range []struct {
		id, term string
		want     int
	}{{"a", "2", 200}, {"a", "2", 200}, {"b", "1", 409}, {"c", "3", 200}, {"a", "2", 409}, {"x", "bad", 400}} {
		if got := post(tc.id, tc.term); got != tc.want {
			t.Errorf("action of %s term %s: status %d, want %d", tc.id, tc.term, got, tc.want)
		}
	}
	acts := r.Actions()
	if len(acts) != 5 || acts[2].Accepted || !acts[3].Accepted || acts[4].Accepted {
		t.Errorf("actions recorded: %+v", acts)
	}
}

// The report and the timeline name what happened: the backend, every fault kind's row, the
// leaderships; the JSON carries the violations.
func TestReportFiles(t *testing.T) {
	rep := analyze(testOptions(), false, linesOf(iv("w1.1", 1, 0, 1000), iv("w2.1", 2, 900, 2000)), nil,
		[]Fault{{N: 1, Kind: KillLeader, Target: "w1.1", Slot: 1, Start: 800 * ms1, End: 810 * ms1,
			Takeover: &Takeover{From: "w1.1", To: "w2.1", Took: 1500 * time.Millisecond, Bound: 1350 * time.Millisecond}}},
		0, 2000*ms1, 2100*ms1)
	var md, svg bytes.Buffer
	if err := WriteMarkdown(&md, "cmd", []*Report{rep}, map[string]string{"file": "timeline-file.svg"}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"| kill-leader | 1 | 1 | 1500 ms", "overlaps outside pauses: **1**", "![timeline of file](timeline-file.svg)", "two leaders at once"} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("the Markdown report lacks %q:\n%s", want, md.String())
		}
	}
	if err := WriteSVG(&svg, rep); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"<svg", "instance 1", "instance 2", "fault 1: kill-leader", "w2.1 term 2", "two leaders for"} {
		if !strings.Contains(svg.String(), want) {
			t.Errorf("the SVG lacks %q", want)
		}
	}
	js, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	var back Report
	if err := json.Unmarshal(js, &back); err != nil || len(back.Violations) != len(rep.Violations) || len(back.Faults) != 1 {
		t.Errorf("JSON round trip: %v, %d violations, %d faults", err, len(back.Violations), len(back.Faults))
	}
}
