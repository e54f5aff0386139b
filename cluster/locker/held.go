package locker

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/leasehold/leasehold/cluster"
	"github.com/leasehold/leasehold/internal/fencing"
	"github.com/leasehold/leasehold/internal/termctx"
	"github.com/leasehold/leasehold/internal/wallclock"
)

// Held is a key this process holds: its record names the session lease's epoch it was taken
// under, and it is held while that epoch lasts (P8, P9). It costs no goroutine and no timer:
// the session lease's goroutine ends it with its epoch.
type Held struct {
	key    string
	term   uint64
	epoch  uint64
	rev    string    // the record's revision as taken
	at     time.Time // its RenewedAt
	s      *session
	turn   *keyTurn
	ctx    context.Context
	cancel context.CancelFunc

	// Guarded by Locker.mu.
	lost bool         // its epoch ended
	rel  *releaseDone // the first Release's outcome
}

// releaseDone is the outcome of a holding's Release, shared by every call.
type releaseDone struct {
	done chan struct{}
	err  error
}

// hold makes this Locker the holder of key, whose record rec it wrote under epoch, if that epoch
// is still the session lease's current leadership (W7 by the clock); nil when it has ended,
// the record then naming an ended epoch, free for all. base gives the holding's context its
// values.
func (a *attempt) hold(base context.Context, rec cluster.Record, epoch uint64) *Held {
	l, s := a.l, a.s
	l.mu.Lock()
	defer l.mu.Unlock()
	if term, ok := s.e.Term(); !ok || term != epoch || s.epoch != epoch {
		return nil
	}
	ctx, cancel := context.WithCancel(termctx.With(context.WithoutCancel(base), rec.Term))
	h := &Held{key: a.key, term: rec.Term, epoch: epoch, rev: rec.Revision, at: rec.RenewedAt, s: s, turn: a.turn, ctx: ctx, cancel: cancel}
	s.held[a.key] = h
	a.handed = true // the turn and the use of the session are the holding's now
	if last := s.last; last.Term == epoch {
		// The attempt whose deadline this holding has, as each renewal will be.
		l.emit(cluster.Event{Kind: cluster.AttemptSucceeded, Lease: a.key, Holder: l.id, Term: rec.Term, Duration: last.Duration, Time: last.Time})
	}
	l.emit(cluster.Event{Kind: cluster.BecameLeader, Lease: a.key, Holder: l.id, Term: rec.Term})
	return h
}

// IsHeld reports whether the key is held at the time of the call: checked against the session
// lease's deadline, as Elector.IsLeader is (W7), it turns false the instant the deadline
// passes, while Done closes only once the session lease's goroutine has noticed: a moment
// later, or, in a process that was paused or starved of CPU, once that goroutine runs again.
// Work under the lock checks it right before each action, with Term as the fencing token; Done
// is for waiting. It takes no lock.
func (h *Held) IsHeld() bool {
	term, ok := h.s.e.Term()
	return ok && term == h.epoch && h.ctx.Err() == nil
}

// Key returns the key held.
func (h *Held) Key() string { return h.key }

// Term returns the term of this holding: a fencing token, larger than that of every earlier
// holding of the key (E11).
func (h *Held) Term() uint64 { return h.term }

// Done returns a channel closed when the key is no longer held: lost with the session lease's
// epoch (an attempt failed, E4, or no renewal succeeded within (L+R)/2 of the start of the
// last successful one, E5) or released. Work done under the lock must stop when it closes.
func (h *Held) Done() <-chan struct{} { return h.ctx.Done() }

// Context returns a context cancelled when Done closes, carrying the term (cluster.TermOf) and
// the values of Acquire's context.
func (h *Held) Context() context.Context { return h.ctx }

// Release ends the holding (Done closes at once) and writes the key's record released, its term
// kept, so that another Acquire takes it within R. It returns once that write is known to have
// landed (or the record to have changed since this holding took it), or with an error when it
// is not known, ctx's end included: the release is then retried every R in the background
// while the epoch lasts, and the key stays this Locker's turn (P5) until it lands or the epoch
// ends (P6). After a loss there is nothing to write: the record names an ended epoch, free for
// all. A second call waits for the first and returns its result.
func (h *Held) Release(ctx context.Context) error {
	l := h.s.l
	l.mu.Lock()
	if r := h.rel; r != nil {
		l.mu.Unlock()
		select {
		case <-r.done:
			return r.err
		case <-ctx.Done():
			return fmt.Errorf("locker: key %q: release: %w", h.key, ctx.Err())
		}
	}
	r := &releaseDone{done: make(chan struct{})}
	h.rel = r
	lost := h.lost
	if !lost {
		delete(h.s.held, h.key)
		h.cancel()
		l.emit(cluster.Event{Kind: cluster.StoppedLeading, Lease: h.key, Term: h.term, Reason: cluster.ReasonStop})
	}
	l.mu.Unlock()
	defer close(r.done)
	if lost {
		return nil
	}
	rctx, cancel := context.WithTimeout(ctx, l.l-l.r)
	landed, err := l.release(rctx, h.key, h.epoch, h.term, h.rev, h.at)
	cancel()
	if landed {
		l.mu.Lock()
		l.endTurnLocked(h.key, h.turn)
		l.unuseLocked(h.s)
		l.mu.Unlock()
		return nil
	}
	go l.retryRelease(h.s, h.key, h.turn, h.epoch, h.term, h.rev, h.at)
	r.err = fmt.Errorf("locker: key %q: release not known to have landed, retried every R while the session lease holds: %w", h.key, err)
	return r.err
}

// release writes key's record, taken under epoch with term at revision rev, released with its
// term kept, and says whether the record is known to have changed from that since: released
// by this write or an earlier one whose answer was lost, or written by another once the epoch
// ended. rev "" means not known (a write whose answer was lost): the record is read first.
func (l *Locker) release(ctx context.Context, key string, epoch, term uint64, rev string, at time.Time) (bool, error) {
	var failed error
	for i := 0; ; i++ {
		if rev != "" {
			_, err := l.lock.Update(ctx, key, cluster.Record{
				Term: term, Duration: l.l, RenewedAt: fencing.After(wallclock.Reading(time.Now()), at), Revision: rev,
			})
			if err == nil {
				return true, nil
			}
			if !errors.Is(err, cluster.ErrConflict) && !errors.Is(err, cluster.ErrNotFound) {
				failed = err
				l.emit(cluster.Event{Kind: cluster.AttemptFailed, Lease: key, Reason: cluster.ReasonError, Err: err})
			}
		}
		rec, err := l.lock.Get(ctx, key)
		switch {
		case errors.Is(err, cluster.ErrNotFound):
			return true, nil
		case err != nil:
			return false, errors.Join(failed, err)
		case rec.Holder != l.id || rec.Session != keySession(l.token, epoch) || rec.Term != term:
			return true, nil
		case i > 0:
			if failed == nil {
				failed = errors.New("the record changed under each write")
			}
			return false, failed
		}
		rev, at = rec.Revision, rec.RenewedAt
	}
}

// retryRelease retries a release not known to have landed every R, until it is known to have,
// or the epoch has ended (then the record names an ended epoch, free for all), and then ends
// the key's turn and its use of the session.
func (l *Locker) retryRelease(s *session, key string, t *keyTurn, epoch, term uint64, rev string, at time.Time) {
	defer func() {
		l.mu.Lock()
		l.endTurnLocked(key, t)
		l.unuseLocked(s)
		l.mu.Unlock()
	}()
	for {
		timer := time.NewTimer(l.r)
		l.mu.Lock()
		ch := s.changed
		l.mu.Unlock()
		select {
		case <-timer.C:
		case <-ch: // the epoch may have ended
		}
		timer.Stop()
		l.mu.Lock()
		over := s.epoch != epoch
		l.mu.Unlock()
		if over {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), l.l-l.r)
		landed, _ := l.release(ctx, key, epoch, term, rev, at)
		cancel()
		if landed {
			return
		}
		rev = "" // read it again: an answer lost may have changed it
	}
}
