package campaign

import (
	"cmp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/leasehold/leasehold/internal/proctest"
)

// checkPartitions holds each partition to the lease's rules on its own: two owners of one
// partition at once, or an owner change without a new term, are violations naming the
// partition; owners of different partitions at once, and a partition with no log, are not.
func TestCheckPartitions(t *testing.T) {
	l := testOptions().LeaseDuration
	good := [][]proctest.Line{
		linesOf(iv("w1.1", 1, 0, 500), iv("w2.1", 2, 600, 900)),
		linesOf(iv("w2.1", 1, 0, 400), iv("w3.1", 5, 450, 900)), // at the same time as partition 0's owners
		nil, // never owned: no log
	}
	n, vs := checkPartitions(good, nil, l)
	if len(vs) != 0 || n != 4 {
		t.Errorf("good partitions: %d ownerships, violations %q; want 4, none", n, vs)
	}

	bad := [][]proctest.Line{
		linesOf(iv("w1.1", 1, 0, 500)),
		linesOf(iv("w1.1", 3, 0, 500), iv("w2.1", 4, 300, 900)), // two owners from 300 to 500
		linesOf(iv("w1.1", 7, 0, 500), iv("w3.1", 7, 600, 900)), // a new owner, the same term
		linesOf(iv("w2.1", 9, 0, 500), iv("w3.1", 8, 600, 900)), // the term went down
	}
	_, vs = checkPartitions(bad, nil, l)
	want := []string{
		"partition 1: two leaders at once",
		"partition 2: the leader changed but not the term",
		"partition 3: the term went down",
	}
	if len(vs) != len(want) {
		t.Fatalf("violations %q; want %d: %q", vs, len(want), want)
	}
	for i, w := range want {
		if !strings.HasPrefix(vs[i], w) {
			t.Errorf("violation %d: %q; want one starting %q", i, vs[i], w)
		}
	}
}

// logOf is a partition's log of the ownerships: their lines in the order of their times.
func logOf(ownerships ...[]proctest.Line) []proctest.Line {
	var ls []proctest.Line
	for _, o := range ownerships {
		ls = append(ls, o...)
	}
	slices.SortStableFunc(ls, func(a, b proctest.Line) int { return cmp.Compare(a.T, b.T) })
	return ls
}

// fleet is 8 partitions' logs: w1.1 owns 0, 3 and 5 from 150ms until end (a kill when
// reason is ""), then w2.1, w3.1 and w1.2 own them from new0, new3 and new5; w2.1 and w3.1
// own the others throughout.
func fleet(end int64, reason string, new0, new3, new5 int64) [][]proctest.Line {
	lines := make([][]proctest.Line, 8)
	for p := range lines {
		switch p {
		case 0:
			lines[p] = logOf(owns("w1.1", 1, 150, end, reason), owns("w2.1", 2, new0, 6000, "stop"))
		case 3:
			lines[p] = logOf(owns("w1.1", 1, 150, end, reason), owns("w3.1", 2, new3, 6000, "stop"))
		case 5:
			lines[p] = logOf(owns("w1.1", 1, 150, end, reason), owns("w1.2", 2, new5, 6000, "stop"))
		default:
			lines[p] = logOf(owns([]string{"w2.1", "w3.1"}[p%2], 1, 100, 6000, "stop"))
		}
	}
	return lines
}

// Every partition a crashed worker owned is owned again by another within L + R + slack of
// its last renewal (D8), as partition 0 is by the driver: with L = 1s, R = 250ms and a slack of
// 100ms, w1.1's last renewal at 900ms leaves until 2250ms. A partition owned late is a
// violation naming it, its old owner, the fault and how late; one owned by the killed worker's
// restart counts; partitions the worker did not own are not its takeovers.
func TestCheckPartitionTakeoversCrash(t *testing.T) {
	o := testOptions()
	kill := []Fault{{N: 1, Kind: KillFollower, Target: "w1.1", Start: 1000 * ms1, End: 1010 * ms1}}
	tos, vs := checkPartitionTakeovers(o, fleet(1000, "", 2100, 2150, 2250), kill, 6000*ms1)
	if len(vs) != 0 || len(tos) != 3 {
		t.Fatalf("every partition owned again in time: %d takeovers, violations %q; want 3, none", len(tos), vs)
	}
	for i, p := range []int{0, 3, 5} {
		if to := tos[i]; to.Partition != p || to.From != "w1.1" || to.Since != "its last renewal" || to.Bound != 1350*time.Millisecond {
			t.Errorf("takeover %d: %+v; want partition %d from w1.1 since its last renewal, bound 1.35s", i, to, p)
		}
	}
	if tos[2].To != "w1.2" || tos[2].Took != 1350*time.Millisecond {
		t.Errorf("partition 5: %+v; want w1.2 after 1.35s", tos[2])
	}

	tos, vs = checkPartitionTakeovers(o, fleet(1000, "", 2100, 2150, 2400), kill, 6000*ms1)
	want := "partition 5: fault 1 (kill-follower of w1.1 at 1000000000): w1.2 owned it again 1.5s after its last renewal, 150ms beyond the bound 1.35s"
	if len(vs) != 1 || vs[0] != want || len(tos) != 3 || !tos[2].Over() {
		t.Errorf("partition 5 owned late: violations %q; want\n%q", vs, want)
	}

	// Never owned again, while the faults went on past the bound.
	lines := fleet(1000, "", 2100, 2150, 2250)
	lines[3] = logOf(owns("w1.1", 1, 150, 1000, ""))
	_, vs = checkPartitionTakeovers(o, lines, kill, 6000*ms1)
	if len(vs) != 1 || !strings.HasPrefix(vs[0], "partition 3: fault 1 (kill-follower of w1.1 at 1000000000): not owned again by another worker") {
		t.Errorf("partition 3 never owned again: violations %q", vs)
	}
	// The faults ended before the bound: nothing owed yet.
	if _, vs = checkPartitionTakeovers(o, lines, kill, 2000*ms1); len(vs) != 0 {
		t.Errorf("faults ended at 2s: violations %q; want none", vs)
	}

	// The kill came late in R, an attempt perhaps in flight: measured from the fault.
	late := []Fault{{N: 1, Kind: KillLeader, Target: "w1.1", Start: 1140 * ms1, End: 1150 * ms1}}
	tos, vs = checkPartitionTakeovers(o, fleet(1140, "", 2100, 2150, 2400), late, 6000*ms1)
	if len(vs) != 0 || len(tos) != 3 || !strings.HasPrefix(tos[2].Since, "the fault") || tos[2].Took != 1260*time.Millisecond {
		t.Errorf("kill late in R: takeovers %+v, violations %q; want partition 5 1.26s after the fault, no violation", tos, vs)
	}

	// A handover under way at the kill (resigned, not yet taken) is owed as an ownership is,
	// from the fault.
	lines = fleet(1000, "", 2100, 2150, 2250)
	lines[6] = logOf(owns("w1.1", 1, 150, 950, "resign"), owns("w2.1", 2, 2500, 6000, "stop"))
	_, vs = checkPartitionTakeovers(o, lines, kill, 6000*ms1)
	if len(vs) != 1 || !strings.HasPrefix(vs[0], "partition 6: ") || !strings.Contains(vs[0], "after the fault (a handover of it was under way), 150ms beyond") {
		t.Errorf("handover under way taken late: violations %q", vs)
	}
	// One its heir took before the fault is not w1.1's.
	lines[6] = logOf(owns("w1.1", 1, 150, 950, "resign"), owns("w2.1", 2, 960, 6000, "stop"))
	if tos, vs = checkPartitionTakeovers(o, lines, kill, 6000*ms1); len(vs) != 0 || len(tos) != 3 {
		t.Errorf("handover done before the kill: %d takeovers, violations %q; want 3, none", len(tos), vs)
	}
}

// A pause or a cut owes the takeover when it lasted the whole bound; a shorter one, from which
// the worker may come back owning its partitions, does not. Over a lock-file backend a frozen
// worker may hold the store's lock: a pause owes it only when another worker owned the
// partition before the pause ended.
func TestCheckPartitionTakeoversPause(t *testing.T) {
	lines := fleet(1000, "", 2100, 2150, 2400) // w1.1 writes no line from 1000ms: frozen or cut
	for _, tc := range []struct {
		backend string
		kind    Kind
		end     int64 // ms
		over    bool  // partition 5 is a violation
	}{
		{"postgres", PauseLeader, 2500, true},
		{"postgres", PauseFollower, 2500, true},
		{"postgres", PartitionLeader, 2500, true},
		{"postgres", PauseFollower, 2200, false}, // resumed before 2250ms
		{"postgres", PartitionFollower, 2200, false},
		{"file", PauseLeader, 2500, true},    // partition 5 taken while frozen, late
		{"file", PauseFollower, 2300, false}, // taken after it resumed
	} {
		o := testOptions()
		o.Backend = tc.backend
		f := []Fault{{N: 1, Kind: tc.kind, Target: "w1.1", Start: 1000 * ms1, End: tc.end * ms1}}
		_, vs := checkPartitionTakeovers(o, lines, f, 6000*ms1)
		if got := len(vs) == 1 && strings.HasPrefix(vs[0], "partition 5: "); got != tc.over || len(vs) > 1 {
			t.Errorf("%s %s ending at %dms: violations %q; want partition 5's: %v", tc.backend, tc.kind, tc.end, vs, tc.over)
		}
	}
}

// A stopped worker's partitions are owned again within R + slack of its release (E7, D8),
// whether the release says "stop" (its member lease's stop ended the ownership) or "resign"
// (partition.Partitions.Stop handed it to an heir); one it lost otherwise before the signal
// landed ("deadline") has no clean handover to measure.
func TestCheckPartitionTakeoversStop(t *testing.T) {
	o := testOptions()
	stop := []Fault{{N: 2, Kind: StopLeader, Target: "w1.1", Start: 1000 * ms1, End: 1100 * ms1}}
	lines := make([][]proctest.Line, 8)
	for p := range lines {
		lines[p] = logOf(owns([]string{"w2.1", "w3.1"}[p%2], 1, 100, 6000, "stop"))
	}
	lines[0] = logOf(owns("w1.1", 1, 150, 1010, "stop"), owns("w2.1", 2, 1200, 6000, "stop"))
	lines[3] = logOf(owns("w1.1", 1, 150, 1010, "resign"), owns("w3.1", 2, 1300, 6000, "stop"))
	lines[6] = logOf(owns("w1.1", 1, 150, 1010, "deadline"), owns("w2.1", 2, 2000, 6000, "stop"))
	tos, vs := checkPartitionTakeovers(o, lines, stop, 6000*ms1)
	if len(vs) != 0 || len(tos) != 2 || tos[1].Since != "it released it (resign)" || tos[1].Took != 290*time.Millisecond || tos[1].Bound != 350*time.Millisecond {
		t.Fatalf("stop, partitions owned again in time: takeovers %+v, violations %q; want 2 (0 and 3, within 350ms), none", tos, vs)
	}

	// Partition 3 released by a resign and owned again 490ms later: within L + R, beyond R.
	lines[3] = logOf(owns("w1.1", 1, 150, 1010, "resign"), owns("w3.1", 2, 1500, 6000, "stop"))
	_, vs = checkPartitionTakeovers(o, lines, stop, 6000*ms1)
	want := "partition 3: fault 2 (stop-leader of w1.1 at 1000000000): w3.1 owned it again 490ms after it released it (resign), 140ms beyond the bound 350ms"
	if len(vs) != 1 || vs[0] != want {
		t.Errorf("resign released late: violations %q; want\n%q", vs, want)
	}

	// No line ends an ownership after SIGTERM.
	lines[3] = logOf(owns("w1.1", 1, 150, 1010, ""), owns("w3.1", 2, 1300, 6000, "stop"))
	if _, vs = checkPartitionTakeovers(o, lines, stop, 6000*ms1); len(vs) != 1 || !strings.Contains(vs[0], "no line ends w1.1's ownership") {
		t.Errorf("no unlead line after SIGTERM: violations %q", vs)
	}
}
