package campaign

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/leasehold/leasehold/internal/proctest"
)

// A stall of the store after it answered again moves the start of the bounded time to the
// stall's end: w1.1 leads to 1600ms, the store answered at 1500ms but stalled from 1700ms to
// 2600ms, w2.1 leads from 3000ms: 400ms without a leader once the store answered for good,
// where 1400ms from StoreBack broke the bound. A stall that ended before the gap began
// changes nothing.
func TestClusterFaultStallAfterTheStoreAnswers(t *testing.T) {
	o := testOptions()
	lines := linesOf(iv("w1.1", 1, 0, 1600), iv("w2.1", 2, 3000, 5000))
	pause := []Fault{{N: 1, Kind: MemberPauseLeader, Target: "etcd-1", Start: 800 * ms1, End: 1450 * ms1, StoreBack: 1500 * ms1}}

	rep := analyze(o, true, lines, nil, pause, 0, 5000*ms1, 5000*ms1)
	if !rep.Failed() || rep.Faults[0].AfterStore != 1400*time.Millisecond {
		t.Fatalf("without the stall: after the store %v, violations %q; want 1.4s, beyond the bound", rep.Faults[0].AfterStore, rep.Violations)
	}

	pause[0].Stalls = [][2]int64{{1700 * ms1, 2600 * ms1}}
	rep = analyze(o, true, lines, nil, pause, 0, 5000*ms1, 5000*ms1)
	f := rep.Faults[0]
	if rep.Failed() || f.AfterStore != 400*time.Millisecond {
		t.Errorf("with the stall: after the store %v, violations %q; want 400ms and none", f.AfterStore, rep.Violations)
	}
	if f.Takeover == nil || !strings.Contains(f.Takeover.Since, "after a stall") {
		t.Errorf("takeover %+v; want it timed from the end of the stall", f.Takeover)
	}
	if rep.LongestLeaderless != 0 {
		t.Errorf("longest leaderless while the backend was up = %v; want 0 (the store stalled within the gap)", rep.LongestLeaderless)
	}
	rep.Cluster = &ClusterInfo{Backend: "etcd", Members: []string{"etcd-1", "etcd-2", "etcd-3"}}
	var md strings.Builder
	if err := WriteMarkdown(&md, "", []*Report{rep}, nil); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(md.String(), "saw it stall 1 times") || !strings.Contains(md.String(), "the longest 900 ms") {
		t.Errorf("the report does not tell of the stall:\n%s", md.String())
	}

	pause[0].Stalls = [][2]int64{{1510 * ms1, 1590 * ms1}}
	if rep = analyze(o, true, lines, nil, pause, 0, 5000*ms1, 5000*ms1); !rep.Failed() || rep.Faults[0].AfterStore != 1400*time.Millisecond {
		t.Errorf("a stall before the gap: after the store %v, violations %q; want 1.4s, beyond the bound", rep.Faults[0].AfterStore, rep.Violations)
	}

	// A stall that outlasted the gap: the fleet led again while the store stalled.
	pause[0].Stalls = [][2]int64{{1700 * ms1, 3500 * ms1}}
	if rep = analyze(o, true, lines, nil, pause, 0, 5000*ms1, 5000*ms1); rep.Failed() || rep.Faults[0].AfterStore != 0 {
		t.Errorf("a stall past the gap: after the store %v, violations %q; want 0 and none", rep.Faults[0].AfterStore, rep.Violations)
	}
}

// stepProber answers its probes at once on a clock of its own (now), each taking 60ms, under
// the slack; probe slow takes 300ms, probe failing fails after 1ms, and probe last waits for
// the end of its context.
type stepProber struct {
	n                   int
	clock               atomic.Int64
	slow, failing, last int
	reached             chan struct{} // closed when probe last begins
}

func (p *stepProber) now() int64 { return p.clock.Load() }

func (p *stepProber) Probe(ctx context.Context) error {
	p.n++ // one probe at a time
	switch p.n {
	case p.slow:
		p.clock.Add(int64(300 * time.Millisecond))
		return nil
	case p.failing:
		p.clock.Add(int64(time.Millisecond))
		return errors.New("probe failed")
	case p.last:
		close(p.reached)
		<-ctx.Done()
		return ctx.Err()
	}
	p.clock.Add(int64(60 * time.Millisecond))
	return nil
}

// The stalls are the probes slower than the slack and the failed ones; fast probes are none,
// and a probe cut short by the stop is none unless it was slow already.
func TestStallWatch(t *testing.T) {
	p := &stepProber{slow: 3, failing: 7, last: 9, reached: make(chan struct{})}
	w := watchStalls(t.Context(), p, 100*time.Millisecond, 0, p.now)
	<-p.reached
	stalls := w.stop()
	ms := func(d int64) time.Duration { return time.Duration(d) }
	if len(stalls) != 2 {
		t.Fatalf("stalls %v; want 2: the slow probe 3 and the failed probe 7 (probe 9, cut short by the stop, is none)", stalls)
	}
	if d := ms(stalls[0][1] - stalls[0][0]); d != 300*time.Millisecond {
		t.Errorf("the slow probe's stall lasted %v; want the 300ms it took", d)
	}
	if d := ms(stalls[1][1] - stalls[1][0]); d != time.Millisecond {
		t.Errorf("the failed probe's stall lasted %v; want the 1ms it took", d)
	}
}

// Stalls no more than two probes apart are one.
func TestStallsMerge(t *testing.T) {
	var w stallWatch
	w.add(0, 10)
	w.add(10+int64(2*stallEvery), 10+int64(2*stallEvery)+5)
	w.add(1e12, 1e12+1)
	if len(w.stalls) != 2 || w.stalls[0] != [2]int64{0, 10 + int64(2*stallEvery) + 5} {
		t.Errorf("stalls %v; want the first two merged, the third apart", w.stalls)
	}
}

// A fault of the leader over a cluster is timed as a member's: its takeover across a stall of
// the store is measured from the stall's end. w1.1 renewed at 1000ms and was paused at 1100ms;
// the store stalled from 1300ms to 1700ms (a moment after a failover), and w2.1 led at 2536ms:
// 836ms after the stall, where 1536ms from the renewal broke the bound of 1.35s. A stall
// before the renewal changes nothing; one past the takeover leaves nothing to bound.
func TestLeaderFaultTakeoverAfterAStall(t *testing.T) {
	o := testOptions()
	half := (o.LeaseDuration + o.RenewInterval) / 2
	bound := o.LeaseDuration + o.RenewInterval + o.Slack
	takeover := func(stalls [][2]int64) (*Takeover, Fault) {
		t.Helper()
		d := &driver{ctx: t.Context(), o: o, inbox: proctest.NewInbox[message](), last: map[string]proctest.Line{
			"w1.1": {Instance: "w1.1", Kind: proctest.KindRenew, Term: 1, T: 1000 * ms1, Deadline: 990*ms1 + int64(half)},
		}}
		d.leads = []proctest.Line{{Instance: "w2.1", Kind: proctest.KindLead, Term: 2, T: 2536 * ms1}}
		var w *stallWatch
		if stalls != nil {
			done := make(chan struct{})
			close(done)
			w = &stallWatch{cancel: func() {}, done: done, stalls: stalls}
		}
		f := Fault{N: 4, Kind: PauseLeader, Target: "w1.1", Start: 1100 * ms1}
		to, err := d.crashTakeover(&proc{Proc: &proctest.Proc{ID: "w1.1"}}, &f, 0, bound, half, w)
		if err != nil {
			t.Fatal(err)
		}
		return to, f
	}

	if to, _ := takeover(nil); !to.Over() || to.Took != 1536*time.Millisecond || to.Since != "its last renewal" {
		t.Fatalf("without probes: %+v; want 1.536s after its last renewal, beyond the bound", to)
	}
	to, f := takeover([][2]int64{{1300 * ms1, 1700 * ms1}})
	if to.Over() || to.Took != 836*time.Millisecond || !strings.Contains(to.Since, "stall") {
		t.Errorf("with a stall: %+v; want 836ms after the end of the stall, within the bound", to)
	}
	if len(f.Stalls) != 1 {
		t.Errorf("the fault's stalls %v; want the one probed", f.Stalls)
	}
	if to, _ := takeover([][2]int64{{800 * ms1, 950 * ms1}}); !to.Over() || to.Took != 1536*time.Millisecond {
		t.Errorf("a stall before the renewal: %+v; want 1.536s, beyond the bound", to)
	}
	if to, _ := takeover([][2]int64{{2000 * ms1, 2600 * ms1}}); to.Over() || to.Took != 0 {
		t.Errorf("a stall past the takeover: %+v; want 0", to)
	}
}

// E6 has a follower attempt at the expiry; the store's time to answer that write is not the
// election's. w1.1 renewed at 1000ms and was killed at 1100ms; w2.1's lead line came at
// 2633ms, 1633ms after the renewal: beyond the bound of 1.35s when its winning write answered
// in 5ms, within it when that write waited 600ms on the store (the attempt began at 2033ms).
func TestTakeoverLeavesOutTheWinningWrite(t *testing.T) {
	o := testOptions()
	half := (o.LeaseDuration + o.RenewInterval) / 2
	bound := o.LeaseDuration + o.RenewInterval + o.Slack
	takeover := func(attempt time.Duration) *Takeover {
		t.Helper()
		d := &driver{ctx: t.Context(), o: o, inbox: proctest.NewInbox[message](), last: map[string]proctest.Line{
			"w1.1": {Instance: "w1.1", Kind: proctest.KindRenew, Term: 1, T: 1000 * ms1, Deadline: 990*ms1 + int64(half)},
		}}
		lead := 2633 * ms1
		d.leads = []proctest.Line{{Instance: "w2.1", Kind: proctest.KindLead, Term: 2, T: lead, Deadline: lead - int64(attempt) + int64(half)}}
		f := Fault{N: 11, Kind: KillLeader, Target: "w1.1", Start: 1100 * ms1}
		to, err := d.crashTakeover(&proc{Proc: &proctest.Proc{ID: "w1.1"}}, &f, 0, bound, half, nil)
		if err != nil {
			t.Fatal(err)
		}
		return to
	}
	if to := takeover(5 * time.Millisecond); !to.Over() || to.Took != 1633*time.Millisecond || to.Attempt != 5*time.Millisecond {
		t.Errorf("a 5ms winning write: %+v; want 1.633s, its attempt 5ms, beyond the bound", to)
	}
	if to := takeover(600 * time.Millisecond); to.Over() || to.Took != 1633*time.Millisecond || to.Attempt != 600*time.Millisecond {
		t.Errorf("a winning write of 600ms: %+v; want 1.633s, its attempt 600ms, within the bound", to)
	}
	if !strings.Contains(describeTakeover(takeover(600*time.Millisecond)), "its attempt 600ms") {
		t.Errorf("the takeover's description leaves out the attempt: %s", describeTakeover(takeover(600*time.Millisecond)))
	}
}
