package locker

import (
	"context"
	"fmt"

	"github.com/leasehold/leasehold/cluster"
)

// session is a run of the Locker's session lease: one Elector, started by an Acquire that
// finds its key free to take when none runs, and stopped once no key is held, taken or being
// released (P7). Each of its leaderships is an epoch, under which keys are held.
type session struct {
	l *Locker
	e *cluster.Elector

	// Guarded by l.mu.
	epoch   uint64           // the term of the current leadership, 0 while not leading
	changed chan struct{}    // closed, and replaced, when epoch changes or an attempt fails
	fails   int              // attempts that failed
	failure error            // the last one's error
	held    map[string]*Held // the keys held under epoch
	users   int              // Acquires running, keys held, releases still being retried
	last    cluster.Event    // the last successful attempt of this instance: each held key's deadline
}

// use returns the session lease's run, started if none runs, counting the caller among its
// users; unuseLocked ends that. A run still stopping is waited for: the next must not write
// the session lease beside its release.
func (l *Locker) use(ctx context.Context) (*session, error) {
	for {
		l.mu.Lock()
		if s := l.sess; s != nil {
			s.users++
			l.mu.Unlock()
			return s, nil
		}
		if ending := l.ending; ending != nil {
			l.mu.Unlock()
			select {
			case <-ending:
				continue
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		s := &session{l: l, changed: make(chan struct{}), held: make(map[string]*Held), users: 1}
		e, err := cluster.NewElector(cluster.ElectorConfig{
			Lock: l.raw, LeaseName: l.name, LeaseDuration: l.l, RenewInterval: l.r,
			InstanceID: l.id, Session: l.token, Logger: l.log, Observer: s.event,
		})
		if err != nil {
			l.mu.Unlock()
			return nil, fmt.Errorf("session lease: %w", err)
		}
		s.e = e
		l.sess = s
		l.mu.Unlock()
		if err := e.Start(context.Background()); err != nil {
			l.mu.Lock()
			l.sess = nil
			l.mu.Unlock()
			return nil, fmt.Errorf("session lease: %w", err)
		}
		return s, nil
	}
}

// unuseLocked counts one user of s fewer; the last ends the run: its Elector is stopped on a
// goroutine of its own, which releases the session lease (E7) and so ends the epochs of every
// key record naming it for the others at once. The next use waits for that stop. Called with
// l.mu held.
func (l *Locker) unuseLocked(s *session) {
	s.users--
	if s.users > 0 || l.sess != s {
		return
	}
	l.sess = nil
	ending := make(chan struct{})
	l.ending = ending
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), l.l)
		if err := s.e.Stop(ctx); err != nil {
			l.log.Info("leasehold: locker: session lease stop", "lease", l.name, "error", err)
		}
		cancel()
		l.mu.Lock()
		if l.ending == ending {
			l.ending = nil
		}
		l.mu.Unlock()
		close(ending)
	}()
}

// wakeLocked tells the Acquires waiting for an epoch that something changed. Called with l.mu
// held.
func (s *session) wakeLocked() {
	close(s.changed)
	s.changed = make(chan struct{})
}

// event follows the session lease's Elector, on its goroutine: a leadership begins an epoch;
// its end, by a failed attempt (E4), the deadline (E5) or a stop, loses every key held under it
// at the instant IsLeader turned false (W7), from this goroutine, with no timer per key (P9).
func (s *session) event(ev cluster.Event) {
	l := s.l
	switch ev.Kind {
	case cluster.BecameLeader:
		l.mu.Lock()
		s.epoch = ev.Term
		s.wakeLocked()
		l.mu.Unlock()
		return // an epoch is no holding: the keys report theirs
	case cluster.StoppedLeading:
		s.endEpoch(ev)
		return
	}
	l.emit(ev)
	switch ev.Kind {
	case cluster.AttemptSucceeded:
		if ev.Holder != l.id {
			return
		}
		l.mu.Lock()
		s.last = ev
		if l.observer != nil && s.epoch == ev.Term {
			// Each held key is renewed by this attempt: an Observer learns each one's deadline.
			for _, h := range s.held {
				l.emit(cluster.Event{Kind: cluster.AttemptSucceeded, Lease: h.key, Holder: l.id, Term: h.term, Duration: ev.Duration, Time: ev.Time})
			}
		}
		l.mu.Unlock()
	case cluster.AttemptFailed:
		l.mu.Lock()
		s.fails++
		s.failure = fmt.Errorf("locker: session lease %q: %s: %w", l.name, ev.Reason, ev.Err)
		s.wakeLocked()
		l.mu.Unlock()
	}
}

// endEpoch loses every key held under the epoch that ended (ev.Term).
func (s *session) endEpoch(ev cluster.Event) {
	l := s.l
	l.mu.Lock()
	defer l.mu.Unlock()
	if s.epoch == ev.Term {
		s.epoch = 0
	}
	for key, h := range s.held {
		if h.epoch != ev.Term {
			continue
		}
		delete(s.held, key)
		h.lost = true
		h.cancel()
		l.emit(cluster.Event{Kind: cluster.StoppedLeading, Lease: key, Term: h.term, Reason: ev.Reason, Err: ev.Err, Time: ev.Time})
		l.endTurnLocked(key, h.turn)
		l.unuseLocked(s)
	}
	s.wakeLocked()
}

// waitEpoch returns the epoch keys can be taken under now: the session lease's current
// leadership, waited for. For a TryAcquire (try), a failed attempt of the session lease after
// fails (the count when the TryAcquire began) returns its error: the store did not answer.
func (s *session) waitEpoch(ctx context.Context, try bool, fails int) (uint64, error) {
	l := s.l
	for {
		l.mu.Lock()
		epoch, ch, n, failure := s.epoch, s.changed, s.fails, s.failure
		l.mu.Unlock()
		if epoch != 0 {
			if term, ok := s.e.Term(); ok && term == epoch {
				return epoch, nil
			}
		}
		if try && n > fails && epoch == 0 {
			return 0, failure
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	}
}
