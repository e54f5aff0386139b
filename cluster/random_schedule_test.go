package cluster

import (
	"context"
	"fmt"
	"time"
)

// dueTimes are the instants at which something is scheduled: the next step lands on them.
func (s *rsim) dueTimes() []time.Time {
	ts := []time.Time{s.phaseEnd, s.nextAction, s.end}
	if s.jumpRng != nil {
		ts = append(ts, s.nextJump)
	}
	if s.aimedNode != nil {
		ts = append(ts, s.aimedAt)
	}
	for _, sl := range s.slots {
		if sl.cur == nil && !sl.restartAt.IsZero() {
			ts = append(ts, sl.restartAt)
		}
	}
	for _, n := range s.active {
		if !n.healAt.IsZero() {
			ts = append(ts, n.healAt)
		}
		if !n.streamHealAt.IsZero() {
			ts = append(ts, n.streamHealAt)
		}
		if n.state == nodeCrashed {
			// W7 to the instant: a crashed leader's IsLeader is true until its deadline and
			// false from it, with no goroutine of its own left to notice.
			ts = append(ts, n.leadEnd.Add(-time.Nanosecond), n.leadEnd)
		}
	}
	return ts
}

// act runs what is due now: heals, restarts, a change of phase, a random action.
func (s *rsim) act(now time.Time) {
	for _, n := range s.active {
		if !n.healAt.IsZero() && !now.Before(n.healAt) {
			s.heal(n)
		}
		if !n.streamHealAt.IsZero() && !now.Before(n.streamHealAt) {
			s.streamHeal(n)
		}
	}
	for _, sl := range s.slots {
		if sl.cur == nil && !sl.restartAt.IsZero() && !now.Before(sl.restartAt) {
			s.startNode(sl)
		}
	}
	if !now.Before(s.phaseEnd) {
		s.calm = !s.calm
		s.phaseEnd = now.Add(s.between(8*s.l, 40*s.l))
		if s.calm {
			// A calm phase: no new fault, so the liveness bounds get checked over long runs of
			// crashes and stops with healthy stores.
			for _, n := range s.active {
				if !n.healAt.IsZero() {
					s.heal(n)
				}
				if !n.streamHealAt.IsZero() {
					s.streamHeal(n)
				}
			}
		}
		s.dirty = true
		s.note("phase: calm=%v until +%v", s.calm, s.phaseEnd.Sub(s.begin))
	}
	if s.aimedNode != nil && !now.Before(s.aimedAt) {
		s.fireAimed()
	}
	if s.jumpRng != nil && !now.Before(s.nextJump) {
		s.wallJump(now)
	}
	if now.Before(s.nextAction) {
		return
	}
	s.dirty = true
	if b := s.curBound; s.hasBound && b.kind != "L+R" && s.aimedNode == nil && s.rng.IntN(8) == 0 {
		if at := b.ref.Add(b.limit); at.After(now) {
			s.aimedAt, s.aimedNode, s.aimedCrash = at, s.byID(b.who), s.rng.IntN(2) == 0
			s.note("aim a crash=%v of %s at +%v", s.aimedCrash, b.who, at.Sub(s.begin))
		}
	}
	if s.calm {
		s.nextAction = now.Add(s.between(s.l+s.r, 4*(s.l+s.r)))
		switch p := s.rng.IntN(10); {
		case p < 4:
			s.crash(s.target(75))
		case p < 8:
			s.stop(s.target(75), true)
		}
		return
	}
	s.nextAction = now.Add(s.between(s.r/10, 2*s.l))
	live := s.live()
	switch p := s.rng.IntN(100); {
	case p < 40:
		if len(live) > 0 {
			s.fault(live[s.rng.IntN(len(live))], "")
		}
	case p < 55:
		if len(live) > 0 {
			s.streamFault(live[s.rng.IntN(len(live))])
		}
	case p < 65:
		s.partition(live)
	case p < 80:
		s.crash(s.target(50))
	case p < 95:
		s.stop(s.target(50), true)
	default:
		for _, n := range s.active {
			if !n.healAt.IsZero() {
				s.heal(n)
			}
		}
	}
}

// fireAimed crashes or stops the instance aimed at. The main loop calls it as soon as the clock
// reaches the instant, before synctest.Wait, so that it races with the instance's attempt due
// then: either may come first, or Stop may find the attempt's answer waiting.
func (s *rsim) fireAimed() {
	n := s.aimedNode
	s.aimedNode = nil
	s.dirty = true
	if n.state != nodeLive {
		return
	}
	s.st.count("actions at the instant of a takeover", 1)
	if s.aimedCrash {
		s.crash(n)
	} else {
		s.stop(n, true)
	}
}

// target picks a live instance: the leader with probability pct%, else any.
func (s *rsim) target(pct int) *rnode {
	live := s.live()
	if len(live) == 0 {
		return nil
	}
	if s.rng.IntN(100) < pct {
		for _, n := range live {
			if n.e.IsLeader() {
				return n
			}
		}
	}
	return live[s.rng.IntN(len(live))]
}

var faultKinds = []string{"latency-small", "latency-band", "latency-high", "error", "hang", "hang-ignoring-ctx", "write-then-hang"}

// fault gives n a fault of the kind (a random one when empty) until a random heal.
func (s *rsim) fault(n *rnode, kind string) {
	if kind == "" {
		kind = faultKinds[s.rng.IntN(len(faultKinds))]
	}
	l, r := n.l, n.r // around its own timeout and deadline
	var latency time.Duration
	switch kind {
	case "latency-small": // attempts succeed, only slower
		latency = s.between(time.Millisecond, (l-r)/4)
	case "latency-band": // attempts of two calls end around their timeout L-R and deadline (L+R)/2
		lo, hi := min(l-r, (l+r)/2)/2, max(l-r, (l+r)/2)/2
		latency = s.between(lo-r/4, hi+r/4)
	case "latency-high": // every call times out
		latency = s.between(l-r, 2*l)
	}
	s.heal(n) // lets calls blocked past their context go on before the new fault
	n.mu.Lock()
	n.f.Set(func(f *faultStore) {
		switch kind {
		case "latency-small", "latency-band", "latency-high":
			f.Latency = latency
		case "error":
			f.Err = fmt.Errorf("store of %s: %w", n.id, errInjected)
		case "hang":
			f.Hang = true
		case "hang-ignoring-ctx":
			f.Hang, f.Ignore = true, true
		case "write-then-hang":
			f.WriteThenHang = true
		}
	})
	n.clean = false
	n.mu.Unlock()
	n.healAt = time.Now().Add(s.between(r/4, 3*l))
	s.dirty = true
	s.st.count("fault: "+kind, 1)
	if latency > 0 {
		s.note("fault %s on %s (%v) until +%v", kind, n.id, latency, n.healAt.Sub(s.begin))
	} else {
		s.note("fault %s on %s until +%v", kind, n.id, n.healAt.Sub(s.begin))
	}
}

// partition cuts a random subset of the live instances off the store, all until one heal.
func (s *rsim) partition(live []*rnode) {
	if len(live) == 0 {
		return
	}
	s.rng.Shuffle(len(live), func(i, j int) { live[i], live[j] = live[j], live[i] })
	cut := live[:1+s.rng.IntN(len(live))]
	kind := []string{"error", "hang", "hang-ignoring-ctx"}[s.rng.IntN(3)]
	healAt := time.Now().Add(s.between(s.r, 3*s.l))
	for _, n := range cut {
		s.fault(n, kind)
		n.healAt = healAt
	}
	s.st.count("partitions", 1)
	s.note("partition of %d instances until +%v", len(cut), healAt.Sub(s.begin))
}

func (s *rsim) heal(n *rnode) {
	n.f.Heal()
	n.mu.Lock()
	n.maybeCleanLocked()
	n.mu.Unlock()
	n.healAt = time.Time{}
	s.dirty = true
}

// crash ends n as a SIGKILL would: no callback, no release; its IsLeader stays true until its
// leadership's deadline (E5), and a call it had in flight may still reach the store.
func (s *rsim) crash(n *rnode) {
	if n == nil {
		return
	}
	now := time.Now()
	wasLeader := n.e.IsLeader()
	n.crashed.Store(true)
	(&node{t: s.t, e: n.e, faults: n.f}).crash()
	n.state, n.leadEnd = nodeCrashed, now
	if l := n.e.leading.Load(); l != nil && now.Before(l.deadline) {
		n.leadEnd = l.deadline
	}
	// Its leadership, if any, is closed at leadEnd by the next collect, once its last events
	// are in.
	n.slot.cur = nil
	n.slot.restartAt = now.Add(s.between(0, 6*s.l))
	s.dirty = true
	s.st.crashes++
	if wasLeader {
		s.st.crashesOfLeader++
	}
	s.note("crash %s (leader %v, IsLeader until +%v); restart at +%v", n.id, wasLeader, n.leadEnd.Sub(s.begin), n.slot.restartAt.Sub(s.begin))
}

// stop calls n's Stop on a goroutine of its own, with a random timeout, sometimes after
// cancelling its Start context: E7 is checked when it returns.

func (s *rsim) stop(n *rnode, allowCancel bool) {
	if n == nil {
		return
	}
	now := time.Now()
	timeout := []time.Duration{s.r / 2, s.l - s.r, 2 * s.l, 10 * s.l}[s.rng.IntN(4)]
	byCancel := allowCancel && s.rng.IntN(4) == 0
	n.stopLead = n.e.IsLeader()
	n.stopClean, _ = n.cleanState()
	n.state, n.stopAt = nodeStopping, now
	n.stopping.Store(true)
	n.stopDone = make(chan error, 1)
	go func() {
		var err error
		if byCancel {
			// Cancelling Start's context ends the election as Stop does, with its own bound;
			// the Stop that follows finishes what that bound left undone, and its result is
			// checked as any Stop's.
			n.cancel()
			<-n.e.Done()
			ctx, cancel := context.WithTimeout(context.Background(), timeout)
			err = n.e.Stop(ctx)
			cancel()
		} else {
			ctx, cancel := context.WithTimeout(context.Background(), timeout)
			err = n.e.Stop(ctx)
			cancel()
		}
		n.stopReturns.Store(true)
		n.stopDone <- err
		n.gen.Add(1)
	}()
	n.slot.cur = nil
	n.slot.restartAt = now.Add(s.between(0, 6*s.l))
	s.dirty = true
	s.st.stops++
	if n.stopLead {
		s.st.stopsOfLeader++
	}
	if byCancel {
		s.st.count("stops by cancelling Start's context", 1)
		s.note("cancel %s's Start context (leader %v); restart at +%v", n.id, n.stopLead, n.slot.restartAt.Sub(s.begin))
	} else {
		s.note("stop %s (leader %v, timeout %v); restart at +%v", n.id, n.stopLead, timeout, n.slot.restartAt.Sub(s.begin))
	}
}

// wallJump moves a random live instance's wall clock an hour forward or back (M2), in calm
// phases too: the wall clock is no fault, and no bound makes room for it.
func (s *rsim) wallJump(now time.Time) {
	s.nextJump = now.Add(s.r + time.Duration(s.jumpRng.Int64N(int64(4*s.l-s.r)+1)))
	live := s.live()
	if len(live) == 0 {
		return
	}
	n := live[s.jumpRng.IntN(len(live))]
	d := time.Hour
	if s.jumpRng.IntN(2) == 0 {
		d = -d
	}
	n.e.wallSkew.Add(int64(d))
	s.st.count("wall clock jumps", 1)
	s.note("%s: wall clock jumps by %v, to %v from the fake clock", n.id, d, time.Duration(n.e.wallSkew.Load()))
}
