package campaign

import (
	"slices"
	"strings"
	"testing"
	"time"
)

// After a member's fault, the time without a leader once the store answered again is bounded
// by L + R + slack; the time before it, while the store was down, is reported, not bounded;
// and after a restart of the whole cluster nothing is bounded.
func TestClusterFaultLeaderlessAfterTheStoreAnswers(t *testing.T) {
	o := testOptions()
	// w1.1 leads to 1000ms; the store is back at 1500ms; w2.1 leads from 3000ms: 1500ms
	// without a leader after the store answered, beyond 1350ms.
	lines := linesOf(iv("w1.1", 1, 0, 1000), iv("w2.1", 2, 3000, 5000))
	kill := []Fault{{N: 1, Kind: MemberKillLeader, Target: "etcd-1", Start: 800 * ms1, End: 1400 * ms1, StoreBack: 1500 * ms1}}
	rep := analyze(o, true, lines, nil, kill, 0, 5000*ms1, 5000*ms1)
	f := rep.Faults[0]
	if f.Leaderless != 2000*time.Millisecond || f.AfterStore != 1500*time.Millisecond {
		t.Errorf("leaderless %v, after the store %v; want 2s and 1.5s", f.Leaderless, f.AfterStore)
	}
	if f.Takeover == nil || f.Takeover.From != "w1.1" || f.Takeover.To != "w2.1" || f.Takeover.Bound != 1350*time.Millisecond {
		t.Errorf("takeover %+v, want w1.1 → w2.1 bounded by 1350ms", f.Takeover)
	}
	if !strings.Contains(strings.Join(rep.Violations, "\n"), "after the store answered again") {
		t.Errorf("violations %q, want the time without a leader after the store answered", rep.Violations)
	}
	if rep.LongestLeaderless != 0 {
		t.Errorf("longest leaderless while the backend was up = %v, want 0 (the gap began while a member was down)", rep.LongestLeaderless)
	}
	ks := rep.ByKind()
	for _, k := range ks {
		if k.Kind == MemberKillLeader && (k.Count != 1 || k.Leaderless != 2*time.Second || k.AfterStore != 1500*time.Millisecond || k.Over != 1) {
			t.Errorf("by kind: %+v", k)
		}
	}

	// Back within the bound: no violation.
	kill[0].StoreBack = 2000 * ms1
	if rep = analyze(o, true, lines, nil, kill, 0, 5000*ms1, 5000*ms1); rep.Failed() {
		t.Errorf("1s without a leader after the store answered: violations %q", rep.Violations)
	}
	// A restart of the whole cluster is not bounded.
	restart := []Fault{{N: 1, Kind: ClusterRestart, Start: 800 * ms1, End: 1400 * ms1, StoreBack: 1500 * ms1}}
	if rep = analyze(o, true, lines, nil, restart, 0, 5000*ms1, 5000*ms1); rep.Failed() || rep.Faults[0].AfterStore != 1500*time.Millisecond {
		t.Errorf("restart: violations %q, after the store %v", rep.Violations, rep.Faults[0].AfterStore)
	}
}

// A cluster campaign schedules the members' faults and no watch faults; a campaign over one
// server none of the members' faults.
func TestClusterKinds(t *testing.T) {
	ck := ClusterKinds()
	for _, k := range []Kind{MemberKillLeader, MemberKillFollower, MemberKillUsed, MemberPauseLeader, MemberCut, MemberFailover, ClusterRestart, KillLeader} {
		if !slices.Contains(ck, k) {
			t.Errorf("ClusterKinds() lacks %s", k)
		}
	}
	if slices.Contains(ck, DropWatch) {
		t.Errorf("ClusterKinds() has %s", DropWatch)
	}
	for _, k := range Kinds(true) {
		if clusterKind(k) {
			t.Errorf("Kinds(true) has the member's fault %s", k)
		}
	}
	if !IsClusterBackend("etcd-cluster") || IsClusterBackend("etcd") {
		t.Errorf("IsClusterBackend: etcd-cluster %v, etcd %v", IsClusterBackend("etcd-cluster"), IsClusterBackend("etcd"))
	}
}

// A fault the cluster did not recover from within 30 s is its own outcome: listed as such, its
// time without a leader not checked against the bound, and the gap it leaves not counted as
// time without a leader with the backend up.
func TestUnrecoveredClusterFaultIsNotBoundChecked(t *testing.T) {
	o := testOptions()
	lines := linesOf(iv("w1.1", 1, 0, 1000), iv("w2.1", 2, 40000, 45000))
	faults := []Fault{{N: 1, Kind: MemberFailover, Target: "nats-1", Start: 800 * ms1, End: 30800 * ms1, StoreBack: 38000 * ms1,
		Unrecovered: true, UnrecoveredWhy: "failover of the cluster: no stream leader within 30s", Restarted: true}}
	rep := analyze(o, true, lines, nil, faults, 0, 45000*ms1, 45000*ms1)
	rep.Cluster = &ClusterInfo{Backend: "nats", Members: []string{"nats-1", "nats-2", "nats-3"}}
	if rep.Failed() {
		t.Errorf("violations %q; an unrecovered fault is not bound-checked", rep.Violations)
	}
	if f := rep.Faults[0]; f.AfterStore != 2*time.Second {
		t.Errorf("after the store %v, want 2s (still measured)", f.AfterStore)
	}
	if rep.LongestLeaderless != 0 {
		t.Errorf("longest leaderless with the backend up = %v, want 0", rep.LongestLeaderless)
	}
	for _, k := range rep.ByKind() {
		if k.Kind == MemberFailover && (k.Count != 1 || k.Unrecovered != 1 || len(k.Takeovers) != 0 || k.Over != 0) {
			t.Errorf("by kind: %+v, want 1 fault, 1 unrecovered, no takeover", k)
		}
	}
	var md strings.Builder
	if err := WriteMarkdown(&md, "", []*Report{rep}, nil); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"fault 1 (failover of nats-1): the cluster did not recover within 30 s (failover of the cluster: no stream leader within 30s); the campaign restarted every member and went on",
		"| failover | 1 | 1 | 0 |"} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, md.String())
		}
	}

	// The same times for a recovered fault break the bound.
	faults[0].Unrecovered, faults[0].Restarted = false, false
	if rep = analyze(o, true, lines, nil, faults, 0, 45000*ms1, 45000*ms1); !rep.Failed() {
		t.Errorf("a recovered fault 2s without a leader after the store answered: no violation")
	}

	// Not brought back by a restart either: no StoreBack, and the gap up to the end is the
	// cluster's, not the election's.
	faults[0].Unrecovered, faults[0].StoreBack = true, 0
	rep = analyze(o, true, lines, nil, faults, 0, 45000*ms1, 45000*ms1)
	if rep.Failed() || rep.LongestLeaderless != 0 {
		t.Errorf("not restarted: violations %q, longest leaderless %v", rep.Violations, rep.LongestLeaderless)
	}
	rep.Stopped = "ended after fault 1: the cluster did not recover"
	md.Reset()
	if err := WriteMarkdown(&md, "", []*Report{rep}, nil); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"a restart of every member did not bring it back either: the run ended", "The faults stopped early: ended after fault 1"} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("report lacks %q", want)
		}
	}
}

// MaxDuration is checked like the other durations.
func TestMaxDurationNegative(t *testing.T) {
	o := Options{Backend: "file", MaxDuration: -time.Second}
	if err := o.defaults(); err == nil || !strings.Contains(err.Error(), "MaxDuration -1s") {
		t.Errorf("defaults() = %v, want an error naming MaxDuration", err)
	}
}

// A time without a leader that runs into the next fault is bounded only up to that fault's
// start: here the store answered at 1500ms after a member's pause, w1.1 stopped leading at
// 1600ms, and the next fault paused the new raft leader at 1900ms, which kept the store down
// to 3500ms. The first fault owes 300ms, not the 2.4s to w2.1's lead at 4000ms; the second
// owes nothing: its store answered after w2.1 led.
func TestClusterFaultGapIntoTheNextFault(t *testing.T) {
	o := testOptions()
	lines := linesOf(iv("w1.1", 1, 0, 1600), iv("w2.1", 2, 4000, 6000))
	faults := []Fault{
		{N: 1, Kind: MemberPauseLeader, Target: "etcd-1", Start: 800 * ms1, End: 1450 * ms1, StoreBack: 1500 * ms1},
		{N: 2, Kind: MemberPauseLeader, Target: "etcd-2", Start: 1900 * ms1, End: 3400 * ms1, StoreBack: 4100 * ms1},
	}
	rep := analyze(o, true, lines, nil, faults, 0, 6000*ms1, 6000*ms1)
	if rep.Failed() {
		t.Errorf("violations %q; want none", rep.Violations)
	}
	if f := rep.Faults[0]; f.AfterStore != 300*time.Millisecond || f.Takeover == nil || !strings.Contains(f.Takeover.Since, "up to the next fault") {
		t.Errorf("first fault: after the store %v, takeover %+v; want 300ms, up to the next fault", f.AfterStore, f.Takeover)
	}
	if f := rep.Faults[1]; f.AfterStore != 0 {
		t.Errorf("second fault: after the store %v; want 0", f.AfterStore)
	}
}
