package cluster

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Gate decides whether an Elector may write to hold its record: for a product that runs
// several Electors in one instance, of which only some may hold at once (the slots of N
// holders, cluster/holders: one at a time, H2). Set it in ElectorConfig.Gate; the Elector
// calls it from its attempts, which never overlap, but the Electors that share a Gate call it
// concurrently.
//
// While the gate refuses, the Elector follows the record it read instead of taking or renewing
// it, and reads it again at every attempt (every R), even while its watch is alive (E9): what
// opens the gate is no write to that record. A record that still names this instance (a write
// whose answer was lost, a leadership that ended without a release) is released, so that the
// others need not wait for it to expire. An Elector with a Gate never asks a holder to hand
// over (Q2), and a failing health check does not hold it back from a free record (U1): the gate
// decides.
//
// A Gate may also have a method FollowsExpiry() bool: when it returns true, a record another
// holds that the gate refuses is followed as it is, so that the Elector judges its expiry (E6)
// while the gate is closed and Admit sees expired turn true: the fences of cluster/partition,
// which take a member lease over only once it has expired (D10).
type Gate interface {
	// Admit is called by an attempt that is about to write to hold rec: nil when the record
	// is missing; expired says whether it is another holder's record that has expired (E6).
	// false makes the attempt follow instead. rec is a copy, for the gate to read.
	Admit(rec *Record, expired bool) bool
	// Drop records that an attempt follows the record instead of writing to hold it: another
	// holder's record, or one Admit refused.
	Drop()
}

// Idle reports whether this Elector has no leadership (none began, or the last one ended and
// StoppedLeading has been emitted to the Observer) and no WhenLeader callback running or
// pending: for a Gate that lets another Elector of the instance hold once this one is done
// with its record (cluster/holders).
func (e *Elector) Idle() bool {
	return e.leading.Load() == nil && !e.led.Load() && e.cb.Idle()
}

// claimer is the gate of an Elector that is one of several of an instance: a Gate of the
// products above the engine (gateClaimer), the fences of a partitioned election (D6).
type claimer interface {
	// acquire is called by an attempt of slot that is about to write to hold rec (nil: the
	// record is missing), expired saying whether it is another holder's record that has
	// expired (E6); false makes the attempt follow instead.
	acquire(slot int, rec *Record, expired bool) bool
	// drop records that an attempt of slot does not write to hold its record.
	drop(slot int)
	// watchesExpiry says whether a held record refused is followed as it is, so that its
	// expiry is judged (E6) while the gate is closed, rather than under a revision of its own.
	watchesExpiry() bool
}

// gateClaimer is ElectorConfig.Gate as the engine calls it.
type gateClaimer struct{ g Gate }

var _ claimer = gateClaimer{}

func (c gateClaimer) acquire(_ int, rec *Record, expired bool) bool {
	if rec != nil {
		r := *rec // the attempt goes on with rec: the gate reads a copy
		rec = &r
	}
	return c.g.Admit(rec, expired)
}
func (c gateClaimer) drop(int)            { c.g.Drop() }
func (c gateClaimer) watchesExpiry() bool { return followsExpiry(c.g) }

// claimSlot is onRead's gate before a write that would make this instance hold rec (nil when
// missing): it is always open for an Elector without a gate.
func (e *Elector) claimSlot(rec *Record, expired bool) bool {
	return e.claim == nil || e.claim.acquire(e.slot, rec, expired)
}

// unclaim records that this attempt does not write to hold the record.
func (e *Elector) unclaim() {
	if e.claim != nil {
		e.claim.drop(e.slot)
	}
}

// releaseSlot releases a record that names this instance while its gate refuses: a write
// whose answer was lost, a leadership that ended without a release. Left as it is, the record
// would stay taken until it expired, while this instance may not hold it.
func (e *Elector) releaseSlot(ctx context.Context, rec Record) outcome {
	rec.Holder, rec.Session, rec.ResignRequested, rec.NextHolder = "", "", time.Time{}, ""
	clearHolderFields(&rec)
	rec.RenewedAt = stamp(e.wall(time.Now()), rec)
	released, err := e.lock.Update(ctx, e.name, rec)
	if err != nil {
		// A record changed since it was known or read: the attempt reads once more and decides
		// again (E10), rather than failing and releasing R later.
		stale := errors.Is(err, ErrConflict) || errors.Is(err, ErrNotFound)
		return outcome{kind: failed, err: fmt.Errorf("cluster: lease %q: release of a record this instance may not hold now: %w", e.name, err), at: time.Now(), stale: stale}
	}
	e.log.Info("leasehold: released a record this instance may not hold now: its gate refuses", "term", released.Term)
	return outcome{kind: followed, rec: released, at: time.Now()}
}

// followsExpiry reports whether g follows a refused record as it is, to judge its expiry: its
// FollowsExpiry method says so, false without one.
func followsExpiry(g Gate) bool {
	f, ok := g.(interface{ FollowsExpiry() bool })
	return ok && f.FollowsExpiry()
}
