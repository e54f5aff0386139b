package cluster

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/leasehold/leasehold/internal/termctx"
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
	// mark, for followed: why the record is followed as no revision a Lock wrote (H2, U1).
	mark mark
}

// mark says why an attempt followed a record as something other than the revision it read:
// the attempts are ordered by a marked observation as by any other (E1, E6), but it is no
// revision a Lock wrote, so its expiry is not judged, the watch reports nothing that ends it,
// and it is never written on without a read (E10).
type mark uint8

const (
	unmarked    mark = iota
	markMissing      // the record is missing, and this instance may not create it now (U1, H2)
	markRefused      // the Elector's Gate refused the record (H2)
)

// observation is the last revision of another holder's record seen by this instance, and when
// it expires, on this instance's monotonic clock (E6).
type observation struct {
	rec     Record // the record itself, to take it over without reading it again (E10)
	rev     string
	mark    mark // a record followed for what it is not (outcome.mark): rev is not its identity alone
	holder  string
	term    uint64
	expires time.Time
}

// isOf reports whether rec is the revision observed, as it was read: not a record followed
// under a mark.
func (o observation) isOf(rec Record) bool { return o.mark == unmarked && rec.Revision == o.rev }

// seen reports whether an observation was made: a revision, or a mark.
func (o observation) seen() bool { return o.rev != "" || o.mark != unmarked }

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

// loop is the state of the election: it belongs to the election goroutine, which alone reads
// and writes it (run, and the methods run calls, on that goroutine).
type loop struct {
	base    context.Context // Start's context without its cancellation: the attempts' and the watch's
	s       sched           // the plan for the next attempt (push.go)
	pending *attempt        // the attempt in flight, if any
	timer   *time.Timer     // the next wake-up: see wakeAt
	// E9: the watch starts when the instance first follows another holder, so an instance
	// that leads all its leases (many leases in one process) keeps no watch; it is ended as
	// the shutdown begins, and done is closed once it has returned too (Stop waits for it
	// within its context).
	mb         *mailbox // nil until the watch starts, and when the Lock cannot watch
	watching   bool
	stopWatch  func()
	stopHealth func() // U1-U3; ended with the watch
}

// newLoop starts the health check and returns the election's state at its start: the first
// attempt is due at once (E1).
func (e *Elector) newLoop(startCtx context.Context) *loop {
	lp := &loop{base: context.WithoutCancel(startCtx), stopWatch: func() {}}
	e.rank.startedAt = time.Now()
	lp.stopHealth = e.startHealth(lp.base)
	lp.s = sched{next: time.Now()} // when the next attempt may start (E1), and why
	lp.timer = time.NewTimer(time.Hour)
	return lp
}

// end releases what the loop holds: its timer, the health check's and the watch's goroutines
// (ended without waiting for them).
func (lp *loop) end() {
	lp.timer.Stop()
	lp.stopHealth()
	lp.stopWatch()
}

// run is the election goroutine: it starts attempts, keeps the leadership deadline and
// handles Stop. All election state lives in its loop; each wake-up is handled by a method.
func (e *Elector) run(startCtx context.Context) {
	lp := e.newLoop(startCtx)
	defer lp.end()
	for {
		now := time.Now()
		lead := e.expire(lp, now)
		if lp.mb != nil {
			// E9: the watch's latest heartbeat, which does not wake this goroutine: it only
			// puts the next read off.
			lp.s.push.beat(lp.mb.alive())
		}
		due := e.startDue(lp, now, lead != nil)
		tc := lp.sleep(now, e.wakeAt(lp, lead, due))
		pc, mc := lp.inputs()
		select {
		case <-tc: // a deadline or the next attempt: the top of the loop sees to it
		case <-e.poke:
			lp.hurry() // a gate opened (D6): attempt now rather than at the next R
		case <-e.rank.wake:
			// The health check's verdict changed (U1, U2): a leader writes it into its
			// record at once; a candidate that passes again may take a free lease at once.
			lp.hurry()
		case <-mc:
			e.onMail(lp)
		case out := <-pc:
			e.onOutcome(lp, out)
		case ctx := <-e.life.req:
			e.onStop(ctx, lp)
			return
		case <-startCtx.Done():
			e.onStartEnd(lp)
			return
		case <-e.life.halt:
			e.onHalt()
			return
		}
	}
}

// expire applies the deadlines that have passed at now: the leadership's (E5) and the
// attempt's (E3). It returns the leadership still on, nil if none.
func (e *Elector) expire(lp *loop, now time.Time) *leadership {
	lead := e.leading.Load()
	if lead != nil && !now.Before(lead.deadline) {
		// E5: no attempt succeeded within (L+R)/2 of the start of the last successful
		// one; IsLeader already says false, now the callbacks learn it too.
		e.stopLeading(ReasonDeadline, nil)
		lead = nil
	}
	if p := lp.pending; p != nil && !p.failed && !now.Before(p.start.Add(e.l-e.r)) {
		// E3: no answer within L-R. The attempt stays in flight until it returns (attempts
		// never overlap), but it has failed, and a leader stops leading at once (E4).
		e.timeOut(p, now)
		lead = nil
	}
	return lead
}

// startDue starts the next attempt if none is in flight and it is due at now (E1); leading
// says whether this instance leads. It returns when the next attempt is due, for wakeAt.
func (e *Elector) startDue(lp *loop, now time.Time, leading bool) time.Time {
	if lp.pending != nil {
		return time.Time{}
	}
	due, known := e.due(&lp.s, now)
	if !now.Before(due) {
		at, ok := e.askAt(lp.s.obs.rec)
		lp.pending = e.startAttempt(lp.base, now, lp.s.obs, known, leading, ok && !now.Before(at))
		lp.s.next, lp.s.lastStart, lp.s.soon = now.Add(e.r), now, false
	}
	return due
}

// wakeAt returns when the election goroutine wakes unless something comes first: the
// earliest of the leadership deadline, the attempt's timeout, the next attempt (zero: none).
func (e *Elector) wakeAt(lp *loop, lead *leadership, due time.Time) time.Time {
	var wake time.Time
	consider := func(t time.Time) {
		if wake.IsZero() || t.Before(wake) {
			wake = t
		}
	}
	if lead != nil {
		consider(lead.deadline)
	}
	if lp.pending != nil && !lp.pending.failed {
		consider(lp.pending.start.Add(e.l - e.r))
	}
	if lp.pending == nil {
		consider(due)
	}
	return wake
}

// sleep sets the timer to wake, and returns its channel (nil when wake is zero).
func (lp *loop) sleep(now, wake time.Time) <-chan time.Time {
	if wake.IsZero() {
		return nil
	}
	lp.timer.Reset(wake.Sub(now))
	return lp.timer.C
}

// inputs returns the channels the loop listens to besides its timer and the Elector's: the
// outcome of the attempt in flight, or else the watch's mailbox. The watch's calls wait in
// the mailbox while an attempt is in flight: they are judged against its outcome.
func (lp *loop) inputs() (<-chan outcome, <-chan struct{}) {
	switch {
	case lp.pending != nil:
		return lp.pending.done, nil
	case lp.mb != nil:
		return nil, lp.mb.ready
	}
	return nil, nil
}

// hurry makes the next attempt start as soon as none is in flight.
func (lp *loop) hurry() { lp.s.soon = true }

// onMail takes the watch's latest call from its mailbox (E9).
func (e *Elector) onMail(lp *loop) {
	ev, up := lp.mb.take()
	lp.s.push.up = up
	if ev != nil {
		e.onPush(&lp.s, ev)
	}
}

// onOutcome handles the outcome of the attempt in flight.
func (e *Elector) onOutcome(lp *loop, out outcome) {
	a := lp.pending
	lp.pending = nil
	if !a.failed && !out.returned.Before(a.start.Add(e.l-e.r)) {
		// E3 as in expire: an attempt that returned at L-R or later had no answer within
		// it, whether this goroutine woke for its outcome or for the timeout first. An
		// attempt whose context ends at L-R returns at that very instant; which of the
		// two ready cases run's select takes is chance, and must not decide the reason.
		e.timeOut(a, out.returned)
	}
	a.cancel()
	s := &lp.s
	s.known = nil
	if a.failed {
		return // already counted as failed by its timeout
	}
	switch out.kind {
	case held:
		s.obs, s.known = observation{}, &out.rec
		s.push.read(out.rec)
		if !e.held(lp.base, a, out) {
			s.soon = true // E11: that term was led already: write a new one at once
		}
	case followed:
		e.onFollowed(lp, a, out)
	case failed:
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
}

// onFollowed handles an attempt that found another instance holding the lease: this
// instance follows it, and watches its record (E6, E9).
func (e *Elector) onFollowed(lp *loop, a *attempt, out outcome) {
	s := &lp.s
	e.checkTwin(out.rec)
	if !lp.watching {
		lp.watching = true
		lp.mb, lp.stopWatch = e.startWatch(lp.base)
	}
	s.push.read(out.rec)
	if lead := e.leading.Load(); lead != nil {
		e.stopLeading(ReasonTakenBy, nil)
	}
	e.emit(Event{Kind: AttemptSucceeded, Holder: out.rec.Holder, Term: out.rec.Term, Duration: out.at.Sub(a.start)})
	if out.rec.Revision != s.obs.rev || out.mark != s.obs.mark {
		if out.rec.Holder != s.obs.holder || out.rec.Term != s.obs.term {
			e.emit(Event{Kind: ObservedLeader, Holder: out.rec.Holder, Term: out.rec.Term})
			e.log.Info("leasehold: observed leader", "holder", out.rec.Holder, "term", out.rec.Term)
		}
		s.obs = e.observe(out.rec, out.at)
		s.obs.mark = out.mark
		e.emit(Event{Kind: ObservedRevision, Holder: out.rec.Holder, Term: out.rec.Term, Time: out.at})
	}
	// E6: the next attempt comes the moment that revision expires, if before the next
	// regular one (see due).
}

// onStop answers Stop (E7): the watch and the health check end, and the result of the
// shutdown goes back to Stop.
func (e *Elector) onStop(ctx context.Context, lp *loop) {
	lp.stopWatch() // it returns while the shutdown goes on
	lp.stopHealth()
	e.life.answer(e.shutdown(ctx, lp.pending, lp.s.known))
}

// onStartEnd stops the election when Start's context ends, as a Stop whose context lasts
// L - R would (E7), unless a Stop has begun: then it serves that one. Its result is the
// stop's, which a later Stop returns.
func (e *Elector) onStartEnd(lp *loop) {
	if claimed, _ := e.life.claim(); !claimed {
		e.onStop(<-e.life.req, lp)
		return
	}
	ctx, cancel := context.WithTimeout(lp.base, e.l-e.r)
	defer cancel()
	lp.stopWatch()
	lp.stopHealth()
	err := e.shutdown(ctx, lp.pending, lp.s.known)
	if err != nil {
		e.log.Warn("leasehold: election ended by its context", "error", err)
	}
	// Nobody waits for this stop: a later Stop waits for the watch within its own context.
	e.life.finish(err)
}

// onHalt ends the election as a crash would (tests): the callbacks' contexts end, nothing is
// released.
func (e *Elector) onHalt() {
	if l := e.leading.Load(); l != nil {
		l.cancel()
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
	ctx, cancel := context.WithCancel(termctx.With(base, out.rec.Term))
	e.leading.Store(&leadership{term: out.rec.Term, deadline: deadline, ctx: ctx, cancel: cancel})
	e.emit(Event{Kind: ObservedLeader, Holder: e.id, Term: out.rec.Term, Time: out.at})
	e.emit(Event{Kind: BecameLeader, Term: out.rec.Term, Time: out.at})
	e.log.Info("leasehold: became leader", "term", out.rec.Term)
	e.cb.StartLeading(ctx)
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
	e.cb.StopLeading()
	e.emit(Event{Kind: StoppedLeading, Term: l.term, Reason: reason, Err: err, Time: at})
	if err != nil {
		e.log.Info("leasehold: stopped leading", "term", l.term, "reason", reason, "error", err)
	} else {
		e.log.Info("leasehold: stopped leading", "term", l.term, "reason", reason)
	}
}

// errLostCreation marks a Create beaten by another instance's: replicas that start together
// race to create the record, all but one lose, and their next attempt follows the winner.
var errLostCreation = errors.New("another instance created the lease first")

func (e *Elector) attemptFailed(reason string, err error, d time.Duration) {
	e.emit(Event{Kind: AttemptFailed, Reason: reason, Err: err, Duration: d})
	if errors.Is(err, errLostCreation) {
		e.log.Info("leasehold: lost the race to create the lease", "error", err)
	} else if errors.Is(err, ErrResignRequested) { // hook (resign.go): not a failure of the store (R2)
		e.log.Info("leasehold: resign requested: stepping down", "error", err)
	} else {
		e.log.Warn("leasehold: attempt failed", "reason", reason, "error", err) // E8
	}
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
	if known != nil {
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
	seen := e.seen.Load() // before this read's term counts (B2)
	askedAgain := false   // a request lost its race, and the attempt read once more (Q2)
	for {
		r, out, done := e.read(ctx, obs, seen, &reread)
		if done {
			return out
		}
		out, lost := e.decide(ctx, r, obs, leading, ask)
		if lost && !askedAgain {
			// Another write landed between the read and the request: the holder's renewal at
			// this very instant, most often. Which of two goroutines due at one instant writes
			// first is the scheduler's choice; reading once more and asking on what is found
			// makes the request land at this instant either way, rather than R later.
			askedAgain = true
			continue
		}
		return out
	}
}

// reading is what an attempt's read returned, and when.
type reading struct {
	rec Record
	err error
	at  time.Time
}

// read reads the record for try, and runs the hook on it. It returns done, with the outcome
// of the attempt, when the record is a state the store went back to (B2) or the hook answered
// the attempt; a release that conflicted (stale) reads once more, as reread records.
func (e *Elector) read(ctx context.Context, obs observation, seen uint64, reread *bool) (reading, outcome, bool) {
	for {
		rec, err := e.lock.Get(ctx, e.name)
		now := time.Now()
		if err == nil && wentBack(rec, seen, obs, now, e.owns(rec)) {
			e.unclaim()
			return reading{}, outcome{kind: followed, rec: rec, at: now}, true
		}
		if err == nil {
			e.see(rec.Term)
		}
		// Hook (resign.go): a resign request, a reserved release, a slot of N holders this
		// instance may not hold; it may answer the attempt itself (R2-R4, H2). Keep this call
		// on every record (or error) read or known before deciding by E2.
		out, done := e.onRead(ctx, &rec, err, obs, now)
		if !done {
			return reading{rec: rec, err: err, at: now}, outcome{}, false
		}
		if out.stale && !*reread {
			// The release conflicted: the record changed while the callbacks were awaited.
			*reread = true
			continue
		}
		return reading{}, out, true
	}
}

// decide acts on what try read by E2: it creates a missing record, takes over or renews one
// it may hold, or follows another holder's, asking it to hand over when ask allows (Q2). lost
// says that request lost a race.
func (e *Elector) decide(ctx context.Context, r reading, obs observation, leading, ask bool) (_ outcome, lost bool) {
	rec, now := r.rec, r.at
	switch {
	case errors.Is(r.err, ErrNotFound):
		return e.create(ctx, now), false
	case r.err != nil:
		return failure(r.err), false
	case e.owns(rec), rec.Holder == "" || (obs.isOf(rec) && !now.Before(obs.expires)):
		// Its own (renew, or a new term when not leading), or released, or expired on this
		// instance's own clock (E6): take over. A record naming this instance ID with another
		// session is another process's (E12): followed until it expires.
		return e.write(ctx, e.takeOrRenew(rec, now, leading)), false
	}
	if ok, _ := e.askable(rec); ok && ask {
		// Q2, U2: a holder this instance outranks, or that reports itself unhealthy. The
		// request is a revision first seen once written (E6), not at the read.
		rec, now, lost = e.ask(ctx, rec, now)
	}
	return outcome{kind: followed, rec: rec, at: now}, lost
}

// create writes the missing record, held by this instance (E2).
func (e *Elector) create(ctx context.Context, now time.Time) outcome {
	wall := stamp(e.wall(now), Record{})
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
		return failure(err)
	}
	e.see(created.Term)
	return outcome{kind: held, rec: created, at: time.Now()}
}

// write writes rec, read and decided on, to hold it: a compare-and-swap on its revision.
func (e *Elector) write(ctx context.Context, rec Record) outcome {
	e.wrote.Store(true)
	updated, err := e.lock.Update(ctx, e.name, rec)
	if err != nil {
		return failure(err)
	}
	e.see(updated.Term)
	return outcome{kind: held, rec: updated, at: time.Now()}
}

// failure is the outcome of an attempt that failed with err, now.
func failure(err error) outcome { return outcome{kind: failed, err: err, at: time.Now()} }

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
	return !obs.isOf(rec) || now.Before(obs.expires)
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
	if err := e.cb.Wait(ctx); err != nil {
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
		clearHolderFields(&rec)
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
