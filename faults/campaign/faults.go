package campaign

import (
	"errors"
	"fmt"
	"slices"
	"syscall"
	"time"

	"github.com/leasehold/leasehold/internal/proctest"
	"github.com/leasehold/leasehold/internal/storecluster"
)

// Kind is a kind of fault.
type Kind string

// The kinds of faults. The proxy kinds apply only to a backend with a network.
const (
	KillLeader        Kind = "kill-leader"        // SIGKILL the leader, start a new worker
	KillFollower      Kind = "kill-follower"      // SIGKILL a follower, start a new worker
	PauseLeader       Kind = "pause-leader"       // SIGSTOP the leader longer than L + R, then SIGCONT
	PauseFollower     Kind = "pause-follower"     // SIGSTOP a follower longer than L, then SIGCONT
	StopLeader        Kind = "stop-leader"        // SIGTERM the leader (clean stop), start a new worker
	Latency           Kind = "latency"            // delay one instance's traffic to the backend
	Reset             Kind = "reset"              // reset one instance's connections
	PartitionLeader   Kind = "partition-leader"   // cut the leader from the backend longer than L + R
	PartitionFollower Kind = "partition-follower" // cut a follower from the backend longer than L
	Outage            Kind = "outage"             // cut every instance from the backend longer than L
	// The watch faults, applied in one instance between its Lock's watch and its Elector
	// (WatchMode) for a while: they do not stop it from reading and writing the lease.
	DropWatch    Kind = "watch-drop"    // its watch notifications are lost
	DelayWatch   Kind = "watch-delay"   // they arrive late
	DupWatch     Kind = "watch-dup"     // they arrive twice
	ReorderWatch Kind = "watch-reorder" // they arrive by pairs, the newer first
	CutWatch     Kind = "watch-cut"     // its watch goes silent without an error, longer than L

	// A wall clock that jumps, the monotonic clock going on (M2).
	ClockJump Kind = "clock-jump" // one instance's wall clock jumps an hour either way, longer than L
	// The members' faults, over a cluster backend (RegisterClusterBackend): they hit one
	// server process of the store, not an instance.
	MemberKillLeader    Kind = "member-kill-leader"    // SIGKILL the cluster's leader member, start it again later
	MemberKillFollower  Kind = "member-kill-follower"  // SIGKILL another member, start it again later
	MemberKillUsed      Kind = "member-kill-used"      // SIGKILL the member the leading instance sent most to
	MemberPauseLeader   Kind = "member-pause-leader"   // SIGSTOP the cluster's leader member, then SIGCONT
	MemberPauseFollower Kind = "member-pause-follower" // SIGSTOP another member, then SIGCONT
	MemberCut           Kind = "member-cut"            // cut every instance off one member, then heal
	MemberFailover      Kind = "failover"              // the cluster hands its leadership to another member
	MemberFailoverLossy Kind = "failover-lossy"        // the same, losing the writes not yet replicated
	ClusterRestart      Kind = "cluster-restart"       // stop every member, start them all again
)

// clusterKind reports whether k hits the cluster's members rather than an instance.
func clusterKind(k Kind) bool {
	switch k {
	case MemberKillLeader, MemberKillFollower, MemberKillUsed, MemberPauseLeader, MemberPauseFollower,
		MemberCut, MemberFailover, MemberFailoverLossy, ClusterRestart:
		return true
	}
	return false
}

// watchModes are the watch faults' modes.
var watchModes = map[Kind]WatchMode{
	DropWatch: WatchDrop, DelayWatch: WatchDelay, DupWatch: WatchDup, ReorderWatch: WatchReorder, CutWatch: WatchCut,
}

// kindWeight is a kind's place in the schedule.
type kindWeight struct {
	kind          Kind
	weight        int
	network       bool
	clusterWeight int
}

// weights of the kinds in the schedule: leader faults, which provoke takeovers, come most.
// clusterWeight is the kind's weight in a campaign over a cluster (0: not injected there): the
// members' faults come most, with the instances' faults that provoke takeovers and the proxy
// faults, which then hit the instance's connections to every member.
var weights = []kindWeight{
	{KillLeader, 3, false, 1},
	{KillFollower, 2, false, 0},
	{PauseLeader, 2, false, 1},
	{PauseFollower, 1, false, 0},
	{StopLeader, 3, false, 1},
	{Latency, 2, true, 0},
	{Reset, 2, true, 1},
	{PartitionLeader, 2, true, 1},
	{PartitionFollower, 1, true, 0},
	{Outage, 1, true, 1},
	{DropWatch, 1, false, 0},
	{DelayWatch, 1, false, 0},
	{DupWatch, 1, false, 0},
	{ReorderWatch, 1, false, 0},
	{CutWatch, 1, false, 0},
	{ClockJump, 1, false, 0},
	{MemberKillLeader, 0, false, 3},
	{MemberKillFollower, 0, false, 2},
	{MemberKillUsed, 0, true, 2},
	{MemberPauseLeader, 0, false, 2},
	{MemberPauseFollower, 0, false, 1},
	{MemberCut, 0, true, 2},
	{MemberFailover, 0, false, 2},
	{MemberFailoverLossy, 0, false, 2},
	{ClusterRestart, 0, false, 1},
}

// Kinds returns the kinds of faults injected over a backend with or without a network.
func Kinds(network bool) []Kind { return kindsFor(network, false) }

// ClusterKinds returns the kinds of faults injected over a cluster backend.
func ClusterKinds() []Kind { return kindsFor(true, true) }

func kindsFor(network, cluster bool) []Kind { return kindsOf(network, cluster, false) }

// kindsOf returns the kinds of a schedule, the ranked kinds among them in the Ranked mode.
func kindsOf(network, cluster, ranked bool) []Kind {
	var ks []Kind
	for _, w := range scheduleWeights(ranked) {
		if weightIn(w.weight, w.network, w.clusterWeight, network, cluster) > 0 {
			ks = append(ks, w.kind)
		}
	}
	return ks
}

func weightIn(weight int, needsNetwork bool, clusterWeight int, network, cluster bool) int {
	switch {
	case cluster && needsNetwork && !network:
		return 0 // a cluster its clients reach directly: no proxy to fault
	case cluster:
		return clusterWeight
	case network || !needsNetwork:
		return weight
	}
	return 0
}

// Fault is one fault injected, on the shared clock.
type Fault struct {
	N      int    `json:"n"` // 1 for the first fault
	Kind   Kind   `json:"kind"`
	Target string `json:"target,omitempty"` // the instance hit; "" for an outage
	Slot   int    `json:"slot,omitempty"`
	Start  int64  `json:"start"` // when it was injected
	End    int64  `json:"end"`   // when it was lifted (SIGCONT, heal, restart); Start for an instant
	// Param is the pause, partition, outage, watch fault, clock jump or health fault length,
	// the latency added, or a preempt's stability window.
	Param time.Duration `json:"param_ns,omitempty"`
	// Watch is a watch fault's WatchFault ("delay 120ms"), or a clock jump's offset
	// ("clock -1h0m0s").
	Watch string `json:"watch,omitempty"`
	// Takeover is the change of leader the fault provoked, when it hit the leader. After a
	// member's fault, it is the return of a leader once the store answered again, if the
	// fleet had none then.
	Takeover *Takeover `json:"takeover,omitempty"`
	// Via is the instance whose traffic picked the member hit (member-kill-used), or the
	// holder a preempt's joiner found leading.
	Via string `json:"via,omitempty"`
	// Joiner is the worker a preempt started in Target's slot: the highest priority. Spawned
	// is when the runner started its process, End when it said it was ready: its stability
	// window began between the two.
	Joiner  string `json:"joiner,omitempty"`
	Spawned int64  `json:"spawned,omitempty"`
	// StoreBack is when the store answered again after a member's fault: the cluster had a
	// leader (Cluster.Leader) once the fault was lifted.
	StoreBack int64 `json:"store_back,omitempty"`
	// Stalls are the times after StoreBack, until the next fault, the store did not answer
	// the runner's probes within the slack (stall.go): [from, to] on the shared clock. For a
	// fault of the leader over a cluster, the times it did not from the fault's pick to the
	// takeover.
	Stalls [][2]int64 `json:"stalls,omitempty"`
	// Leaderless is the longest time no instance led from the fault to the next one (or the end
	// of the faults), and AfterStore the part of it after StoreBack.
	Leaderless time.Duration `json:"leaderless_ns,omitempty"`
	AfterStore time.Duration `json:"after_store_ns,omitempty"`
	// Unrecovered: the cluster did not recover from a member's fault within 30 s (a member's
	// restart, a failover, or the return of a leader did not finish; UnrecoveredWhy says
	// which). Its own outcome, not bound-checked: the campaign restarted the whole cluster
	// (Restarted when that brought it back, StoreBack then being when it answered) and went on.
	Unrecovered    bool   `json:"unrecovered,omitempty"`
	UnrecoveredWhy string `json:"unrecovered_why,omitempty"`
	Restarted      bool   `json:"restarted,omitempty"`
}

// Takeover is a change of leader after a fault, measured on the shared clock.
type Takeover struct {
	From  string        `json:"from"`
	To    string        `json:"to"`
	Since string        `json:"since"` // what Took is measured from
	Took  time.Duration `json:"took_ns"`
	// Bound is the rule's bound plus the slack (L + R for a crash, pause or partition, E6; R
	// for a clean stop, E7); 0 when the fault's takeover has no bound (latency, reset, outage).
	Bound time.Duration `json:"bound_ns,omitempty"`
	// Attempt is how long the new leader's winning attempt took, from its start to its answer
	// (a lead line's time less its attempt's start): the part of Took the store spent, which
	// Over leaves out. 0 when not measured.
	Attempt time.Duration `json:"attempt_ns,omitempty"`
}

// Over reports whether the takeover broke its bound. Took runs to the new leader's lead line,
// written when its winning write returned; E6 has the follower attempt at the expiry, so the
// part of Took that write spent waiting on the store (Attempt) is the store's, not the
// election's: the bound is held to Took less Attempt, as the failover tests hold E6
// (internal/failovertest).
func (t *Takeover) Over() bool { return t != nil && t.Bound > 0 && t.Took-t.Attempt > t.Bound }

// pick picks the next kind: every kind once, in a random order, then at random by weight.
// The first round makes every kind of the schedule happen in a campaign of that many faults.
// Kinds the backend turned out not to support (d.unsupported) are left out.
func (d *driver) pick() Kind {
	network, cluster := d.srv.network(), d.srv.Cluster != nil
	if len(d.round) == 0 && !d.roundDone {
		d.round = kindsOf(network, cluster, d.o.Ranked)
		d.rng.Shuffle(len(d.round), func(i, j int) { d.round[i], d.round[j] = d.round[j], d.round[i] })
		d.roundDone = true
	}
	d.round = slices.DeleteFunc(d.round, func(k Kind) bool { return d.unsupported[k] })
	if len(d.round) > 0 {
		return d.round[0] // until injected: a fault given up (its target gone) comes again
	}
	total := 0
	for _, w := range scheduleWeights(d.o.Ranked) {
		if !d.unsupported[w.kind] {
			total += weightIn(w.weight, w.network, w.clusterWeight, network, cluster)
		}
	}
	n := d.rng.IntN(total)
	for _, w := range scheduleWeights(d.o.Ranked) {
		if d.unsupported[w.kind] {
			continue
		}
		if wt := weightIn(w.weight, w.network, w.clusterWeight, network, cluster); n < wt {
			return w.kind
		} else {
			n -= wt
		}
	}
	panic("unreachable")
}

// roundOver reports whether the first round is over: every kind of the schedule the backend
// supports was injected once.
func (d *driver) roundOver() bool {
	return d.roundDone && !slices.ContainsFunc(d.round, func(k Kind) bool { return !d.unsupported[k] })
}

// record keeps an injected fault; one of the first round's kind ends its turn there.
func (d *driver) record(f Fault) {
	d.faults = append(d.faults, f)
	if len(d.round) > 0 && d.round[0] == f.Kind {
		d.round = d.round[1:]
	}
}

// inject picks a fault, injects it at a random phase of the election, and waits for what it
// provokes (a takeover, the end of a pause or partition). The caller then settles.
func (d *driver) inject() error {
	d.endStalls()
	kind := d.pick()
	if rankedKind(kind) {
		f, err := d.injectRanked(kind)
		if f == nil {
			return err // no target, or it changed meanwhile: the caller settles and picks again
		}
		return d.finish(*f, err)
	}
	half := (d.o.LeaseDuration + d.o.RenewInterval) / 2
	// Over a cluster that can be probed, the runner probes it through a fault of the leader
	// too: the store may stall then as after a member's fault (a fault of the leader a moment
	// after a failover), and no instance can take over while it does (stall.go).
	var stalls *stallWatch
	if p, ok := d.srv.Cluster.(storecluster.Prober); ok && (kind == KillLeader || kind == PauseLeader || kind == PartitionLeader) {
		stalls = watchStalls(d.ctx, p, d.o.Slack, stallEvery, proctest.Now)
		defer stalls.stop()
	}
	var target *proc
	switch kind {
	case KillLeader, PauseLeader, StopLeader, PartitionLeader:
		// Just after a renewal of the leader, then a random part of R: the fault falls at a
		// random phase of the followers' attempts.
		target = d.leaderProc()
		if target == nil {
			return nil // lost meanwhile: the caller settles and picks again
		}
		n := d.renews[target.ID]
		if err := d.wait("a renewal by "+target.ID, 4*d.o.LeaseDuration, func() bool { return d.renews[target.ID] > n || d.leader != target.ID }); err != nil {
			return err
		}
	case KillFollower, PauseFollower, PartitionFollower:
		var fs []*proc
		for _, s := range d.slots {
			if s.cur != nil && s.cur.ID != d.leader {
				fs = append(fs, s.cur)
			}
		}
		if len(fs) == 0 {
			return nil
		}
		target = fs[d.rng.IntN(len(fs))]
	case Latency, Reset:
		target = d.slots[d.rng.IntN(len(d.slots))].cur
	case DropWatch, DelayWatch, DupWatch, ReorderWatch, CutWatch, ClockJump:
		var live []*proc
		for _, s := range d.slots {
			if p := s.cur; p != nil && p.ready && !p.exited && !p.paused && !p.signalled {
				live = append(live, p)
			}
		}
		if len(live) == 0 {
			return nil
		}
		target = live[d.rng.IntN(len(live))]
	}
	if err := d.sleep(time.Duration(d.rng.Int64N(int64(d.o.RenewInterval)))); err != nil {
		return err
	}
	if target != nil && (target.exited || target.paused || (kind == KillLeader || kind == PauseLeader || kind == StopLeader || kind == PartitionLeader) && d.leader != target.ID) {
		return nil // it stopped leading (or died) during the wait: pick again
	}

	f := Fault{N: len(d.faults) + 1, Kind: kind}
	if target != nil {
		f.Target, f.Slot = target.ID, target.slot.n
	}
	leads := len(d.leads)
	var err error
	// A leader must be replaced within L + R of its last renewal, plus the slack (E6).
	crashBound := d.o.LeaseDuration + d.o.RenewInterval + d.o.Slack
	// Long enough for the takeover to happen while the leader is frozen or cut.
	long := crashBound + 100*time.Millisecond + time.Duration(d.rng.Int64N(int64(500*time.Millisecond)))
	short := d.o.LeaseDuration + 100*time.Millisecond + time.Duration(d.rng.Int64N(int64(500*time.Millisecond)))
	switch kind {
	case KillLeader, KillFollower:
		f.Start = proctest.Now()
		target.signalled = true
		if err = target.Signal(syscall.SIGKILL); err != nil {
			return err
		}
		if err = d.restart(target); err != nil {
			return err
		}
		f.End = proctest.Now()
		if kind == KillLeader {
			f.Takeover, err = d.crashTakeover(target, &f, leads, crashBound, half, stalls)
		}
	case PauseLeader, PauseFollower:
		f.Param = short
		if kind == PauseLeader {
			f.Param = long
		}
		f.Start = proctest.Now()
		if err = target.Signal(syscall.SIGSTOP); err != nil {
			return err
		}
		target.paused = true
		resumed := false
		d.after(f.Param, func() {
			f.End = proctest.Now()
			if err := target.Signal(syscall.SIGCONT); err != nil {
				d.problem("%v", err)
			}
			target.paused, resumed = false, true
		})
		if kind == PauseLeader {
			if lockFileBackend(d.o.Backend) {
				f.Takeover, err = d.pauseTakeover(target, &f, leads, crashBound, half, &resumed)
			} else {
				f.Takeover, err = d.crashTakeover(target, &f, leads, crashBound, half, stalls)
			}
			if err != nil {
				return err
			}
		}
		err = d.wait("end of the pause of "+target.ID, f.Param+time.Minute, func() bool { return resumed })
	case StopLeader:
		f.Start = proctest.Now()
		target.signalled = true
		n := len(d.unleads[target.ID])
		if err = target.Signal(syscall.SIGTERM); err != nil {
			return err
		}
		if err = d.restart(target); err != nil {
			return err
		}
		f.End = proctest.Now()
		if target.stopped == nil || target.stopped.Reason != "ok" || target.err != nil {
			d.problem("fault %d: %s did not stop cleanly on SIGTERM (E7): stopped %v, exit %v", f.N, target.ID, target.stopped, target.err)
		}
		if len(d.unleads[target.ID]) <= n {
			d.problem("fault %d: %s exited after SIGTERM without an unlead line", f.N, target.ID)
			break
		}
		unlead := d.unleads[target.ID][n]
		if !cleanRelease(unlead.Reason) {
			// It lost the lease before the signal landed: no clean handover to measure.
			break
		}
		var next proctest.Line
		if next, err = d.nextLead(target.ID, leads, d.o.LeaseDuration+d.o.RenewInterval+settleTimeout); err != nil {
			return err
		}
		f.Takeover = &Takeover{From: target.ID, To: next.Instance, Since: "it stopped leading (released the lease)",
			Took: time.Duration(next.T - unlead.T), Bound: d.o.RenewInterval + d.o.Slack}
	case Latency:
		f.Param = time.Duration(20+d.rng.IntN(380)) * time.Millisecond
		f.Start = proctest.Now()
		target.slot.proxy.Latency(f.Param)
		err = d.sleep(500*time.Millisecond + time.Duration(d.rng.Int64N(int64(time.Second))))
		target.slot.proxy.Latency(0)
		f.End = proctest.Now()
		f.Takeover = d.anyTakeover(target.ID, leads, f.Start)
	case Reset:
		f.Start = proctest.Now()
		target.slot.proxy.Reset()
		f.End = f.Start
		err = d.sleep(d.o.RenewInterval)
		f.Takeover = d.anyTakeover(target.ID, leads, f.Start)
	case PartitionLeader, PartitionFollower:
		f.Param = short
		if kind == PartitionLeader {
			f.Param = long
		}
		f.Start = proctest.Now()
		target.slot.proxy.Cut()
		healed := false
		d.after(f.Param, func() {
			f.End = proctest.Now()
			target.slot.proxy.Heal()
			healed = true
		})
		if kind == PartitionLeader {
			f.Takeover, err = d.crashTakeover(target, &f, leads, crashBound, half, stalls)
			if err != nil {
				return err
			}
		}
		err = d.wait("end of the partition of "+target.ID, f.Param+time.Minute, func() bool { return healed })
	case DropWatch, DelayWatch, DupWatch, ReorderWatch, CutWatch:
		wf := WatchFault{Mode: watchModes[kind]}
		f.Param = 500*time.Millisecond + time.Duration(d.rng.Int64N(int64(time.Second)))
		switch kind {
		case DelayWatch:
			wf.Delay = time.Duration(20+d.rng.IntN(480)) * time.Millisecond
		case CutWatch:
			f.Param = short
		}
		f.Watch = wf.String()
		if f.Start, err = d.setWatch(target, wf); err != nil {
			return err
		}
		if err = d.sleep(f.Param); err != nil {
			return err
		}
		f.End = proctest.Now()
		if !target.exited {
			if f.End, err = d.setWatch(target, WatchFault{Mode: WatchPass}); err != nil {
				return err
			}
		}
		// Not bounded: nobody crashed. The checks that no two lead and that every action is
		// fenced hold through it as through every fault.
		f.Takeover = d.anyTakeover(target.ID, leads, f.Start)
	case ClockJump:
		offset := time.Hour
		if d.rng.IntN(2) == 0 {
			offset = -offset
		}
		// Longer than L: the instance renews, takes over or follows under the jumped clock.
		f.Param = short
		f.Watch = clockPrefix + offset.String()
		if f.Start, err = d.setClock(target, offset); err != nil {
			return err
		}
		if err = d.sleep(f.Param); err != nil {
			return err
		}
		f.End = proctest.Now()
		if !target.exited {
			if f.End, err = d.setClock(target, 0); err != nil {
				return err
			}
		}
		// Reported, not bounded, as a watch fault's: the instance's decisions are taken on its
		// monotonic clock, so a takeover here has another cause (a starved process). The checks
		// of every fault hold through it: no two leaders, no stale action accepted.
		f.Takeover = d.anyTakeover(target.ID, leads, f.Start)
	case MemberKillLeader, MemberKillFollower, MemberKillUsed, MemberPauseLeader, MemberPauseFollower,
		MemberCut, MemberFailover, MemberFailoverLossy, ClusterRestart:
		if err = d.memberFault(&f); errors.Is(err, errGiveUp) {
			return nil // no target, or the cluster cannot: the caller settles and picks again
		}
	case Outage:
		f.Param = d.o.LeaseDuration + time.Duration(d.rng.Int64N(int64(time.Second)))
		f.Start = proctest.Now()
		old := d.leader
		for _, s := range d.slots {
			s.proxy.Cut()
		}
		err = d.sleep(f.Param)
		for _, s := range d.slots {
			s.proxy.Heal()
		}
		f.End = proctest.Now()
		if err == nil {
			// The recovery: from the heal to the next leader, whoever it is. Not bounded: it
			// includes the clients' own reconnection schedules.
			n := len(d.leads)
			if err = d.wait("a leader after the outage", settleTimeout, func() bool { return len(d.leads) > n || d.leader != "" }); err == nil && len(d.leads) > n {
				next := d.leads[n]
				f.Takeover = &Takeover{From: old, To: next.Instance, Since: "the backend came back", Took: time.Duration(next.T - f.End)}
			}
		}
	}
	return d.finish(f, err)
}

// finish keeps fault f once injected (also when the run ends on err), logs it, and reports a
// takeover beyond its bound. The ranked kinds' bounds are checked on the log (checkRanked).
func (d *driver) finish(f Fault, err error) error {
	if err != nil {
		if errors.Is(err, errEndRun) && f.Start != 0 {
			d.faults = append(d.faults, f) // the report shows the fault the run ended on
		}
		return err
	}
	d.record(f)
	d.o.Logf("campaign %s: fault %d %s %s%s", d.o.Backend, f.N, f.Kind, f.Target, describeTakeover(f.Takeover))
	if f.Takeover.Over() && !rankedKind(f.Kind) {
		// The traces from a lease before the fault to the takeover say who was late, and why.
		from, to := f.Start-int64(d.o.LeaseDuration+d.o.RenewInterval), f.Start+int64(f.Takeover.Took)+int64(50*time.Millisecond)
		d.problem("fault %d (%s of %s): %s took over %v after %s (its winning attempt took %v of it), beyond the bound %v%s",
			f.N, f.Kind, f.Target, f.Takeover.To, f.Takeover.Took, f.Takeover.Since, f.Takeover.Attempt, f.Takeover.Bound,
			traceWindow(d.dir, from, to))
	}
	return nil
}

func describeTakeover(t *Takeover) string {
	if t == nil {
		return ""
	}
	s := fmt.Sprintf(": %s → %s in %v after %s", t.From, t.To, t.Took.Round(time.Millisecond/10), t.Since)
	if t.Bound > 0 {
		s += fmt.Sprintf(" (bound %v)", t.Bound)
	}
	if t.Attempt > 0 {
		s += fmt.Sprintf(", its attempt %v", t.Attempt.Round(time.Millisecond/10))
	}
	return s
}

// crashTakeover waits for an instance other than the leader hit by f to lead, and measures the
// takeover from the leader's last renewal, as E6 bounds it. If the fault came so late in the
// leader's renew interval that its next attempt may have been in flight (and may have landed
// unlogged), it measures from the fault instead. With stalls (the cluster's probes since
// before the fault), the stalls until the takeover are f's, and a takeover across one is
// measured from its end (stalledTakeover).
func (d *driver) crashTakeover(old *proc, f *Fault, leads int, bound, half time.Duration, stalls *stallWatch) (*Takeover, error) {
	faultAt := f.Start
	next, err := d.nextLead(old.ID, leads, bound+settleTimeout)
	if err != nil {
		return nil, err
	}
	last, ok := d.last[old.ID]
	if !ok {
		return nil, fmt.Errorf("no lead or renew line of the leader %s", old.ID)
	}
	since, label := last.T, "its last renewal"
	nextAttempt := last.Deadline - int64(half) + int64(d.o.RenewInterval)
	if faultAt >= nextAttempt-int64(25*time.Millisecond) {
		since, label = faultAt, "the fault (an attempt may have been in flight)"
	}
	if at, ok := lastAsk(d.asks, old.ID, since, next.T); ok {
		// R1: a request to hand over is a new revision of the record; a follower judges its
		// expiry from the revision it last saw (E6).
		since, label = at, "a request to hand over on its record (R1, E6)"
	}
	t := &Takeover{From: old.ID, To: next.Instance, Since: label, Took: time.Duration(next.T - since), Bound: bound}
	if next.Deadline != 0 {
		t.Attempt = time.Duration(next.T - (next.Deadline - int64(half)))
	}
	if stalls != nil {
		f.Stalls = stalls.stop()
		stalledTakeover(t, since, next.T, f.Stalls)
	}
	return t, nil
}

// lockFileBackend reports whether the backend's store serializes writers through a lock on a
// local file (the file store's flock, SQLite's database lock).
func lockFileBackend(backend string) bool { return backend == "file" || backend == "sqlite" }

// pauseTakeover is crashTakeover for a leader stopped by SIGSTOP over a lock-file backend. A
// process stopped in the middle of a store call keeps the file's lock: no other instance can
// write until it resumes, and then the resumed leader may renew its own lease first. So the
// takeover is owed only if another instance leads before the pause ends; safety (no overlap,
// no stale action accepted) is checked as for every fault.
func (d *driver) pauseTakeover(old *proc, f *Fault, leads int, bound, half time.Duration, resumed *bool) (*Takeover, error) {
	other := func() bool {
		for _, l := range d.leads[leads:] {
			if l.Instance != old.ID {
				return true
			}
		}
		return false
	}
	if err := d.wait("leader other than "+old.ID+" or the end of its pause", bound+settleTimeout,
		func() bool { return other() || *resumed }); err != nil {
		return nil, err
	}
	if other() {
		return d.crashTakeover(old, f, leads, bound, half, nil)
	}
	d.o.Logf("campaign %s: %s resumed before another instance could lead (it may have held the store's file lock while stopped)",
		d.o.Backend, old.ID)
	return nil, nil
}

// nextLead waits for a lead line of an instance other than old, from the n-th lead line on.
func (d *driver) nextLead(old string, n int, timeout time.Duration) (proctest.Line, error) {
	find := func() (proctest.Line, bool) {
		for _, l := range d.leads[n:] {
			if l.Instance != old {
				return l, true
			}
		}
		return proctest.Line{}, false
	}
	err := d.wait("leader other than "+old, timeout, func() bool { _, ok := find(); return ok })
	l, _ := find()
	return l, err
}

// anyTakeover returns the first change of leader since lead line n, if one happened during a
// fault whose takeover is not bounded (latency, reset), measured from the fault.
func (d *driver) anyTakeover(target string, n int, faultAt int64) *Takeover {
	if len(d.leads) <= n {
		return nil
	}
	next := d.leads[n]
	from := ""
	if n > 0 {
		from = d.leads[n-1].Instance
	}
	if next.Instance == from {
		return nil
	}
	return &Takeover{From: from, To: next.Instance, Since: "the fault on " + target, Took: time.Duration(next.T - faultAt)}
}
