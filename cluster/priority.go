package cluster

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/leasehold/leasehold/internal/pace"
)

// rank is an Elector's priority and health check (Q1–Q4, U1–U3), and what the check said.
type rank struct {
	priority int
	window   time.Duration // StabilityWindow
	check    func(context.Context) error
	failures int           // HealthFailures
	timeout  time.Duration // HealthTimeout

	// wake tells the election goroutine that the check's verdict changed: a leader writes it
	// into its record at once, a candidate that passes again may take a free lease at once.
	wake chan struct{}

	mu        sync.Mutex
	failing   bool      // the last check failed, or none has passed yet (U1)
	unhealthy bool      // the last `failures` checks failed (U2)
	passedAt  time.Time // when the check last began to pass

	// Owned by the election goroutine: when this instance started, and last stopped leading;
	// with passedAt, they start the stability window (Q2).
	startedAt, stoppedAt time.Time
	// Owned by the attempts, which never overlap; the election goroutine reads it after an
	// attempt's outcome: when this instance last asked a holder to hand over (Q2).
	asked time.Time
}

// resolveRank checks the priority and health settings of cfg, whose timing is resolved, and
// fills their defaults (E0).
func resolveRank(cfg ElectorConfig) (*rank, error) {
	r := &rank{priority: cfg.Priority, window: cfg.StabilityWindow, check: cfg.Health, failures: cfg.HealthFailures, timeout: cfg.HealthTimeout}
	switch {
	case cfg.Priority > math.MaxInt32 || cfg.Priority < math.MinInt32:
		return nil, fmt.Errorf("ElectorConfig.Priority is %d, want a 32-bit integer", cfg.Priority)
	case r.window < 0:
		return nil, fmt.Errorf("ElectorConfig.StabilityWindow is %v, want 0 (the default) or more", r.window)
	case r.failures < 0:
		return nil, fmt.Errorf("ElectorConfig.HealthFailures is %d, want 0 (the default) or more", r.failures)
	case r.timeout < 0 || r.timeout > cfg.RenewInterval:
		return nil, fmt.Errorf("ElectorConfig.HealthTimeout is %v, want 0 (the default) up to RenewInterval (%v)", r.timeout, cfg.RenewInterval)
	}
	if r.window == 0 {
		r.window = DefaultStabilityWindowFactor * cfg.LeaseDuration
	}
	if r.failures == 0 {
		r.failures = DefaultHealthFailures
	}
	if r.timeout == 0 {
		r.timeout = cfg.RenewInterval
	}
	if r.check != nil {
		r.failing = true // until the first check passes
		r.wake = make(chan struct{}, 1)
	}
	return r, nil
}

// isFailing says whether this instance's last health check failed, or none has passed yet.
func (r *rank) isFailing() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.failing
}

// isUnhealthy says whether the last HealthFailures checks failed.
func (r *rank) isUnhealthy() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.unhealthy
}

// candidateSince is when this instance last became a candidate without interruption: its
// start, the end of its last leadership, the first check it passed after failing (Q2).
func (r *rank) candidateSince() time.Time {
	r.mu.Lock()
	passed := r.passedAt
	r.mu.Unlock()
	return later(later(r.startedAt, r.stoppedAt), passed)
}

// carryRank returns rec as a write that holds it carries it: this instance's priority and
// health for the record's term (Q1, U2).
func (e *Elector) carryRank(rec Record) Record {
	rec.Priority, rec.Unhealthy, rec.PriorityTerm = e.rank.priority, e.rank.isUnhealthy(), rec.Term
	if rec.Priority == 0 && !rec.Unhealthy {
		rec.PriorityTerm = 0
	}
	return rec
}

// clearRank empties the holder's rank in a record being released; the preemption it answers,
// if any, stays (Q4).
func clearRank(rec *Record) { rec.Priority, rec.Unhealthy, rec.PriorityTerm = 0, false, 0 }

func init() { registerHolderFields(holderField{(*Elector).carryRank, clearRank}) }

// clearRequest empties a resign request and its reservation, as every write that holds the
// record does (R3).
func clearRequest(rec *Record) {
	rec.ResignRequested, rec.NextHolder, rec.Preempt, rec.NextPriority = time.Time{}, "", false, 0
}

// yieldsTo says whether this holder hands over to a candidate of priority p that asked it to
// (Q3, U2): one of a higher priority, or any healthy one while this holder reports itself
// unhealthy.
func (e *Elector) yieldsTo(p int) bool { return p > e.rank.priority || e.rank.isUnhealthy() }

// askable says whether this instance, following rec, would ask its holder to hand over (Q2,
// U2), and whether that holder reports itself unhealthy. It never asks while its own check
// fails, nor for a slot of N holders, nor over a request already pending but for a
// preemption by a candidate of lower priority than its own. It reads nothing the election's
// goroutine writes, so an attempt may call it.
func (e *Elector) askable(rec Record) (ok, sick bool) {
	if e.claim != nil || rec.Holder == "" || e.owns(rec) || e.rank.isFailing() {
		return false, false
	}
	p, sick := rec.CurrentPriority()
	if !sick && e.rank.priority <= p {
		return false, false
	}
	if ResignPending(rec) && (!rec.Preempt || rec.NextHolder == e.id || rec.NextPriority >= e.rank.priority) {
		return false, false // an operator's request, this instance's own, or a better candidate's
	}
	return true, sick
}

// askAt says, when askable, from when this instance asks rec's holder to hand over: R after
// its last request, and, unless the holder reports itself unhealthy, once it has been a
// candidate for the stability window (Q2). A leader, or a follower of a holder it does not
// outrank, returns before reading when it became a candidate. Called on the election's
// goroutine only.
func (e *Elector) askAt(rec Record) (time.Time, bool) {
	ok, sick := e.askable(rec)
	if !ok {
		return time.Time{}, false
	}
	at := e.rank.asked.Add(e.r)
	if e.rank.asked.IsZero() {
		at = time.Time{}
	}
	if !sick {
		at = later(at, e.rank.candidateSince().Add(e.rank.window))
	}
	return at, true
}

// ask writes a preemption request on rec, another holder's record this instance outranks
// (Q2): a resign request naming this instance and its priority, a compare-and-swap on the
// revision read at now. It returns the record to follow and when it was first seen: the one
// written, seen once the write's answer came (its expiry counts from then, E6: a slow write
// lands after the read), or rec, read at now, when the write failed or lost a race; lost
// says it lost a race (the attempt reads again, once).
func (e *Elector) ask(ctx context.Context, rec Record, now time.Time) (_ Record, _ time.Time, lost bool) {
	e.rank.asked = now
	req := rec
	// After any request pending, whatever this clock says (E9, M2).
	req.ResignRequested, req.NextHolder, req.Preempt, req.NextPriority = after(e.wall(now), rec.ResignRequested), e.id, true, e.rank.priority
	written, err := e.lock.Update(ctx, e.name, req)
	p, sick := rec.CurrentPriority()
	if err != nil {
		e.log.Info("leasehold: could not ask the holder to hand over", "holder", rec.Holder, "term", rec.Term, "error", err)
		return rec, now, errors.Is(err, ErrConflict)
	}
	e.log.Info("leasehold: asked the holder to hand over", "holder", rec.Holder, "term", rec.Term,
		"holderPriority", p, "holderUnhealthy", sick, "priority", e.rank.priority)
	return written, time.Now(), false
}

// startHealth starts the health check's goroutine when there is a check, and returns the
// function that ends it without waiting: it counts among the election's goroutines (spawn),
// so Done waits for it.
func (e *Elector) startHealth(base context.Context) func() {
	if e.rank.check == nil {
		return func() {}
	}
	ctx, cancel := context.WithCancel(base)
	e.life.spawn(func() { e.healthLoop(ctx) })
	return cancel
}

// healthLoop runs the check at once, then every R, start to start (a check that takes long
// delays the next, never overlaps it), until ctx ends (U1–U3).
func (e *Elector) healthLoop(ctx context.Context) {
	r := e.rank
	fails := 0
	pace.Every(ctx, e.r, func() bool {
		err := e.runCheck(ctx)
		if ctx.Err() != nil {
			return false
		}
		if err == nil {
			fails = 0
		} else {
			fails++
		}
		r.mu.Lock()
		wasFailing, wasUnhealthy := r.failing, r.unhealthy
		r.failing, r.unhealthy = err != nil, fails >= r.failures
		if wasFailing && err == nil {
			r.passedAt = time.Now()
		}
		changed := wasFailing != r.failing || wasUnhealthy != r.unhealthy
		r.mu.Unlock()
		switch {
		case err == nil && wasFailing:
			e.log.Info("leasehold: health check passes")
		case err != nil && fails == r.failures && e.leading.Load() != nil:
			e.log.Warn("leasehold: health check failed: unhealthy, handing over to a healthy candidate", "failures", fails, "error", err)
		case err != nil && fails == r.failures:
			e.log.Warn("leasehold: health check failed: unhealthy, taking a free lease only as a last resort", "failures", fails, "error", err)
		case err != nil:
			e.log.Info("leasehold: health check failed", "failures", fails, "error", err)
		}
		if changed {
			select {
			case r.wake <- struct{}{}:
			default:
			}
		}
		return true
	})
}

// runCheck runs the check once within HealthTimeout; a panic is a failure (E8).
func (e *Elector) runCheck(ctx context.Context) (err error) {
	ctx, cancel := context.WithTimeout(ctx, e.rank.timeout)
	defer cancel()
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("health check panicked: %v", p)
		}
	}()
	if err = e.rank.check(ctx); err == nil && ctx.Err() != nil {
		err = fmt.Errorf("health check: %w", ctx.Err()) // it passed only after its timeout
	}
	return err
}
