package cluster

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// The watch (E9). When the Lock is a Watcher, the election has one more goroutine, which keeps
// a watch of the lease open and leaves what it delivers in a mailbox; the election goroutine
// takes it from there between attempts. Nothing that must be true rests on the watch: an
// event only makes an attempt come sooner, or a poll later while the watch is known healthy.

// quietWindow is W: a watch that has delivered no accepted change for W is no longer trusted
// to report the next one, and the follower polls every R again. A live leader writes every R,
// so a healthy watch under a live leader delivers something every R; W must stay within 2R
// for a crashed leader to be replaced within L + R (see E9 in docs/design.md).
func (e *Elector) quietWindow() time.Duration { return e.r * 3 / 2 }

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
	ev   *pushed // the latest call not yet taken
	up   bool    // a watch is established and has not ended
	gone bool    // a watch ended since the last take
}

func newMailbox() *mailbox { return &mailbox{ready: make(chan struct{}, 1)} }

func (m *mailbox) signal() {
	select {
	case m.ready <- struct{}{}:
	default:
	}
}

func (m *mailbox) put(rec Record, err error, first bool) {
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

func (m *mailbox) down() {
	m.mu.Lock()
	m.up, m.gone = false, true
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
// when it cannot) and a function that ends the goroutine and waits for it.
func (e *Elector) startWatch(base context.Context) (*mailbox, func()) {
	if e.watcher == nil {
		e.log.Info("leasehold: lease watch not supported, polling every R", "renewInterval", e.r)
		return nil, func() {}
	}
	mb := newMailbox()
	ctx, cancel := context.WithCancel(base)
	done := make(chan struct{})
	go func() {
		defer close(done)
		e.watchLoop(ctx, mb)
	}()
	return mb, func() {
		cancel()
		<-done
	}
}

// watchLoop keeps a watch open until ctx ends: after a failure it watches again R later, or
// later still (up to watchBackoffMax) while watches fail before their first call. It gives
// up for good, with one log line, when the Lock says it cannot watch.
func (e *Elector) watchLoop(ctx context.Context, mb *mailbox) {
	backoff := e.r
	for {
		var mu sync.Mutex
		established := false
		err := e.watchOnce(ctx, func(rec Record, err error) {
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
	heard time.Time // its establishment or its last accepted change
	// The newest record known, by a read or an accepted change: a change not newer than it,
	// by (Term, RenewedAt, ResignRequested), is stale. Reset by a read and by a missing record.
	order   Record
	ordered bool
}

// healthy says whether the watch can be trusted to report the next change: established, and
// not quiet for W.
func (s *pushState) healthy(now time.Time, w time.Duration) bool {
	return s.up && now.Before(s.heard.Add(w))
}

// read resets the order to an authoritative record (an attempt's read or write).
func (s *pushState) read(rec Record) { s.order, s.ordered = rec, true }

// newer says whether a was written after b, by the lease's own order: its term, then its
// renewal time (which every writer makes strictly increase across its writes, E9), then the
// time of a resign request, which is written on the holder's record as it is (R1), renewal
// time included.
func newer(a, b Record) bool {
	if a.Term != b.Term {
		return a.Term > b.Term
	}
	if !a.RenewedAt.Equal(b.RenewedAt) {
		return a.RenewedAt.After(b.RenewedAt)
	}
	return a.ResignRequested.After(b.ResignRequested)
}

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
	if s.obs.rev == "" {
		// Nobody else is known to hold the lease (this instance's write came too late to lead
		// on, or its creation lost a race): attempt every R, on its own record if it is that.
		if s.known != nil && e.owns(*s.known) {
			return at, s.known
		}
		return at, nil
	}
	if s.push.healthy(now, e.quietWindow()) {
		// E9: no periodic read while the watch reports changes; poll once it is quiet for W.
		at = later(at, s.push.heard.Add(e.quietWindow()))
	}
	if s.obs.rev != "" && s.obs.expires.After(s.lastStart) && s.obs.expires.Before(at) {
		at = s.obs.expires // E6: attempt the moment that revision expires
	}
	if s.obs.rev != "" && !at.Before(s.obs.expires) {
		rec := s.obs.rec
		return at, &rec // E10: take the expired record over without reading it again
	}
	return at, nil
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// onPush applies a call of the watch (E9).
func (e *Elector) onPush(s *sched, p *pushed) {
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
	case rec.Revision == s.obs.rev, s.known != nil && rec.Revision == s.known.Revision:
		return // already known: a repeat, or its own write
	case s.push.ordered && (rec.Revision == s.push.order.Revision || !newer(rec, s.push.order)):
		return // stale: older than what this instance knows
	}
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
	case rec.Holder == "" || e.owns(rec):
		// Released, or its own write whose answer was lost: write on it at once (E10). Nobody
		// else holds it: should that attempt fail, the next comes R later, not when the
		// watch falls quiet.
		s.obs, s.known, s.soon = observation{}, &rec, true
	default:
		// Another holder's change, observed now (E6's first sight), with no read of its own.
		e.checkTwin(rec) // E12
		if rec.Holder != s.obs.holder || rec.Term != s.obs.term {
			e.log.Info("leasehold: observed leader", "holder", rec.Holder, "term", rec.Term)
			e.emit(Event{Kind: ObservedLeader, Holder: rec.Holder, Term: rec.Term, Time: p.at})
		}
		s.obs = e.observe(rec, p.at)
		s.known, s.soon = nil, false
	}
}
