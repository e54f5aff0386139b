package cluster

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// attempt is one read-then-write of the lease (E2), running on a goroutine of its own so that
// the election goroutine keeps its deadlines while the backend is slow.
type attempt struct {
	start  time.Time
	cancel context.CancelFunc
	done   chan outcome // buffered: the attempt never blocks on sending
	failed bool         // declared failed by its timeout (E3); its outcome is ignored
}

type outcomeKind int

const (
	held     outcomeKind = iota + 1 // this instance holds the lease (created, renewed, took over)
	followed                        // another instance holds it and it has not expired
	failed                          // error, lost race or timeout
)

type outcome struct {
	kind outcomeKind
	rec  Record    // the record held (held) or seen (followed)
	at   time.Time // when the answer came
	err  error     // for failed
	// stale, for failed: a release written on a record not read just before (known, or read
	// before waiting for the callbacks) found it changed or gone; the attempt reads once more
	// and decides again (E10, R2, H2).
	stale bool
	// returned is when the attempt returned the outcome, which may be after at (E3).
	returned time.Time
}

// observation is the last revision of another holder's record seen by this instance, and when
// it expires, on this instance's monotonic clock (E6).
type observation struct {
	rec     Record // the record itself, to take it over without reading it again (E10)
	rev     string
	holder  string
	term    uint64
	expires time.Time
}

// observe returns the observation of rec, first seen at seenAt. The record stays valid for the
// longer of this instance's L and the duration its holder declared: a holder configured with a
// longer lease still leads for (its L + its R)/2 after each renewal, which may outlast this
// instance's L, and taking over then would make two leaders. A holder that declares a shorter
// duration (or none) stopped leading before its own L, so waiting this instance's L for it costs
// time, never safety.
//
// A release that answers a preemption is reserved for the candidate that asked for R only
// (Q4): that candidate was writing a moment before, and takes it at once; should it have died
// since, the others take the lease R later rather than D.
func (e *Elector) observe(rec Record, seenAt time.Time) observation {
	d := max(e.l, rec.Duration)
	if rec.Holder == "" && rec.Preempt && rec.NextHolder != "" {
		d = e.r
	}
	return observation{rec: rec, rev: rec.Revision, holder: rec.Holder, term: rec.Term, expires: seenAt.Add(d)}
}

// run is the election goroutine: it starts attempts, keeps the leadership deadline and
// handles Stop. All election state lives in its local variables.
func (e *Elector) run(startCtx context.Context) {
	defer close(e.runDone)
	defer e.exit() // before runDone: a Stop that sees runDone sees done too, unless the watch is late
	base := context.WithoutCancel(startCtx)
	// E9: the watch starts when the instance first follows another holder, so an instance
	// that leads all its leases (many leases in one process) keeps no watch; it is ended as
	// the shutdown begins, and done is closed once it has returned too (Stop waits for it
	// within its context).
	var mb *mailbox
	watching, stopWatch := false, func() {}
	defer func() { stopWatch() }()
	e.rank.startedAt = time.Now()
	stopHealth := e.startHealth(base) // U1-U3; ended with the watch
	defer stopHealth()
	var (
		s       = sched{next: time.Now()} // when the next attempt may start (E1), and why
		pending *attempt                  // the attempt in flight, if any
		timer   = time.NewTimer(time.Hour)
	)
	defer timer.Stop()
	for {
		now := time.Now()
		lead := e.leading.Load()
		if lead != nil && !now.Before(lead.deadline) {
			// E5: no attempt succeeded within (L+R)/2 of the start of the last successful
			// one; IsLeader already says false, now the callbacks learn it too.
			e.stopLeading(ReasonDeadline, nil)
			lead = nil
		}
		if pending != nil && !pending.failed && !now.Before(pending.start.Add(e.l-e.r)) {
			// E3: no answer within L-R. The attempt stays in flight until it returns (attempts
			// never overlap), but it has failed, and a leader stops leading at once (E4).
			e.timeOut(pending, now)
			lead = nil
		}
		if mb != nil {
			// E9: the watch's latest heartbeat, which does not wake this goroutine: it only
			// puts the next read off.
			s.push.beat(mb.alive())
		}
		var due time.Time
		if pending == nil {
			var known *Record
			if due, known = e.due(&s, now); !now.Before(due) {
				at, ok := e.askAt(s.obs.rec)
				pending = e.startAttempt(base, now, s.obs, known, lead != nil, ok && !now.Before(at))
				s.next, s.lastStart, s.soon = now.Add(e.r), now, false
			}
		}

		// Sleep until the earliest of: the leadership deadline, the attempt's timeout, the
		// next attempt.
		var wake time.Time
		consider := func(t time.Time) {
			if wake.IsZero() || t.Before(wake) {
				wake = t
			}
		}
		if lead != nil {
			consider(lead.deadline)
		}
		if pending != nil && !pending.failed {
			consider(pending.start.Add(e.l - e.r))
		}
		if pending == nil {
			consider(due)
		}
		var tc <-chan time.Time
		if !wake.IsZero() {
			timer.Reset(wake.Sub(now))
			tc = timer.C
		}
		var pc <-chan outcome
		var mc <-chan struct{}
		if pending != nil {
			pc = pending.done
		} else if mb != nil {
			// The watch's calls wait in the mailbox while an attempt is in flight: they are
			// judged against its outcome.
			mc = mb.ready
		}

		select {
		case <-tc:
		case <-e.poke:
			s.soon = true // a gate opened (D6): attempt now rather than at the next R
		case <-e.rank.wake:
			// The health check's verdict changed (U1, U2): a leader writes it into its
			// record at once; a candidate that passes again may take a free lease at once.
			s.soon = true
		case <-mc:
			ev, up := mb.take()
			s.push.up = up
			if ev != nil {
				e.onPush(&s, ev)
			}
		case out := <-pc:
			a := pending
			pending = nil
			if !a.failed && !out.returned.Before(a.start.Add(e.l-e.r)) {
				// E3 as above: an attempt that returned at L-R or later had no answer within
				// it, whether this goroutine woke for its outcome or for the timeout first. An
				// attempt whose context ends at L-R returns at that very instant; which of the
				// two ready cases this select takes is chance, and must not decide the reason.
				e.timeOut(a, out.returned)
			}
			a.cancel()
			if a.failed {
				s.known = nil
				continue // already counted as failed by its timeout
			}
			switch out.kind {
			case held:
				s.obs, s.known = observation{}, &out.rec
				s.push.read(out.rec)
				if !e.held(base, a, out) {
					s.soon = true // E11: that term was led already: write a new one at once
				}
			case followed:
				s.known = nil
				e.checkTwin(out.rec)
				if !watching {
					watching = true
					mb, stopWatch = e.startWatch(base)
				}
				s.push.read(out.rec)
				if lead := e.leading.Load(); lead != nil {
					e.stopLeading(ReasonTakenBy, nil)
				}
				e.emit(Event{Kind: AttemptSucceeded, Holder: out.rec.Holder, Term: out.rec.Term, Duration: out.at.Sub(a.start)})
				if out.rec.Revision != s.obs.rev {
					if out.rec.Holder != s.obs.holder || out.rec.Term != s.obs.term {
						e.log.Info("leasehold: observed leader", "holder", out.rec.Holder, "term", out.rec.Term)
						e.emit(Event{Kind: ObservedLeader, Holder: out.rec.Holder, Term: out.rec.Term})
					}
					s.obs = e.observe(out.rec, out.at)
					e.emit(Event{Kind: ObservedRevision, Holder: out.rec.Holder, Term: out.rec.Term, Time: out.at})
				}
				// E6: the next attempt comes the moment that revision expires, if before the
				// next regular one (see due).
			case failed:
				s.known = nil
				reason := failReason(out.err) // hook (resign.go): error, conflict or resign (R2)
				e.attemptFailed(reason, out.err, out.at.Sub(a.start))
				if e.leading.Load() != nil {
					e.stopLeading(reason, out.err) // E4
				}
				if reason == ReasonResign {
					// R2: release without waiting R: the next attempt waits for the
					// callbacks that stopLeading just ended, then releases.
					s.soon = true
				}
			}
		case ctx := <-e.stopReq:
			stopWatch() // it returns while the shutdown goes on
			stopHealth()
			e.stopErr <- e.shutdown(ctx, pending, s.known)
			return
		case <-startCtx.Done():
			// Nothing waits for this shutdown, so it is bounded by L-R. A Stop called now or
			// later waits for it, then finishes what it left undone: whether the attempt in
			// flight was drained is recorded, as its outcome can be read only once.
			close(e.ending)
			stopWatch()
			stopHealth()
			ctx, cancel := context.WithTimeout(base, e.l-e.r)
			e.stopLeading(ReasonStop, nil)
			known := s.known
			if pending != nil {
				known = nil // the outcome drained below is not looked at: read before releasing
				pending.cancel()
				select {
				case <-pending.done:
					pending = nil
				case <-ctx.Done():
				}
			}
			var err error
			if pending != nil {
				err = fmt.Errorf("cluster: lease %q: stop: an attempt is still waiting for the lock, lease not released: %w", e.name, ctx.Err())
			} else {
				err = e.shutdown(ctx, nil, known)
			}
			cancel()
			if err != nil {
				e.log.Warn("leasehold: election ended by its context", "error", err)
			}
			e.leftover = leftover{err: err, pending: pending}
			return
		case <-e.halt:
			if l := e.leading.Load(); l != nil {
				l.cancel()
			}
			return
		}
	}
}

// timeOut declares that attempt a had no answer within L-R (E3): it failed at now, and a
// leader stops leading at once (E4).
func (e *Elector) timeOut(a *attempt, now time.Time) {
	a.failed = true
	a.cancel()
	err := fmt.Errorf("cluster: lease %q: no answer within %v", e.name, e.l-e.r)
	e.attemptFailed(ReasonTimeout, err, now.Sub(a.start))
	e.stopLeading(ReasonTimeout, err)
}

// held handles an attempt that left this instance holding the lease. It returns false when
// the record holds a term this instance led already, which it never leads on again (E11):
// the next attempt, at once, writes a new one.
func (e *Elector) held(base context.Context, a *attempt, out outcome) bool {
	deadline := a.start.Add((e.l + e.r) / 2)
	e.emit(Event{Kind: AttemptSucceeded, Holder: e.id, Term: out.rec.Term, Duration: out.at.Sub(a.start)})
	lead := e.leading.Load()
	if !out.at.Before(deadline) {
		// E5: the answer came too late to lead on: the lease may have expired for the others
		// before it arrived.
		err := fmt.Errorf("cluster: lease %q: attempt succeeded after its deadline", e.name)
		e.attemptFailed(ReasonLate, err, out.at.Sub(a.start))
		if lead != nil {
			e.stopLeading(ReasonLate, err)
		}
		return true
	}
	if lead != nil && !time.Now().Before(lead.deadline) {
		// The deadline passed before this answer was handled: IsLeader already said false
		// and registrations made since got no fn, so that leadership is over (E5, W7). The
		// renewal, on time for its own deadline, starts a new one.
		e.stopLeading(ReasonDeadline, nil)
		lead = nil
	}
	if lead != nil && lead.term == out.rec.Term {
		e.leading.Store(&leadership{term: lead.term, deadline: deadline, ctx: lead.ctx, cancel: lead.cancel})
		e.log.Debug("leasehold: renewed", "term", out.rec.Term)
		return true
	}
	if lead != nil {
		e.stopLeading(ReasonTakenBy, nil)
	}
	if out.rec.Term <= e.lastLed {
		// A renewal whose answer came after its leadership ended: leading on it would give
		// a second leadership the term of the first (E11).
		e.log.Info("leasehold: not leading again on a term already led: writing a new term", "term", out.rec.Term, "lastLed", e.lastLed)
		return false
	}
	e.lastLed = out.rec.Term
	ctx, cancel := context.WithCancel(withTerm(base, out.rec.Term))
	e.leading.Store(&leadership{term: out.rec.Term, deadline: deadline, ctx: ctx, cancel: cancel})
	e.log.Info("leasehold: became leader", "term", out.rec.Term)
	e.emit(Event{Kind: ObservedLeader, Holder: e.id, Term: out.rec.Term, Time: out.at})
	e.emit(Event{Kind: BecameLeader, Term: out.rec.Term, Time: out.at})
	e.cb.startLeading(ctx)
	return true
}

func (e *Elector) stopLeading(reason string, err error) {
	l := e.leading.Swap(nil)
	if l == nil {
		return
	}
	l.cancel()
	now := time.Now()
	e.rank.stoppedAt = now // a new stability window (Q2)
	at := now
	if now.After(l.deadline) {
		// This goroutine comes late (an overloaded process, a slow Observer): IsLeader turned
		// false at the deadline (W7), which is when, and why, the leadership ended.
		at, reason = l.deadline, ReasonDeadline
	}
	e.cb.stopLeading()
	if err != nil {
		e.log.Info("leasehold: stopped leading", "term", l.term, "reason", reason, "error", err)
	} else {
		e.log.Info("leasehold: stopped leading", "term", l.term, "reason", reason)
	}
	e.emit(Event{Kind: StoppedLeading, Term: l.term, Reason: reason, Err: err, Time: at})
}

// errLostCreation marks a Create beaten by another instance's: replicas that start together
// race to create the record, all but one lose, and their next attempt follows the winner.
var errLostCreation = errors.New("another instance created the lease first")

func (e *Elector) attemptFailed(reason string, err error, d time.Duration) {
	if errors.Is(err, errLostCreation) {
		e.log.Info("leasehold: lost the race to create the lease", "error", err)
	} else if errors.Is(err, ErrResignRequested) { // hook (resign.go): not a failure of the store (R2)
		e.log.Info("leasehold: resign requested: stepping down", "error", err)
	} else {
		e.log.Warn("leasehold: attempt failed", "reason", reason, "error", err) // E8
	}
	e.emit(Event{Kind: AttemptFailed, Reason: reason, Err: err, Duration: d})
}

// startAttempt starts an attempt; leading says whether this instance leads at its start: only
// then does finding its own record renew it (E11). ask says whether it may ask a holder it
// outranks to hand over (Q2): the times of askAt have come.
func (e *Elector) startAttempt(base context.Context, now time.Time, obs observation, known *Record, leading, ask bool) *attempt {
	ctx, cancel := context.WithTimeout(base, e.l-e.r)
	a := &attempt{start: now, cancel: cancel, done: make(chan outcome, 1)}
	go func() {
		out := e.try(ctx, obs, known, leading, ask)
		out.returned = time.Now()
		a.done <- out
	}()
	return a
}

// try reads the record and acts on it (E2). Every write is a compare-and-swap; a lost race
// is a failed attempt, and the next one will follow. With a known record, it first writes on
// it without reading, and reads only when that record changed since (E10). leading says whether
// the instance led at the attempt's start: its own record is renewed only then, and written
// with a new term otherwise (E11).
func (e *Elector) try(ctx context.Context, obs observation, known *Record, leading, ask bool) outcome {
	if ask {
		// Whether or not the record read still calls for it, this was the chance to ask: the
		// next comes R later (Q2), never in a loop of attempts.
		e.rank.asked = time.Now()
	}
	reread := false // a release found its record changed, and the attempt read once more
	// A known record whose revision no Lock wrote (a slot refused or missing, H2) is read.
	if known != nil && !madeUp(known.Revision) {
		// A known record is decided on as a read one is (the hook: a reservation, a slot this
		// instance may not take), then written without a read (E10).
		k := *known
		out, done := e.onRead(ctx, &k, nil, obs, time.Now())
		switch {
		case done && out.stale:
			// A release written on the known record conflicted (R2, H2): read once and decide
			// again, within this attempt's deadline, as a renewal does (E10).
			reread = true
		case done:
			return out
		default:
			if out, ok := e.tryKnown(ctx, k, leading); ok {
				return out
			}
		}
	}
	fail := func(err error) outcome { return outcome{kind: failed, err: err, at: time.Now()} }
	var (
		rec Record
		err error
		now time.Time
	)
	seen := e.seen.Load() // before this read's term counts (B2)
	askedAgain := false   // a request lost its race, and the attempt read once more (Q2)
read:
	for {
		rec, err = e.lock.Get(ctx, e.name)
		now = time.Now()
		if err == nil && wentBack(rec, seen, obs, now, e.owns(rec)) {
			e.unclaim()
			return outcome{kind: followed, rec: rec, at: now}
		}
		if err == nil {
			e.see(rec.Term)
		}
		// Hook (resign.go): a resign request, a reserved release, a slot of N holders this
		// instance may not hold; it may answer the attempt itself (R2-R4, H2). Keep this call
		// on every record (or error) read or known before deciding by E2.
		out, done := e.onRead(ctx, &rec, err, obs, now)
		if !done {
			break
		}
		if out.stale && !reread {
			// The release conflicted: the record changed while the callbacks were awaited.
			reread = true
			continue
		}
		return out
	}
	wall := stamp(e.wall(now), Record{})
	switch {
	case errors.Is(err, ErrNotFound):
		e.wrote.Store(true)
		// E11: above every term this instance has seen, and the wall clock's floor: a record
		// lost with its term (a store restarted empty, a deleted row) does not go back to 1.
		created, err := e.lock.Create(ctx, e.name, e.carry(Record{
			Holder: e.id, Session: e.session, Term: e.nextTerm(0, now), AcquiredAt: wall, RenewedAt: wall, Duration: e.l,
		}))
		if errors.Is(err, ErrConflict) {
			err = fmt.Errorf("%w: %w", errLostCreation, err)
		}
		if err != nil {
			return fail(err)
		}
		e.see(created.Term)
		return outcome{kind: held, rec: created, at: time.Now()}
	case err != nil:
		return fail(err)
	case e.owns(rec), rec.Holder == "" || (rec.Revision == obs.rev && !now.Before(obs.expires)):
		// Its own (renew, or a new term when not leading), or released, or expired on this
		// instance's own clock (E6): take over. A record naming this instance ID with another
		// session is another process's (E12): followed until it expires.
		rec = e.takeOrRenew(rec, now, leading)
	default:
		if ok, _ := e.askable(rec); ok && ask {
			// Q2, U2: a holder this instance outranks, or that reports itself unhealthy.
			// The request is a revision first seen once written (E6), not at the read.
			var lost bool
			if rec, now, lost = e.ask(ctx, rec, now); lost && !askedAgain {
				// Another write landed between the read and the request: the holder's
				// renewal at this very instant, most often. Which of two goroutines due at
				// one instant writes first is the scheduler's choice; reading once more and
				// asking on what is found makes the request land at this instant either way,
				// rather than R later.
				askedAgain = true
				goto read
			}
		}
		return outcome{kind: followed, rec: rec, at: now}
	}
	e.wrote.Store(true)
	updated, err := e.lock.Update(ctx, e.name, rec)
	if err != nil {
		return fail(err)
	}
	e.see(updated.Term)
	return outcome{kind: held, rec: updated, at: time.Now()}
}

// wentBack says whether rec, free to take at once by E2 (released, or this instance's own), is
// a state the store went back to (B2): its term is below one this instance has seen, which no
// write of the lease makes (a release keeps its term, every new leadership writes a higher
// one), but a store that lost acknowledged writes (an asynchronous replica promoted) does. The
// leader of that lost term may still lead until its deadline: the record is followed as a new
// revision first seen now, and taken only once it has expired (E6), with a term above the
// highest seen (E11).
func wentBack(rec Record, seen uint64, obs observation, now time.Time, own bool) bool {
	if rec.Term >= seen || (rec.Holder != "" && !own) {
		return false
	}
	return rec.Revision != obs.rev || now.Before(obs.expires)
}

// shutdown ends the election (E7): stop leading, wait for the attempt in flight and for the
// callbacks, then release the lease if this instance holds it. known is the record the last
// attempt left this instance holding (nil if none, or if that is not known).
func (e *Elector) shutdown(ctx context.Context, pending *attempt, known *Record) error {
	e.stopLeading(ReasonStop, nil)
	if pending != nil {
		pending.cancel()
		select {
		case out := <-pending.done:
			known = nil
			if !pending.failed && out.kind == held {
				known = &out.rec
			}
		case <-ctx.Done():
			return fmt.Errorf("cluster: lease %q: stop: an attempt is still waiting for the lock, lease not released: %w", e.name, ctx.Err())
		}
	}
	if err := e.cb.wait(ctx); err != nil {
		return fmt.Errorf("cluster: lease %q: stop: leader callbacks have not returned, lease not released (it expires by itself): %w", e.name, err)
	}
	rctx, cancel := context.WithTimeout(ctx, e.l-e.r)
	defer cancel()
	return e.release(rctx, known)
}

// release empties the holder of the record if this instance holds it. Given the record its
// last attempt left it holding, it writes on that revision without reading (E10): the
// compare-and-swap lands only if the record is still the one it wrote, and the followers,
// whose watch reports the release, wait for no read on the critical path of a handover.
// Otherwise, and after that write conflicts, it reads the record rather than trusting the
// last answer it got: a write whose answer was lost (a cancelled attempt, a cut connection)
// may have landed. It reads again after a lost race. When the read fails, an instance that
// ever wrote the record cannot tell whether it holds it: that is an error (the lease then
// expires by itself), not a silent success.
func (e *Elector) release(ctx context.Context, known *Record) error {
	for {
		var rec Record
		var err error
		if known != nil && e.owns(*known) {
			rec = *known
		} else {
			rec, err = e.lock.Get(ctx, e.name)
		}
		known = nil
		switch {
		case errors.Is(err, ErrNotFound):
			return nil
		case err != nil:
			if !e.wrote.Load() {
				return nil // it never wrote the record: it cannot hold it
			}
			return fmt.Errorf("cluster: lease %q: release: cannot read the lease, it expires by itself: %w", e.name, err)
		case !e.owns(rec):
			return nil // another instance holds it (or another process under this ID), or nobody does
		}
		rec.Holder, rec.Session = "", ""
		clearValue(&rec)
		clearRank(&rec)
		rec.RenewedAt = stamp(e.wall(time.Now()), rec)
		_, err = e.lock.Update(ctx, e.name, rec)
		switch {
		case err == nil:
			e.log.Info("leasehold: released lease", "term", rec.Term)
			return nil
		case errors.Is(err, ErrConflict):
			continue // the record changed since the read: look again
		case errors.Is(err, ErrNotFound):
			return nil
		default:
			return fmt.Errorf("cluster: lease %q: release: %w", e.name, err)
		}
	}
}
