package cluster

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/leasehold/leasehold/store"
)

// The watch (E9). When the Lock is a Watcher, the election has one more goroutine, which keeps
// a watch of the lease open and leaves what it delivers in a mailbox; the election goroutine
// takes it from there between attempts. Nothing that must be true rests on the watch: an
// event only makes an attempt come sooner, or a poll later while the watch is known healthy.

// aliveWindow is how long a proof that the watch is alive (its establishment, an accepted
// change, a heartbeat) is trusted: a follower reads at least every R unless its watch proved
// alive within the last R, so a silent watch delays neither a takeover after a release
// (within R) nor one after a crash (within L + R of the last renewal): see E9 in
// docs/design.md.
//
// A watch without heartbeats (HeartbeatWatcher) proves it is alive only by the changes it
// delivers, the leader's renewals every R among them. Each comes R after the one before plus
// what the leader's timer, its write and the delivery took longer than the last time, so a
// window of R alone ends before the next renewal about as often as not, and its followers
// read up to once every R. R + R/2 leaves a renewal R/2 to be late, as heartbeatEvery leaves
// a heartbeat; the bounds of a write that such a watch loses grow by R/2 (E9).
func (e *Elector) aliveWindow() time.Duration {
	if e.beatless {
		return e.r + e.r/2
	}
	return e.r
}

// heartbeatEvery is the interval of the heartbeats the watch asks of the Lock: half of R, the
// alive window of a watch that sends them, so that a heartbeat may come up to R/2 late (the
// connection's delay, the server's scheduling) before the follower reads once.
func (e *Elector) heartbeatEvery() time.Duration { return e.r / 2 }

// watchBackoffMax caps the wait between two watches that failed before their first call.
func (e *Elector) watchBackoffMax() time.Duration { return 4 * e.r }

// pushed is a call of the watch's fn, as the mailbox keeps it.
type pushed struct {
	rec   Record
	err   error
	at    time.Time // when it came, on this instance's clock
	first bool      // the first call of a watch: it is established
}

// mailbox passes the watch's calls to the election goroutine, latest wins: the watch never
// waits for the election, and the election sees the latest state (T8 allows skipping).
type mailbox struct {
	ready chan struct{} // a value when there is something to take

	mu   sync.Mutex
	ev   *pushed   // the latest call not yet taken (never a heartbeat)
	beat time.Time // the latest heartbeat of the established watch, zero when down
	up   bool      // a watch is established and has not ended
	gone bool      // a watch ended since the last take
}

func newMailbox() *mailbox { return &mailbox{ready: make(chan struct{}, 1)} }

func (m *mailbox) signal() {
	select {
	case m.ready <- struct{}{}:
	default:
	}
}

func (m *mailbox) put(rec Record, err error, first bool) {
	if errors.Is(err, ErrHeartbeat) {
		m.heartbeat()
		return
	}
	m.mu.Lock()
	if m.ev != nil && m.ev.first {
		first = true // the establishment counts even when a later call replaced its state
	}
	m.ev = &pushed{rec: rec, err: err, at: time.Now(), first: first}
	if first {
		m.up = true
	}
	m.mu.Unlock()
	m.signal()
}

// heartbeat records that the established watch proved it is alive. It neither replaces the
// call waiting to be taken nor wakes the election goroutine: a heartbeat changes nothing but
// when the next read is due, which the election goroutine looks up (alive) before deciding.
// A heartbeat before the watch's first call proves nothing the follower knows, and is dropped.
func (m *mailbox) heartbeat() {
	m.mu.Lock()
	if m.up {
		m.beat = time.Now()
	}
	m.mu.Unlock()
}

// alive returns the time of the latest heartbeat of the watch now established (zero when none).
func (m *mailbox) alive() time.Time {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.beat
}

func (m *mailbox) down() {
	m.mu.Lock()
	m.up, m.gone, m.beat = false, true, time.Time{}
	m.mu.Unlock()
	m.signal()
}

// take returns the latest call not yet taken (nil if none) and whether a watch is up now.
func (m *mailbox) take() (*pushed, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	ev := m.ev
	m.ev, m.gone = nil, false
	return ev, m.up
}

// startWatch starts the watch goroutine when the Lock can watch, and returns its mailbox (nil
// when it cannot) and a function that ends the goroutine without waiting for it: it counts
// among the election's goroutines (spawn), and the last of them to return closes done.
func (e *Elector) startWatch(base context.Context) (*mailbox, func()) {
	if e.watcher == nil {
		e.log.Info("leasehold: lease watch not supported, polling every R", "renewInterval", e.r)
		return nil, func() {}
	}
	mb := newMailbox()
	ctx, cancel := context.WithCancel(base)
	e.life.spawn(func() { e.watchLoop(ctx, mb) })
	return mb, cancel
}

// watchLoop keeps a watch open until ctx ends: after a failure it watches again R later, or
// later still (up to watchBackoffMax) while watches fail before their first call. It gives
// up for good, with one log line, when the Lock says it cannot watch.
func (e *Elector) watchLoop(ctx context.Context, mb *mailbox) {
	backoff := e.r
	for {
		var mu sync.Mutex
		established := false
		err := e.watchOnce(store.WithHeartbeat(ctx, e.heartbeatEvery()), func(rec Record, err error) {
			if errors.Is(err, ErrHeartbeat) {
				mb.heartbeat() // not a record, not an error, not a change: only a proof of life
				return
			}
			mu.Lock()
			first := !established
			established = true
			mu.Unlock()
			mb.put(rec, err, first)
		})
		mb.down()
		if ctx.Err() != nil {
			return
		}
		if errors.Is(err, ErrWatchUnsupported) {
			e.log.Info("leasehold: lease watch not supported, polling every R", "renewInterval", e.r, "error", err)
			return
		}
		mu.Lock()
		if established {
			backoff = e.r
		}
		mu.Unlock()
		e.log.Info("leasehold: lease watch ended, polling until it is back", "retryIn", backoff, "error", err)
		t := time.NewTimer(backoff)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return
		}
		backoff = min(2*backoff, e.watchBackoffMax())
	}
}

// watchOnce runs one watch; a panic of the Lock is an error (E8).
func (e *Elector) watchOnce(ctx context.Context, fn func(Record, error)) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("cluster: lease %q: lock panicked in Watch: %v", e.name, p)
		}
	}()
	err = e.watcher.Watch(ctx, e.name, fn)
	if err == nil {
		err = errors.New("watch ended without an error")
	}
	return err
}

// pushState is what the election goroutine knows of the watch.
type pushState struct {
	up    bool      // a watch is established
	heard time.Time // its last proof of life: its establishment, an accepted change, a heartbeat
	// The newest record known, by a read or an accepted change: a change not newer than it,
	// by (Term, RenewedAt, ResignRequested), is stale. Reset by a read and by a missing record.
	order   Record
	ordered bool
}

// healthy says whether the watch can be trusted to report the next change: established, and
// proved alive within w (R).
func (s *pushState) healthy(now time.Time, w time.Duration) bool {
	return s.up && now.Before(s.heard.Add(w))
}

// beat records a heartbeat of the established watch at t: it proved alive, nothing else.
func (s *pushState) beat(t time.Time) {
	if s.up && t.After(s.heard) {
		s.heard = t
	}
}

// read resets the order to an authoritative record (an attempt's read or write).
func (s *pushState) read(rec Record) { s.order, s.ordered = rec, true }

// sched is the election goroutine's plan for its next attempt.
type sched struct {
	next      time.Time   // the next regular attempt (E1)
	lastStart time.Time   // the start of the last attempt
	obs       observation // the other holder's record being watched for expiry (E6)
	known     *Record     // the record the next attempt may write on without reading (E10)
	soon      bool        // attempt as soon as none is in flight (E9)
	push      pushState   // what the watch said
}

// due returns when the next attempt starts, and the record it writes on without reading
// (nil: it reads first).
func (e *Elector) due(s *sched, now time.Time) (time.Time, *Record) {
	if s.soon {
		return now, s.known
	}
	if e.leading.Load() != nil {
		return s.next, s.known // E10: the leader renews on the revision it holds
	}
	at := s.next
	if !s.obs.seen() {
		// Nobody else is known to hold the lease (this instance's write came too late to lead
		// on, or its creation lost a race): attempt every R, on its own record if it is that.
		if s.known != nil && e.owns(*s.known) {
			return at, s.known
		}
		return at, nil
	}
	if s.push.healthy(now, e.aliveWindow()) && s.next.Before(s.obs.expires) && watchable(s.obs) {
		// E9: no periodic read while the watch proves it is alive; read once it has not for R.
		// Not once the revision has expired (E6) and the attempt on it failed: attempts then
		// come every R, as nothing the watch could report is awaited; nor for a record
		// followed because this instance may not take it (H2), which no write makes takeable.
		at = later(at, s.push.heard.Add(e.aliveWindow()))
	}
	if s.obs.seen() && s.obs.expires.After(s.lastStart) && s.obs.expires.Before(at) {
		at = s.obs.expires // E6: attempt the moment that revision expires
	}
	if ask, ok := e.askAt(s.obs.rec); ok && ask.Before(at) && ask.Before(s.obs.expires) {
		return later(ask, s.lastStart), nil // Q2, U2: read, then ask the holder to hand over
	}
	if s.obs.seen() && !at.Before(s.obs.expires) {
		if s.obs.mark != unmarked {
			return at, nil // no revision a Lock wrote: read it
		}
		rec := s.obs.rec
		return at, &rec // E10: take the expired record over without reading it again
	}
	return at, nil
}

// watchable says whether the record followed is one whose next change the watch reports
// (another holder's, or a reserved release): not the marker of a missing record or of a
// slot refused because the instance holds, or may hold, another (H2).
func watchable(obs observation) bool {
	return obs.mark == unmarked
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// onPush applies a call of the watch (E9).
func (e *Elector) onPush(s *sched, p *pushed) {
	if errors.Is(p.err, ErrHeartbeat) {
		// Not a record: only a proof of life (the mailbox keeps heartbeats apart; this is for
		// a caller that hands one over anyway).
		s.push.beat(p.at)
		return
	}
	if p.first {
		s.push.heard = p.at // established: it will report the next change
	}
	if errors.Is(p.err, ErrNotFound) {
		// No record: create it at once. What came before no longer orders what comes next.
		s.push.ordered, s.push.heard = false, p.at
		s.obs, s.known, s.soon = observation{}, nil, true
		return
	}
	if p.err != nil {
		return // a record the Lock cannot read: the next read reports it (E8)
	}
	rec := p.rec
	lead := e.leading.Load() != nil
	switch {
	case s.obs.isOf(rec), s.known != nil && rec.Revision == s.known.Revision:
		return // already known: a repeat, or its own write
	case s.push.ordered && rec.Revision == s.push.order.Revision:
		return // the newest known, again
	case s.push.ordered && !rec.NewerThan(s.push.order):
		// Older than what this instance knows: a watch behind a read, or a store that went
		// back to an earlier state (B3). Not acted on, but a follower reads at once, so
		// that a rollback counts from now rather than from the expiry of a revision that is
		// gone; a leader's next renewal finds it within R.
		if !lead && s.known == nil {
			s.soon = true
		}
		return
	}
	seen := e.seen.Load()
	s.push.read(rec)
	s.push.heard = p.at
	e.see(rec.Term) // E11
	e.emit(Event{Kind: WatchedChange, Holder: rec.Holder, Term: rec.Term, Time: p.at})
	switch {
	case lead && e.owns(rec) && ResignPending(rec):
		// A resign request written on its record (its own writes never carry one): attempt
		// at once, which sees it and steps down (R2), rather than at the next renewal.
		s.soon = true
	case lead && e.owns(rec):
		// Its own write, whose answer it has not handled yet.
	case lead:
		// Written by another (a takeover, a repair, a request to hand over): attempt at once;
		// its write on the revision it holds conflicts, and it reads and decides (E10).
		s.soon = true
	case (rec.Holder == "" || e.owns(rec)) && !wentBack(rec, seen, s.obs, p.at, e.owns(rec)):
		// Released, or its own write whose answer was lost: write on it at once (E10). Nobody
		// else holds it: should that attempt fail, the next comes R later, whatever the
		// watch proves.
		s.obs, s.known, s.soon = observation{}, &rec, true
	default:
		// Another holder's change, observed now (E6's first sight), with no read of its own.
		e.checkTwin(rec) // E12
		if rec.Holder != s.obs.holder || rec.Term != s.obs.term {
			e.emit(Event{Kind: ObservedLeader, Holder: rec.Holder, Term: rec.Term, Time: p.at})
			e.log.Info("leasehold: observed leader", "holder", rec.Holder, "term", rec.Term)
		}
		s.obs = e.observe(rec, p.at)
		e.emit(Event{Kind: ObservedRevision, Holder: rec.Holder, Term: rec.Term, Time: p.at})
		s.known, s.soon = nil, false
	}
}
