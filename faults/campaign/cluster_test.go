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
