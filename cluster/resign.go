package cluster

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/leasehold/leasehold/internal/leaseconf"
)

var (
	// ErrNotHeld is Resign's answer for a lease that nobody holds: no record, or a released
	// one. There is nobody to ask (R1).
	ErrNotHeld = errors.New("cluster: lease not held")
	// ErrResignToHolder is Resign's answer when the instance named to lead next is the holder
	// itself: it would step down only to be asked to take the lease back (R1).
	ErrResignToHolder = errors.New("cluster: the instance named to lead next already holds the lease")
	// ErrResignRequested is the error of the attempt in which a leader finds a resign request
	// in its record: the attempt fails with it (Event.Reason ReasonResign), so the leader stops
	// leading at once (E4, R2).
	ErrResignRequested = errors.New("cluster: resign requested")
)

// ReasonResign is the Event.Reason of the failed attempt, and of the end of the leadership,
// of a leader that found a resign request in its record (R2).
const ReasonResign = "resign"

// Resign asks the holder of the lease name in lock to step down, and returns the record as
// written (R1). It writes the request into the record, a compare-and-swap like every write, so
// it works from any process, on any host, over any Lock; it reads again and retries after a
// lost race, until ctx ends. to, when not empty, names the instance that should lead next.
//
// Resign returns once the request is in the record, not once the holder has stepped down:
// the holder sees it at its next attempt, within R (a write of the request changes the
// revision, so a renewal that does not read first conflicts, reads, and sees it; a holder
// whose watch reports the write attempts at once), stops leading, waits for its callbacks,
// then releases the lease naming to as the next holder (R2). Follow it with Observe to see
// the handover.
//
// A lease that nobody holds (no record, or released) is an error wrapping ErrNotHeld; naming
// the holder itself as to is an error wrapping ErrResignToHolder; neither writes anything. A
// request already pending is replaced (its to with this one's). Resign judges nothing by the
// record's timestamps (E6): asked of a crashed holder, the request stays pending until an
// instance takes the expired lease over, and the write itself, a new revision, makes
// followers watch the record for their L again.
func Resign(ctx context.Context, lock Lock, name, to string) (Record, error) {
	return resign(ctx, lock, name, to, false)
}

// resign is Resign; with preempt, the request is a preemption of priority 1 (Q2): a holder of
// priority 0 yields to it, and its release is reserved for to for R only (Q4). A partitioned
// election hands partitions over so (D7).
func resign(ctx context.Context, lock Lock, name, to string, preempt bool) (Record, error) {
	if lock == nil {
		return Record{}, errors.New("cluster: Resign: the Lock is nil")
	}
	name = leaseconf.LeaseName(name)
	lock = recovering(lock)
	for {
		rec, err := lock.Get(ctx, name)
		switch {
		case errors.Is(err, ErrNotFound):
			return Record{}, fmt.Errorf("cluster: lease %q: resign: %w: no instance has taken it", name, ErrNotHeld)
		case err != nil:
			return Record{}, fmt.Errorf("cluster: lease %q: resign: %w", name, err)
		case rec.Holder == "":
			return Record{}, fmt.Errorf("cluster: lease %q: resign: %w: it is released (term %d)", name, ErrNotHeld, rec.Term)
		case to != "" && to == rec.Holder:
			return Record{}, fmt.Errorf("cluster: lease %q: resign to %q: %w (term %d)", name, to, ErrResignToHolder, rec.Term)
		}
		// After the request it replaces, whatever this host's clock says: a watch drops a
		// record that does not order after the newest it knows (E9, M2).
		rec.ResignRequested, rec.NextHolder = after(time.Now(), rec.ResignRequested), to
		if preempt {
			rec.Preempt, rec.NextPriority = true, 1
		}
		written, err := lock.Update(ctx, name, rec)
		switch {
		case err == nil:
			return written, nil
		case errors.Is(err, ErrConflict) && ctx.Err() == nil:
			continue // a renewal or another request came first: read again
		default:
			return Record{}, fmt.Errorf("cluster: lease %q: resign: %w", name, err)
		}
	}
}

// ResignPending reports whether rec carries a resign request its holder has not acted on yet:
// for a program that shows a lease (leasehold status) or waits for a Resign to take effect.
func ResignPending(rec Record) bool { return rec.Holder != "" && !rec.ResignRequested.IsZero() }

// onRead is the hook of try (R2–R4, H2): it runs on what an attempt read, before try decides
// by E2, and returns done when it answered the attempt itself:
//   - this instance holds the record and a resign is pending: a leader fails the attempt
//     (ErrResignRequested), which makes it stop leading and attempt again at once; that
//     attempt, not leading, waits for its callbacks, then releases the record naming the next
//     holder (R2);
//   - a released record reserved for another instance (NextHolder), or the one this instance
//     released when it resigned without naming anyone, that has not expired for this
//     instance (E6's D, from when it first saw it): follow (R3);
//   - an Elector whose Gate (gate.go) refuses: follow, and release a
//     record that still names this instance (H2).
//
// Otherwise try goes on by E2, and whatever it writes (a renewal, a takeover) carries no
// request and no reservation: onRead clears them in rec.
func (e *Elector) onRead(ctx context.Context, rec *Record, err error, obs observation, now time.Time) (outcome, bool) {
	follow := func(r Record, m mark) (outcome, bool) {
		e.unclaim()
		return outcome{kind: followed, rec: r, at: now, mark: m}, true
	}
	if err != nil {
		if errors.Is(err, ErrNotFound) && e.claim == nil && e.rank.isFailing() &&
			!(obs.mark == markMissing && !now.Before(obs.expires.Add(e.r))) {
			// U1: a missing record is created by a failing candidate only once it has been
			// missing for its L and R more.
			return follow(Record{}, markMissing)
		}
		if errors.Is(err, ErrNotFound) && !e.claimSlot(nil, false) {
			// Followed as missing, a mark no Lock writes: the election goroutine schedules the
			// next attempt by that observation (E1, E6).
			return follow(Record{}, markMissing)
		}
		return outcome{}, false
	}
	if e.owns(*rec) && !rec.ResignRequested.IsZero() && (!rec.Preempt || e.yieldsTo(rec.NextPriority)) {
		// A preemption this holder does not yield to (Q3) is cleared by the renewal below.
		return e.stepDown(ctx, *rec), true
	}
	expired := obs.isOf(*rec) && !now.Before(obs.expires)
	if e.claim == nil && e.rank.isFailing() && !e.owns(*rec) && (rec.Holder == "" || expired) &&
		!(obs.isOf(*rec) && !now.Before(obs.expires.Add(e.r))) {
		// U1: a candidate whose check fails takes a free lease only as a last resort, once
		// it has been free R longer than a healthy candidate waits.
		return follow(*rec, unmarked)
	}
	if rec.Holder == "" && !expired {
		if rec.NextHolder != "" && rec.NextHolder != e.id {
			return follow(*rec, unmarked) // reserved for another (R3)
		}
		if rec.NextHolder == "" && rec.Revision == e.resigned {
			return follow(*rec, unmarked) // this instance stepped down: others first (R4)
		}
	}
	if !e.owns(*rec) && rec.Holder != "" && !expired {
		e.unclaim()
		return outcome{}, false // E2 follows
	}
	if !e.claimSlot(rec, expired && rec.Holder != "" && !e.owns(*rec)) {
		if e.owns(*rec) {
			return e.releaseSlot(ctx, *rec), true
		}
		if rec.Holder != "" && e.claim.watchesExpiry() {
			return follow(*rec, unmarked) // its expiry judged (E6), for when the gate opens (D6)
		}
		// Followed under a mark: this instance, which may not take the slot, does not watch
		// it expire (its observation would stay expired, and the election goroutine would
		// attempt again at once); it watches it anew once it may (H2).
		return follow(*rec, markRefused)
	}
	clearRequest(rec)
	return outcome{}, false
}

// stepDown acts on a resign request found in a record this instance holds (R2).
func (e *Elector) stepDown(ctx context.Context, rec Record) outcome {
	fail := func(err error) outcome { return outcome{kind: failed, err: err, at: time.Now()} }
	if e.leading.Load() != nil {
		// The election goroutine stops leading on this failure (E4): the callbacks end
		// there, and the next attempt, at once, releases.
		if rec.NextHolder != "" {
			return fail(fmt.Errorf("%w: handing the lease over to %q", ErrResignRequested, rec.NextHolder))
		}
		return fail(fmt.Errorf("%w: stepping down", ErrResignRequested))
	}
	if err := e.cb.Wait(ctx); err != nil {
		return fail(fmt.Errorf("cluster: lease %q: resign: leader callbacks have not returned, lease not released yet: %w", e.name, err))
	}
	rec.Holder, rec.Session, rec.ResignRequested = "", "", time.Time{}
	clearHolderFields(&rec)
	rec.RenewedAt = stamp(e.wall(time.Now()), rec)
	e.wrote.Store(true)
	released, err := e.lock.Update(ctx, e.name, rec)
	if err != nil {
		out := fail(fmt.Errorf("cluster: lease %q: resign: release: %w", e.name, err))
		// Written on a record known, or read before the callbacks were awaited: the attempt
		// reads once more and decides again (E10).
		out.stale = errors.Is(err, ErrConflict) || errors.Is(err, ErrNotFound)
		return out
	}
	e.resigned = released.Revision
	e.unclaim()
	if released.NextHolder != "" {
		e.log.Info("leasehold: resigned: released the lease to the next holder", "term", released.Term, "next", released.NextHolder)
	} else {
		e.log.Info("leasehold: resigned: released the lease", "term", released.Term)
	}
	return outcome{kind: followed, rec: released, at: time.Now()}
}

// failReason is the Event.Reason of a failed attempt's error.
func failReason(err error) string {
	switch {
	case errors.Is(err, ErrResignRequested):
		return ReasonResign
	case errors.Is(err, ErrConflict):
		return ReasonConflict
	}
	return ReasonError
}

// The store document's fields of a resign (R1, R3): a document written before them has
// nothing pending.
func init() {
	registerStoreFields(
		timeField("resignRequestedAt", func(r *Record) *time.Time { return &r.ResignRequested }),
		stringField("nextHolder", func(r *Record) *string { return &r.NextHolder }),
	)
}
