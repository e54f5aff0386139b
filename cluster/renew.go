package cluster

import (
	"context"
	"errors"
	"time"

	"github.com/leasehold/leasehold/internal/fencing"
)

// Writing without reading (E10). The leader renews on the revision it holds, and a follower
// takes over a record it knows (released, as the watch reported it, or expired on its own
// clock) on that record's revision: one request instead of a read and a write. The write is a
// compare-and-swap, so a record that changed since is never overwritten: the attempt then reads
// once, within the same deadline, and decides as an attempt that read first (E2).

// stamp returns the renewal time of a write on prev: now, at the precision every Lock keeps,
// and strictly after prev's, so that a writer's records order by (Term, RenewedAt) even when
// its clock has not moved between two writes (E9).
func stamp(now time.Time, prev Record) time.Time { return fencing.After(now, prev.RenewedAt) }

// after returns now, at the precision every Lock keeps, and strictly after prev: a wall clock
// that jumped back, or that runs behind the previous writer's, never writes a time that
// orders a write before the one it replaced (M2).
func after(now, prev time.Time) time.Time { return fencing.After(now, prev) }

// takeOrRenew returns rec as this instance writes it: renewed when it is its own and the
// attempt began while leading, else a new leadership with a new term (E11): a takeover, or its
// own record found while not leading (a leadership that ended, a write whose answer was lost).
func (e *Elector) takeOrRenew(rec Record, now time.Time, leading bool) Record {
	wall := stamp(e.wall(now), rec)
	if leading && e.owns(rec) {
		rec.RenewedAt, rec.Duration = wall, e.l
		return e.carry(rec)
	}
	rec.Holder, rec.Session, rec.Term = e.id, e.session, e.nextTerm(rec.Term, now)
	rec.AcquiredAt, rec.RenewedAt, rec.Duration = wall, wall, e.l
	return e.carry(rec)
}

// tryKnown writes on the known record without reading it (E10). It returns false when the
// record changed or vanished since, and after any other error while the attempt's deadline
// has not passed: the attempt then reads and decides. An error is not a conflict, yet the
// record known may be the cause (a revision the Lock refuses, a record it can no longer
// write): writing the same record again at the next attempt would fail the same way for
// good, and a write whose outcome is unknown may have landed, which the read shows.
func (e *Elector) tryKnown(ctx context.Context, known Record, leading bool) (outcome, bool) {
	e.wrote.Store(true)
	updated, err := e.lock.Update(ctx, e.name, e.takeOrRenew(known, time.Now(), leading))
	switch {
	case err == nil:
		e.see(updated.Term)
		return outcome{kind: held, rec: updated, at: time.Now()}, true
	case errors.Is(err, ErrConflict), errors.Is(err, ErrNotFound):
		return outcome{}, false
	case ctx.Err() != nil:
		return outcome{kind: failed, err: err, at: time.Now()}, true
	default:
		e.log.Info("leasehold: write on the known record failed: reading it", "term", known.Term, "error", err)
		return outcome{}, false
	}
}
