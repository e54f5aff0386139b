package locker

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/leasehold/leasehold/cluster"
	"github.com/leasehold/leasehold/internal/fencing"
	"github.com/leasehold/leasehold/internal/wallclock"
)

// attempt is one Acquire's or TryAcquire's way to its key, on the caller's goroutine: it reads
// the key's record, takes it when it is free, and otherwise waits for the leadership its record
// names to end, through a fence of the holder's session lease (P8).
type attempt struct {
	l    *Locker
	s    *session // the session lease's run, once the key is free to take
	key  string
	turn *keyTurn
	try  bool

	rec    cluster.Record // the key's record as last read
	found  bool
	read   bool
	readAt time.Time // when it was last read: the next read is R later, or L with a watch
	seenAt time.Time // when rec's revision was first seen (E6, for a record naming no epoch)
	revs   int       // revisions of a held record naming no epoch seen (P3)
	seen   uint64    // the highest term seen on the key (E11)

	fence     *fence // of the session lease rec names, when another's
	fenceRevs int    // the fence's revisions when this attempt began to wait on it (P3)
	fails     int    // the session lease's failed attempts when this attempt began to use it (P3)
	watch     *keyWatch

	// unsure is a write under the current epoch whose answer was lost: it may have landed.
	unsure struct {
		epoch, term uint64
		ok          bool
	}
	handed bool // the turn and the use of the session went to a Held
}

// run returns the key held, or an error: ctx's end, or a TryAcquire's verdict.
func (a *attempt) run(ctx context.Context) (*Held, error) {
	l := a.l
	mustRead := true
	for {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("locker: key %q: %w", a.key, err)
		}
		if mustRead {
			if err := a.readRecord(ctx); err != nil {
				if ctx.Err() != nil {
					return nil, fmt.Errorf("locker: key %q: %w", a.key, ctx.Err())
				}
				l.emit(cluster.Event{Kind: cluster.AttemptFailed, Lease: a.key, Reason: cluster.ReasonError, Err: err})
				if a.try {
					return nil, fmt.Errorf("locker: key %q: the store did not answer: %w", a.key, err)
				}
				if !sleepCtx(ctx, l.r) {
					return nil, fmt.Errorf("locker: key %q: %w", a.key, ctx.Err())
				}
				continue
			}
			mustRead = false
		}
		now := time.Now()
		free, until := a.judge(now)
		if free {
			if a.s == nil {
				// The session lease runs only for a key to take: a Locker that waits
				// writes nothing.
				s, err := l.use(ctx)
				if err != nil {
					if ctx.Err() != nil {
						return nil, fmt.Errorf("locker: key %q: %w", a.key, ctx.Err())
					}
					return nil, fmt.Errorf("locker: key %q: %w", a.key, err)
				}
				l.mu.Lock()
				a.s, a.fails = s, s.fails
				l.mu.Unlock()
			}
			epoch, err := a.s.waitEpoch(ctx, a.try, a.fails)
			if err != nil {
				if ctx.Err() != nil {
					return nil, fmt.Errorf("locker: key %q: %w", a.key, ctx.Err())
				}
				return nil, fmt.Errorf("locker: key %q: the store did not answer: %w", a.key, err)
			}
			h, again, err := a.take(ctx, epoch)
			if h != nil || err != nil {
				return h, err
			}
			mustRead = again
			continue
		}
		if a.try && a.live() {
			return nil, fmt.Errorf("locker: key %q: %q renewed the session lease it holds it under (term %d): %w", a.key, a.rec.Holder, a.rec.Term, ErrHeld)
		}
		woke, err := a.wait(ctx, until)
		if err != nil {
			return nil, fmt.Errorf("locker: key %q: %w", a.key, err)
		}
		mustRead = woke
	}
}

// readRecord reads the key's record.
func (a *attempt) readRecord(ctx context.Context) error {
	rctx, cancel := context.WithTimeout(ctx, a.l.l-a.l.r)
	defer cancel()
	start := time.Now()
	rec, err := a.l.lock.Get(rctx, a.key)
	a.readAt = time.Now()
	switch {
	case errors.Is(err, cluster.ErrNotFound):
		a.see(cluster.Record{}, false)
	case err != nil:
		return err
	default:
		a.see(rec, true)
	}
	// A read answered, as a follower's attempt: an Observer learns that this instance is in
	// touch with the store while it waits (the fault campaign waits for that).
	a.l.emit(cluster.Event{Kind: cluster.AttemptSucceeded, Lease: a.key, Holder: rec.Holder, Term: rec.Term, Duration: a.readAt.Sub(start)})
	return nil
}

// see records a sight of the key's record.
func (a *attempt) see(rec cluster.Record, found bool) {
	if !a.read || found != a.found || (found && rec.Revision != a.rec.Revision) {
		a.seenAt = time.Now()
		if found && rec.Holder != "" {
			a.revs++
		}
	}
	a.rec, a.found, a.read = rec, found, true
	if found {
		a.seen = max(a.seen, rec.Term)
	}
}

// judge decides whether the key's record may be taken now (P8) and, when not, until when to
// wait at the latest before judging again.
func (a *attempt) judge(now time.Time) (free bool, until time.Time) {
	l := a.l
	until = a.readAt.Add(l.r)
	if a.watch != nil && a.watch.healthy() {
		until = a.readAt.Add(l.l) // the watch brings changes; a read every L checks it
	}
	rec := a.rec
	if !a.found || rec.Holder == "" {
		a.setFence("")
		return true, until
	}
	token, epoch, ok := keyEpoch(rec.Session)
	if !ok {
		// A record naming no epoch (an Elector of its own on the key): its holder's until its
		// revision has stayed the same for its duration on this instance's clock (E6).
		a.setFence("")
		expires := a.seenAt.Add(max(l.l, rec.Duration))
		if !now.Before(expires) {
			return true, until
		}
		return false, minTime(until, expires)
	}
	if rec.Holder == l.id && token == l.token {
		// This Locker's own: an ended epoch's, or the current one's from a write whose answer
		// was lost or a release not known to have landed (P6); no holding of it is running
		// (P5). It is taken with a new term.
		a.setFence("")
		return true, until
	}
	name := sessionLeaseName(rec.Holder, token)
	f := a.setFence(name)
	l.mu.Lock()
	over, stopped := f.over(epoch, now), f.stopping
	l.mu.Unlock()
	if !over && stopped {
		// A fence that took the lease over, and so stopped, saw an earlier epoch end: this
		// one needs a fence of its own that runs.
		a.setFence("")
		f = a.setFence(name)
		l.mu.Lock()
		over = f.over(epoch, now)
		l.mu.Unlock()
	}
	l.mu.Lock()
	missing := f.missing
	l.mu.Unlock()
	if over {
		return true, until
	}
	if !missing.IsZero() {
		until = minTime(until, missing.Add(l.l))
	}
	return false, until
}

// setFence makes the attempt wait on the fence of the session lease name ("" for none).
func (a *attempt) setFence(name string) *fence {
	if a.fence != nil && a.fence.name == name {
		return a.fence
	}
	if a.fence != nil {
		a.l.unfence(a.fence)
		a.fence = nil
	}
	if name == "" {
		return nil
	}
	a.fence = a.l.fenceFor(name)
	a.l.mu.Lock()
	a.fenceRevs = a.fence.revs
	a.l.mu.Unlock()
	return a.fence
}

// live reports, for a TryAcquire, whether the key's holder was seen alive since the attempt
// began (P3): its session lease renewed after the first sight of it, or, for a record naming
// no epoch, the record itself written again.
func (a *attempt) live() bool {
	if a.fence == nil {
		return a.revs > 1
	}
	a.l.mu.Lock()
	defer a.l.mu.Unlock()
	return a.fence.revs >= max(a.fenceRevs+1, 2)
}

// wait waits for something that may free the key: a change its fence saw, a change the key's
// watch brought, until, or ctx's end. woke says whether the record is to be read again.
func (a *attempt) wait(ctx context.Context, until time.Time) (woke bool, err error) {
	l := a.l
	if a.watch == nil && l.watcher != nil {
		a.watch = startKeyWatch(l, a.key)
	}
	var fch, wch <-chan struct{}
	if a.fence != nil {
		l.mu.Lock()
		fch = a.fence.changed
		l.mu.Unlock()
	}
	if a.watch != nil {
		wch = a.watch.ch
	}
	timer := time.NewTimer(time.Until(until))
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return false, ctx.Err()
	case <-fch:
		return false, nil
	case <-wch:
		return true, nil
	case <-timer.C:
		return true, nil
	}
}

// sleepCtx waits d or ctx's end, and reports whether d passed.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// take writes the key's record for this Locker under epoch, with a new term (E11), on the
// revision seen (a compare-and-swap: a record changed since is never overwritten). again says
// whether to read the record before judging it again.
func (a *attempt) take(ctx context.Context, epoch uint64) (h *Held, again bool, err error) {
	l := a.l
	now := time.Now()
	wall := wallclock.Reading(now)
	var prev uint64
	if a.found {
		prev = a.rec.Term
	}
	at := fencing.After(wall, a.rec.RenewedAt)
	rec := cluster.Record{
		Holder: l.id, Session: keySession(l.token, epoch), Term: fencing.Next(prev, a.seen, wall),
		AcquiredAt: at, RenewedAt: at, Duration: l.l,
	}
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), l.l-l.r)
	var written cluster.Record
	if a.found {
		rec.Revision = a.rec.Revision
		written, err = l.lock.Update(wctx, a.key, rec)
	} else {
		written, err = l.lock.Create(wctx, a.key, rec)
	}
	cancel()
	a.seen = max(a.seen, rec.Term)
	switch {
	case err == nil:
		a.unsure.ok = false
		a.see(written, true)
		h := a.hold(ctx, written, epoch)
		if h == nil {
			return nil, false, nil // the epoch ended meanwhile: taken again under the next
		}
		if ctx.Err() != nil {
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), l.l)
			rerr := h.Release(rctx)
			cancel()
			return nil, false, errors.Join(fmt.Errorf("locker: key %q: %w", a.key, ctx.Err()), rerr)
		}
		return h, false, nil
	case errors.Is(err, cluster.ErrConflict), errors.Is(err, cluster.ErrNotFound):
		l.emit(cluster.Event{Kind: cluster.AttemptFailed, Lease: a.key, Reason: cluster.ReasonConflict, Err: err})
		if a.try && errors.Is(err, cluster.ErrConflict) {
			return nil, false, fmt.Errorf("locker: key %q: another instance won the race for it: %w", a.key, ErrHeld)
		}
		return nil, true, nil
	default:
		// The write may have landed: the record will say. Under the current epoch it is
		// this Locker's own, taken again with a new term; left behind, it is released.
		a.unsure.epoch, a.unsure.term, a.unsure.ok = epoch, rec.Term, true
		l.emit(cluster.Event{Kind: cluster.AttemptFailed, Lease: a.key, Reason: cluster.ReasonError, Err: err})
		if a.try {
			return nil, false, fmt.Errorf("locker: key %q: the store did not answer: %w", a.key, err)
		}
		return nil, true, nil
	}
}

// close ends what the attempt waited with: its fence and its watch.
func (a *attempt) close() {
	if a.watch != nil {
		a.watch.stop()
	}
	if a.fence != nil {
		a.l.unfence(a.fence)
		a.fence = nil
	}
}

// giveUp ends an attempt that returns without the key: its turn and its use of the session end,
// once a write whose answer was lost, if any, is known not to name this epoch any more.
func (a *attempt) giveUp() {
	l := a.l
	if a.handed {
		return
	}
	if a.unsure.ok {
		go l.retryRelease(a.s, a.key, a.turn, a.unsure.epoch, a.unsure.term, "", time.Time{})
		return
	}
	l.mu.Lock()
	l.endTurnLocked(a.key, a.turn)
	if a.s != nil {
		l.unuseLocked(a.s)
	}
	l.mu.Unlock()
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}
