package cluster

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"
)

type leadSpan struct {
	n          *rnode
	term       uint64
	start, end time.Time
	closed     bool
	deadline   time.Time // start of the last successful attempt + (L+R)/2 (E5)
}

type fnSpan struct {
	n          *rnode
	term       uint64
	lead       *leadSpan
	start, end time.Time
	closed     bool
}

func spanOverlap(aStart, aEnd time.Time, aClosed bool, bStart, bEnd time.Time, bClosed bool) bool {
	return (!bClosed || aStart.Before(bEnd)) && (!aClosed || bStart.Before(aEnd))
}

// armedBound is the liveness bound computed at a step where nobody led: someone must lead by
// ref+limit. It is kept to measure how close the next takeover came to it.
type armedBound struct {
	ref   time.Time
	limit time.Duration
	kind  string // "L+R" or "R"
	w     time.Time
	who   string
}

// collect applies what happened since the last step, in the order it happened: writes checked
// by the writeLog, leadership changes (Observer events), fn runs.
func (s *rsim) collect(now time.Time) {
	s.wl.mu.Lock()
	errs := s.wl.errs
	s.wl.errs = nil
	s.wl.mu.Unlock()
	if len(errs) > 0 {
		s.fail("%s", strings.Join(errs, "; "))
	}
	var opened []*leadSpan
	var fnOpened []*fnSpan
	for _, n := range s.active {
		half := (n.l + n.r) / 2 // its own clock's (M1)
		n.mu.Lock()
		evs, marks, errs := n.events, n.fnMarks, n.errs
		n.events, n.fnMarks, n.errs = nil, nil, nil
		n.mu.Unlock()
		if len(errs) > 0 {
			s.fail("%s", strings.Join(errs, "; "))
		}
		for i, ev := range evs {
			switch ev.Kind {
			case BecameLeader:
				if n.open != nil {
					s.fail("%s: BecameLeader (term %d) while leading (term %d)", n.id, ev.Term, n.open.term)
				}
				sp := &leadSpan{n: n, term: ev.Term, start: ev.Time, deadline: n.okStart.Add(half)}
				if !ev.Time.Before(sp.deadline) {
					s.fail("%s: leads from +%v, not before the deadline of the attempt that won it, +%v (E5)", n.id, ev.Time.Sub(s.begin), sp.deadline.Sub(s.begin))
				}
				n.open = sp
				n.spans = append(n.spans, sp)
				if len(n.spans) > 4 {
					n.spans = slices.Delete(n.spans, 0, 1)
				}
				opened = append(opened, sp)
				s.st.leaderships++
				s.note("%s leads, term %d (at +%v)", n.id, ev.Term, ev.Time.Sub(s.begin))
			case StoppedLeading:
				if n.open == nil {
					s.fail("%s: StoppedLeading (%s) while not leading", n.id, ev.Reason)
				}
				// E5 to the instant: a leadership ends at its deadline at the latest, and at
				// exactly its deadline when no attempt renewed it.
				if ev.Time.After(n.open.deadline) || (ev.Reason == ReasonDeadline && !ev.Time.Equal(n.open.deadline)) {
					s.fail("%s: stopped leading (%s) at +%v; its deadline was +%v (E5)", n.id, ev.Reason, ev.Time.Sub(s.begin), n.open.deadline.Sub(s.begin))
				}
				n.open.end, n.open.closed = ev.Time, true
				n.open = nil
				if ev.Reason == ReasonResign {
					n.handOver = true
				}
				s.st.count("stopped leading: "+ev.Reason, 1)
				s.note("%s stops leading: %s (at +%v)", n.id, ev.Reason, ev.Time.Sub(s.begin))
			case AttemptSucceeded:
				s.st.attempts++
				n.okStart = ev.Time.Add(-ev.Duration)
				if n.open != nil {
					n.open.deadline = n.okStart.Add(half)
				}
			case AttemptFailed:
				s.st.attempts++
				s.st.count("failed attempt: "+ev.Reason, 1)
				if (ev.Reason == ReasonTimeout && ev.Duration != n.l-n.r) || (ev.Reason == ReasonLate && ev.Duration < half) {
					s.fail("%s: attempt failed (%s) after %v (E3: timeout at L-R = %v; E5: late from (L+R)/2 = %v)", n.id, ev.Reason, ev.Duration, n.l-n.r, half)
				}
				// E4: a leader whose attempt fails stops leading at once.
				if n.open != nil && (i+1 == len(evs) || evs[i+1].Kind != StoppedLeading || !evs[i+1].Time.Equal(ev.Time)) {
					s.fail("%s: still leading after a failed attempt (%s) at +%v (E4)", n.id, ev.Reason, ev.Time.Sub(s.begin))
				}
			}
		}
		if n.state == nodeCrashed && n.open != nil {
			if !n.leadEnd.Equal(n.open.deadline) {
				s.fail("%s crashed while leading: IsLeader stays true until +%v, its events say until +%v (E5)", n.id, n.leadEnd.Sub(s.begin), n.open.deadline.Sub(s.begin))
			}
			n.open.end, n.open.closed = n.leadEnd, true
			n.open = nil
		}
		for _, m := range marks {
			if !m.start {
				fs := n.fnOpen
				if fs == nil {
					s.fail("%s: fn returned without having started", n.id)
				}
				fs.end, fs.closed = m.at, true
				n.fnOpen = nil
				// fn's context ends when its leadership does: at StoppedLeading, or at the crash.
				if fs.lead.closed && fs.end.After(fs.lead.end) {
					s.fail("%s: fn of term %d ran until +%v, after its leadership ended at +%v", n.id, fs.term, fs.end.Sub(s.begin), fs.lead.end.Sub(s.begin))
				}
				continue
			}
			if n.fnOpen != nil {
				s.fail("%s: fn started while its previous fn ran (W4)", n.id)
			}
			if !m.hasTerm {
				s.fail("%s: fn's context carries no term (W8)", n.id)
			}
			var lead *leadSpan
			for _, sp := range n.spans {
				if sp.term == m.term && !m.at.Before(sp.start) && (!sp.closed || !m.at.After(sp.end)) {
					lead = sp
				}
			}
			if lead == nil {
				s.fail("%s: fn started at +%v with term %d outside any leadership of that term (W3, W8)", n.id, m.at.Sub(s.begin), m.term)
			}
			fs := &fnSpan{n: n, term: m.term, lead: lead, start: m.at}
			n.fnOpen = fs
			fnOpened = append(fnOpened, fs)
		}
	}

	// Leaderships of different instances never overlap (E2, E5, E6), and terms grow when the
	// holder changes (W8).
	// Two leaderships may start at one fake instant (one ends at its deadline as the next
	// begins): the lower term came first.
	slices.SortFunc(opened, func(a, b *leadSpan) int {
		if c := a.start.Compare(b.start); c != 0 {
			return c
		}
		return cmp.Compare(a.term, b.term)
	})
	for _, sp := range opened {
		for _, o := range s.spans {
			if o.n != sp.n && spanOverlap(o.start, o.end, o.closed, sp.start, sp.end, sp.closed) {
				s.fail("two leaders: %s (term %d) from +%v to %s and %s (term %d) from +%v",
					o.n.id, o.term, o.start.Sub(s.begin), s.endText(o.end, o.closed), sp.n.id, sp.term, sp.start.Sub(s.begin))
			}
		}
		if p := s.lastSpan; p != nil {
			if sp.term <= p.term {
				s.fail("term order: %s led term %d from +%v after %s led term %d (W8, E11: every leadership a larger term)", sp.n.id, sp.term, sp.start.Sub(s.begin), p.n.id, p.term)
			}
		}
		s.lastSpan = sp
		s.spans = append(s.spans, sp)
		if a := s.armed; a != nil {
			s.measureTakeover(a, sp)
		}
		s.armed = nil
	}
	s.spans = slices.DeleteFunc(s.spans, func(sp *leadSpan) bool { return sp.closed && !sp.end.After(now) })

	// fns of different instances never run at once.
	slices.SortFunc(fnOpened, func(a, b *fnSpan) int { return a.start.Compare(b.start) })
	for _, fs := range fnOpened {
		for _, o := range s.fnSpans {
			if o.n != fs.n && spanOverlap(o.start, o.end, o.closed, fs.start, fs.end, fs.closed) {
				s.fail("two fns at once: %s (term %d) from +%v to %s and %s (term %d) from +%v",
					o.n.id, o.term, o.start.Sub(s.begin), s.endText(o.end, o.closed), fs.n.id, fs.term, fs.start.Sub(s.begin))
			}
		}
		s.fnSpans = append(s.fnSpans, fs)
	}
	s.fnSpans = slices.DeleteFunc(s.fnSpans, func(fs *fnSpan) bool { return fs.closed && !fs.end.After(now) })
}

func (s *rsim) endText(end time.Time, closed bool) string {
	if !closed {
		return "now"
	}
	return fmt.Sprintf("+%v", end.Sub(s.begin))
}

// measureTakeover records how far from its bound the takeover that ended a leaderless time
// came, when the lease was last written at the time the bound was computed from.
func (s *rsim) measureTakeover(a *armedBound, sp *leadSpan) {
	s.wl.mu.Lock()
	defer s.wl.mu.Unlock()
	for _, w := range s.wl.hist {
		if w.by == sp.n && w.at.Equal(sp.start) && w.prevAt.Equal(a.w) {
			s.st.takeover(a.kind, sp.start.Sub(a.ref), a.limit)
			return
		}
	}
}

// bound returns the liveness bound now in force: for each live instance whose store is clean
// (no fault, no faulty call in flight) since some time, someone must lead by
// max(clean since, its start, last write to the lease) + L + R (E6: it sees the last revision
// within R and takes over L after), or + R when the lease is released, absent, or its own
// (E7, E1). The earliest of those bounds.
func (s *rsim) bound() (armedBound, bool) {
	s.wl.mu.Lock()
	cur := s.wl.cur
	s.wl.mu.Unlock()
	var best armedBound
	found := false
	for _, sl := range s.slots {
		n := sl.cur
		if n == nil {
			continue
		}
		clean, since := n.cleanState()
		if !clean || (cur.holder == n.id && cur.preempt) {
			// (A holder asked to hand over releases once its callbacks have returned, which
			// may take longer than any bound (R2): the asker, or the others as for a crashed
			// holder, take the lease.)
			if clean && n.open == nil {
				// Whatever ended its leadership (a deadline as much as the request), its
				// attempts wait for its callbacks while its record is asked: once the lease
				// moves on, it stays left out until they have returned, as below.
				n.handOver = true
			}
			continue
		}
		if n.handOver {
			// Nor is it counted once the lease has moved on while its callbacks still run:
			// its attempt waits for them (R2) up to L-R, and the next one too. With clocks
			// of their own rates (M1), a fast asker takes the lease over, and hands it on,
			// before that attempt ends.
			n.mu.Lock()
			busy, quiet := n.fnActive != 0 || n.deActive != 0, n.quietAt
			n.mu.Unlock()
			if busy {
				continue
			}
			n.handOver, n.quietRef = false, quiet
		}
		ref := since
		if n.startAt.After(ref) {
			ref = n.startAt
		}
		if n.quietRef.After(ref) {
			ref = n.quietRef
		}
		if cur.at.After(ref) {
			ref = cur.at
		}
		// E9: a faulty watch may hide a write for up to its delay more than R, and a write
		// made while it was faulty stays that late once it is clean.
		slack := n.streamSlack(cur.at, time.Now())
		// Its own L and R, on its clock (M1).
		b := armedBound{ref: ref, limit: n.l + n.r + slack, kind: "L+R", w: cur.at, who: n.id}
		if cur.exists && cur.holder == "" && cur.preempt && cur.next != n.id {
			// Q4: reserved for the asker for R from when this instance first sees it,
			// which is within R.
			b.limit, b.kind = 2*n.r+slack, "2R (a preemption's reservation)"
		} else if !cur.exists || cur.holder == "" || cur.holder == n.id {
			b.limit, b.kind = n.r+slack, "R"
		} else if rev, at := n.seen(); rev == cur.rev && !since.After(at) {
			// E6 to the instant: it has read the holder's current revision on a clean store
			// and stayed clean since, so it takes over exactly L after that read.
			b.ref, b.limit, b.kind = at, n.l, "L"
		}
		if !found || b.ref.Add(b.limit).Before(best.ref.Add(best.limit)) {
			best, found = b, true
		}
	}
	return best, found
}

// checkStep checks the instant now: at most one IsLeader (W7, crashed instances included), each
// instance's IsLeader agrees with its events, and the liveness bound holds.
func (s *rsim) checkStep(now time.Time) {
	var leader *rnode
	liveLeader := false
	for _, n := range s.active {
		is := n.e.IsLeader()
		want := n.open != nil
		if n.state == nodeCrashed {
			want = now.Before(n.leadEnd)
		}
		if is != want {
			s.fail("%s: IsLeader() is %v, its events say %v (W7)", n.id, is, want)
		}
		if !is {
			continue
		}
		if leader != nil {
			s.fail("IsLeader() is true for both %s and %s", leader.id, n.id)
		}
		leader = n
		if n.state == nodeLive {
			liveLeader = true
		}
	}
	if liveLeader {
		s.armed = nil
		return
	}
	b, ok := s.curBound, s.hasBound
	if !ok {
		s.armed = nil
		return
	}
	s.st.boundSteps++
	if !now.Before(b.ref.Add(b.limit)) {
		s.wl.mu.Lock()
		cur := s.wl.cur
		s.wl.mu.Unlock()
		who := s.byID(b.who)
		s.fail("no leader at +%v, though %s has had a clean store since +%v, started at +%v, and the lease (holder %q, term %d) was last written at +%v: someone must lead by +%v (%s)\n%s's recent calls and events:\n%s",
			now.Sub(s.begin), b.who, b.ref.Sub(s.begin), who.startAt.Sub(s.begin), cur.holder, cur.term, cur.at.Sub(s.begin), b.ref.Add(b.limit).Sub(s.begin), b.kind, b.who, who.recentTrail())
	}
	s.armed = &b
}

// pollStops collects the results of Stop calls and checks E7 and W3 on them.
func (s *rsim) pollStops(now time.Time) {
	for _, n := range s.active {
		if n.state != nodeStopping {
			continue
		}
		select {
		case err := <-n.stopDone:
			s.stopped(n, err)
		default:
		}
	}
	s.active = slices.DeleteFunc(s.active, func(n *rnode) bool { return s.retired(n, now) })
}

func (s *rsim) stopped(n *rnode, err error) {
	n.state, n.stopResult = nodeStopped, true
	n.mu.Lock()
	fnCount, deCount, released := n.fnCount, n.deCount, slices.Clone(n.released)
	n.mu.Unlock()
	s.wl.mu.Lock()
	holder := s.wl.cur.holder
	s.wl.mu.Unlock()
	s.note("%s: Stop returned %v", n.id, err)
	quick := n.stopLead && n.stopClean && n.deDelay == 0
	if err != nil {
		// A release whose answer was lost (write-then-hang) is applied yet reported as an
		// error: E7 is checked on the release attempt instead, by trackStore.
		s.st.stopErrors++
		return
	}
	if fnCount != deCount {
		s.fail("%s: Stop returned nil after %d fn and %d deregistered calls (W3)", n.id, fnCount, deCount)
	}
	// E7: a Stop that returns nil leaves no lease behind, even when the answer of its last
	// write was lost (TestRegressStopAfterLostCreateAnswerAndFailedRead).
	if holder == n.id {
		s.fail("%s: Stop returned nil and the lease is still held by it (E7)", n.id)
	}
	// A leader with a clean store and quick callbacks hands the lease back at once (E7).
	if quick && (len(released) != 1 || !released[0].Equal(n.stopAt)) {
		s.fail("%s: stopped while leading with a clean store at +%v; releases at %v, want one at once (E7)", n.id, n.stopAt.Sub(s.begin), released)
	}
}

// retired says whether n can no longer lead, call the store or run a callback.
func (s *rsim) retired(n *rnode, now time.Time) bool {
	switch n.state {
	case nodeStopped:
	case nodeCrashed:
		if now.Before(n.leadEnd) {
			return false
		}
	default:
		return false
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.inflight == 0 && n.fnActive == 0 && n.deActive == 0 && len(n.events) == 0 && len(n.fnMarks) == 0
}
