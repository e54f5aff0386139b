package campaign

import (
	"fmt"
	"syscall"
	"time"

	"github.com/leasehold/leasehold/internal/proctest"
)

// The Ranked mode's settings, by default. The stability window is shorter than the engine's
// default (3 L) so that a short campaign sees many preemptions, and long enough to span
// several attempts (8 R); two failed checks make a leader unhealthy (U2), at least one R
// apart, so that a single slow check is not one.
const (
	RankedWindowFactor   = 2
	RankedHealthFailures = 2
)

// The ranked kinds of faults, injected in the Ranked mode only.
const (
	// HealthLeader: the leader's health check fails, until a while after a healthy candidate
	// took over; the handover is bounded by healthBound (U2).
	HealthLeader Kind = "health-leader"
	// Preempt: the worker of the highest priority stops cleanly and starts again once a
	// lower one leads; it must take the lease over within preemptBound of its start (Q2, Q3).
	Preempt Kind = "preempt"
	// HealthFollower: a follower's health check fails for longer than L, then passes again;
	// not bounded, but the follower must not ask to lead meanwhile (Q2, U1).
	HealthFollower Kind = "health-follower"
	// HealthAll: every worker's check fails, the followers' first; the leader must keep
	// leading, and nobody may ask it to hand over, until its own check passes again (U3).
	HealthAll Kind = "health-all"
)

// rankedWeights are the ranked kinds' weights; none is injected over a cluster.
var rankedWeights = []kindWeight{
	{HealthLeader, 2, false, 0},
	{Preempt, 2, false, 0},
	{HealthFollower, 1, false, 0},
	{HealthAll, 1, false, 0},
}

// scheduleWeights returns the kinds of the schedule and their weights.
func scheduleWeights(ranked bool) []kindWeight {
	if !ranked {
		return weights
	}
	return append(append([]kindWeight(nil), weights...), rankedWeights...)
}

// rankedKind reports whether k is a kind of the Ranked mode only.
func rankedKind(k Kind) bool {
	return k == HealthLeader || k == Preempt || k == HealthFollower || k == HealthAll
}

// healthBound bounds the handover of a leader whose check starts failing, from the instant it
// does, plus the slack (U2, and the rules it refers to):
//   - HealthFailures failed checks: the check runs every R (U1), so the first one that fails
//     starts within R of the instant, the last one HealthFailures − 1 R later; the check
//     answers at once. The leader then writes `unhealthy` at once (U2).
//   - up to R until a healthy follower sees that renewal: at once through its watch, within R
//     when it polls (E9); it asks at once, with no stability window (U2).
//   - up to R until the leader sees the request, at its next renewal (Q2, E9: a leader keeps
//     no watch), and it hands over (Q3, R2), once its callbacks have returned (the slack).
//   - up to R until the asker takes the release reserved for it: at once through its watch,
//     at its next attempt when it polls (Q4).
func healthBound(o Options) time.Duration {
	return time.Duration(o.HealthFailures)*o.RenewInterval + 3*o.RenewInterval + o.Slack
}

// preemptBound bounds the preemption of a holder by a candidate of higher priority, from the
// candidate's start, plus the slack (Q2, Q3, and the rules they refer to): its stability window
// (it then attempts at once, reads and asks: Q2), up to R until the holder sees the request
// at its next renewal (Q2) and hands over (Q3, R2) once its callbacks have returned (the
// slack), then up to R until the asker takes the release reserved for it: at once through its
// watch, at its next attempt when it polls (Q4).
func preemptBound(o Options) time.Duration {
	return o.StabilityWindow + 2*o.RenewInterval + o.Slack
}

// injectRanked injects a fault of a ranked kind and waits for what it provokes. It returns
// nil when the fault has no target (the caller settles and picks again).
func (d *driver) injectRanked(kind Kind) (*Fault, error) {
	switch kind {
	case HealthLeader:
		return d.healthLeader()
	case HealthFollower:
		return d.healthFollower()
	case Preempt:
		return d.preempt()
	case HealthAll:
		return d.healthAll()
	}
	return nil, fmt.Errorf("campaign: %s is not a ranked kind", kind)
}

// healthLeader makes the leader's check fail just after one of its renewals and a random part
// of R, waits for another instance to lead, and makes the check pass again a moment later.
func (d *driver) healthLeader() (*Fault, error) {
	target := d.leaderProc()
	if target == nil {
		return nil, nil
	}
	n := d.renews[target.ID]
	if err := d.wait("a renewal by "+target.ID, 4*d.o.LeaseDuration, func() bool { return d.renews[target.ID] > n || d.leader != target.ID }); err != nil {
		return nil, err
	}
	if err := d.sleep(time.Duration(d.rng.Int64N(int64(d.o.RenewInterval)))); err != nil {
		return nil, err
	}
	if target.exited || target.paused || d.leader != target.ID {
		return nil, nil
	}
	f := &Fault{N: len(d.faults) + 1, Kind: HealthLeader, Target: target.ID, Slot: target.slot.n}
	leads := len(d.leads)
	var err error
	if f.Start, err = d.setHealth(target, true); err != nil {
		return f, err
	}
	if _, err = d.nextLead(target.ID, leads, healthBound(d.o)+settleTimeout); err != nil {
		if d.ctx.Err() != nil {
			return f, err
		}
		// No handover: checkRanked reports it on the log. The check passes again, and the
		// campaign goes on.
		d.o.Logf("campaign %s: fault %d: %v", d.o.Backend, f.N, err)
	}
	// A while unhealthy after the handover: it must not ask to lead back meanwhile (Q2, U1).
	if err = d.healthBackAfter(target, f, 2*d.o.RenewInterval+time.Duration(d.rng.Int64N(int64(500*time.Millisecond)))); err != nil {
		return f, err
	}
	f.Takeover = healthHandover(d.o, d.leads, *f)
	return f, nil
}

// healthBackAfter lets target's check fail for wait more, then pass again (unless target
// exited meanwhile): the fault ends then, its length in f.Param.
func (d *driver) healthBackAfter(target *proc, f *Fault, wait time.Duration) error {
	if err := d.sleep(wait); err != nil {
		return err
	}
	f.End = proctest.Now()
	if !target.exited {
		var err error
		if f.End, err = d.setHealth(target, false); err != nil {
			return err
		}
	}
	f.Param = time.Duration(f.End - f.Start)
	return nil
}

// healthFollower makes a random follower's check fail for longer than L, long enough for it to
// count as unhealthy (U2), then pass again.
func (d *driver) healthFollower() (*Fault, error) {
	var fs []*proc
	for _, s := range d.slots {
		if p := s.cur; p != nil && p.ID != d.leader && p.ready && !p.exited && !p.paused && !p.signalled {
			fs = append(fs, p)
		}
	}
	if len(fs) == 0 {
		return nil, nil
	}
	target := fs[d.rng.IntN(len(fs))]
	f := &Fault{N: len(d.faults) + 1, Kind: HealthFollower, Target: target.ID, Slot: target.slot.n}
	leads := len(d.leads)
	var err error
	if f.Start, err = d.setHealth(target, true); err != nil {
		return f, err
	}
	if err = d.healthBackAfter(target, f, d.o.LeaseDuration+100*time.Millisecond+time.Duration(d.rng.Int64N(int64(500*time.Millisecond)))); err != nil {
		return f, err
	}
	// Not bounded: nobody had to move. The checks of every fault hold through it.
	f.Takeover = d.anyTakeover(target.ID, leads, f.Start)
	return f, nil
}

// preempt stops the worker of the highest slot (the highest priority) cleanly, waits until
// the highest of the others leads, starts it again, and waits for it to take the lease over
// (Q2, Q3).
func (d *driver) preempt() (*Fault, error) {
	top := d.slots[len(d.slots)-1]
	old := top.cur
	if old == nil || old.exited || old.paused || old.signalled || !old.ready {
		return nil, nil
	}
	f := &Fault{N: len(d.faults) + 1, Kind: Preempt, Target: old.ID, Slot: top.n, Param: d.o.StabilityWindow}
	f.Start = proctest.Now()
	old.signalled = true
	if err := old.Signal(syscall.SIGTERM); err != nil {
		return f, err
	}
	if err := d.wait("exit of worker "+old.ID, exitTimeout, func() bool { return old.exited }); err != nil {
		return f, err
	}
	if old.stopped == nil || old.stopped.Reason != "ok" || old.err != nil {
		d.problem("fault %d: %s did not stop cleanly on SIGTERM (E7): stopped %v, exit %v", f.N, old.ID, old.stopped, old.err)
	}
	// The joiner must find a holder it outranks and no other candidate that does (Q3: the
	// highest wins, and a second asker may come R later): the highest of the others leads.
	next := func() *proc {
		var best *proc
		for _, s := range d.slots[:len(d.slots)-1] {
			if p := s.cur; p != nil && !p.exited && (best == nil || slotPriority(s.n) > slotPriority(best.slot.n)) {
				best = p
			}
		}
		return best
	}
	if err := d.wait("the highest of the others leading", preemptBound(d.o)+settleTimeout, func() bool {
		p := next()
		return p != nil && d.leader == p.ID
	}); err != nil {
		return f, err
	}
	f.Spawned = proctest.Now()
	joiner, err := d.startProc(top)
	if err != nil {
		return f, err
	}
	f.Joiner, f.Via = joiner.ID, d.leader
	if err := d.wait("ready line of "+joiner.ID, exitTimeout, func() bool { return joiner.ready || joiner.exited }); err != nil {
		return f, err
	}
	f.End = joiner.readyAt
	err = d.wait(joiner.ID+" leading", preemptBound(d.o)+settleTimeout, func() bool { return d.leader == joiner.ID || joiner.exited })
	if err != nil && d.ctx.Err() == nil {
		// No preemption: checkRanked reports it on the log, and the campaign goes on.
		d.o.Logf("campaign %s: fault %d: %v", d.o.Backend, f.N, err)
		err = nil
	}
	f.Takeover = preemption(d.o, d.leads, *f)
	return f, err
}

// healthAll makes every follower's check fail, then, once each has run it and failed (U1: every
// R), the leader's; a while after the leader counts as unhealthy (U2) and its followers have
// seen it, it makes the leader's check pass, and the followers' once the leader has said so in
// its record. From the leader's failure to its recovery no candidate is healthy: the leader
// must keep leading (U3).
func (d *driver) healthAll() (*Fault, error) {
	target := d.leaderProc()
	if target == nil {
		return nil, nil
	}
	var others []*proc
	for _, s := range d.slots {
		p := s.cur
		if p == nil || !p.ready || p.exited || p.paused || p.signalled {
			return nil, nil
		}
		if p != target {
			others = append(others, p)
		}
	}
	f := &Fault{N: len(d.faults) + 1, Kind: HealthAll, Target: target.ID, Slot: target.slot.n}
	for _, p := range others {
		if _, err := d.setHealth(p, true); err != nil {
			return f, err
		}
	}
	settled := d.o.RenewInterval + d.o.Slack
	if err := d.sleep(settled); err != nil {
		return f, err
	}
	restore := func() error {
		for _, p := range others {
			if !p.exited {
				if _, err := d.setHealth(p, false); err != nil {
					return err
				}
			}
		}
		return nil
	}
	if d.leader != target.ID {
		// The lease moved meanwhile (a preemption under way): the new leader already fails,
		// and the old one, still healthy for up to R, would rightly ask it to hand over (U2).
		// Given up: the kind comes again.
		return nil, restore()
	}
	leads := len(d.leads)
	var err error
	if f.Start, err = d.setHealth(target, true); err != nil {
		return f, err
	}
	if err = d.sleep(time.Duration(d.o.HealthFailures+2)*d.o.RenewInterval + time.Duration(d.rng.Int64N(int64(500*time.Millisecond)))); err != nil {
		return f, err
	}
	f.End = proctest.Now()
	if !target.exited {
		if f.End, err = d.setHealth(target, false); err != nil {
			return f, err
		}
	}
	// Its check passes within R, and its next renewal, at once, clears unhealthy (U2): a
	// follower that passed before would ask it to hand over, rightly.
	if err = d.sleep(settled); err != nil {
		return f, err
	}
	if err = restore(); err != nil {
		return f, err
	}
	f.Param = time.Duration(f.End - f.Start)
	f.Takeover = d.anyTakeover(target.ID, leads, f.Start)
	return f, nil
}
