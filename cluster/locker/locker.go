// Package locker hands out leases on named keys: a distributed mutex around one job at a time
// per key, over any cluster.Lock.
//
// Each held key is an election of the engine (cluster.Elector) on the lease named by the key,
// so a held key is renewed, lost and released by the Elector's rules; the keys of one Locker
// share its Lock, and so the store's connection.
//
// # Holding a key
//
// Acquire blocks until this process holds a key; TryAcquire gives up on a live holder. The
// Held it returns carries the holding's term, a fencing token (Held.Term), and a context
// cancelled when the key is lost or released (Held.Context): work done under the lock stops
// then. Release lets the next holder in within R.
package locker

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/leasehold/leasehold/cluster"
	"github.com/leasehold/leasehold/internal/leaseconf"
)

// ErrHeld is returned, wrapped, by Locker.TryAcquire when a live holder has the key (P3).
var ErrHeld = errors.New("locker: key held by a live holder")

// Config configures a Locker. Zero values take the defaults, as in ElectorConfig:
// cluster.DefaultLeaseDuration, cluster.DefaultRenewInterval, cluster.DefaultInstanceID() and slog.Default().
type Config struct {
	Lock          cluster.Lock
	InstanceID    string
	LeaseDuration time.Duration // L: how long a key's lease is valid without renewal
	RenewInterval time.Duration // R: time between two attempts, lower than L
	Logger        *slog.Logger

	// Observer, when set, receives every Event of every key's election (Event.Lease is the
	// key), with the constraints of cluster.ElectorConfig.Observer.
	Observer func(cluster.Event)
}

// Locker hands out leases on named keys: a distributed mutex around one job at a time per key
// (P1–P5 in docs/design.md). Each held key is an Elector of its own on the lease named by the
// key, so a held key is renewed, lost and released with the Elector's rules (E1–E12); the keys
// of one Locker share its Lock, and so the store's connection. A Locker is safe for
// concurrent use.
type Locker struct {
	lock     cluster.Lock
	id       string
	l, r     time.Duration
	log      *slog.Logger
	observer func(cluster.Event)
	// session is the token every key's Elector writes (E12): a record of a key this Locker
	// lost unreleased is still its own, taken again at the next Acquire's first attempt (P6).
	// P5 keeps two Electors of one key from sharing it at once.
	session string

	// local holds, for each key this Locker is acquiring or holding, or whose lost holding's
	// Elector waits for the next Acquire, the key's turn (P5): one Elector per key at a time
	// in the process.
	mu    sync.Mutex
	local map[string]*keyTurn
}

// keyTurn is a key's turn in its Locker (P5): it lasts from an Acquire until the key's Elector
// has stopped.
type keyTurn struct {
	done chan struct{} // closed when the turn ends
	// parked, guarded by Locker.mu, is closed (and replaced) when a spare is parked: an
	// Acquire that found the key held, its holding lost but not yet parked, wakes to take it.
	parked chan struct{}
	// spare, guarded by Locker.mu, is the Elector of a holding lost less than R ago, kept
	// running for the key's next Acquire (P2); nil when none.
	spare *spare
}

// spare is the Elector of a lost holding, waiting for the key's next Acquire (P2).
type spare struct {
	h     *Held       // the lost holding: its Elector, its leaderships, its turn
	timer *time.Timer // ends the wait: the Elector is then stopped
}

// New checks cfg as cluster.NewElector checks a cluster.ElectorConfig (E0) and returns a Locker.
func New(cfg Config) (*Locker, error) {
	if cfg.Lock == nil {
		return nil, errors.New("locker: Config.Lock is nil")
	}
	l, r, err := leaseconf.Timing(cfg.LeaseDuration, cfg.RenewInterval, leaseconf.ElectorNames)
	if err != nil {
		return nil, fmt.Errorf("locker: %w", err)
	}
	if cfg.InstanceID == "" {
		cfg.InstanceID = cluster.DefaultInstanceID()
	}
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	return &Locker{lock: cfg.Lock, id: cfg.InstanceID, l: l, r: r, log: log, observer: cfg.Observer,
		session: newSession(), local: make(map[string]*keyTurn)}, nil
}

// InstanceID returns the holder name this Locker writes in the records of the keys it holds.
func (l *Locker) InstanceID() string { return l.id }

// Held is a key this process holds. Its lease is renewed every R until it is lost or released.
type Held struct {
	key  string
	term uint64
	e    *cluster.Elector
	l    *Locker
	won  chan context.Context // the Elector's leaderships, as WhenLeader starts them
	free func()               // ends the key's turn in the Locker (P5)
	ctx  context.Context      // the leadership's: cancelled when it ends
	auto chan struct{}        // closed once this holding's part in the election is over (ended)

	// Guarded by Locker.mu.
	state     heldState
	releasing bool // Release was called: the end of the leadership stops the Elector
	stopErr   error
}

// heldState is where a Held is in its life.
type heldState int

const (
	heldLeading heldState = iota // its leadership lasts, or has just ended
	heldSpare                    // lost; its Elector waits for the key's next Acquire (P2)
	heldAdopted                  // lost; the key's next Acquire took its Elector over
	heldEnded                    // its Elector stopped, or is stopping
)

// Acquire blocks until this process holds key, and returns it held (P1). An attempt that
// fails (a store error, no answer) is retried every R, as an Elector retries (E8). When ctx
// ends first, Acquire returns an error wrapping ctx's, having joined no election: the
// election it ran is stopped, and a lease it won meanwhile released. ctx bounds only the wait:
// the lease, once held, lasts until it is lost or released; its values are kept in
// Held.Context. While this Locker is acquiring or holding key, Acquire first waits for that
// holding to end (P5). The empty key is refused.
func (l *Locker) Acquire(ctx context.Context, key string) (*Held, error) {
	return l.acquire(ctx, key, false)
}

// TryAcquire takes key if no live holder has it (P3), the rule of `leasehold run --try` (C5):
// it returns key held when the record is free, released, or expired (a crashed holder's
// record, left unchanged, expires as E6 judges it: it is taken within L + R of its last
// write); an error wrapping ErrHeld when it saw a live holder (the record changed after its
// first read, or another instance won a race for it), within about R; and the store's error,
// wrapped, at the first attempt that gets no answer. ctx's end returns as Acquire's does. When
// it returns an error, nothing is left held.
func (l *Locker) TryAcquire(ctx context.Context, key string) (*Held, error) {
	return l.acquire(ctx, key, true)
}

// tryVerdict is what ends a TryAcquire without the key: an error wrapping ErrHeld or the
// store's.
type tryVerdict struct {
	mu   sync.Mutex
	seen int // revisions of another holder's record seen
	err  chan error
}

// observe follows C5's rule, on the election's goroutine: it only records.
func (v *tryVerdict) observe(key string, ev cluster.Event) {
	var err error
	switch ev.Kind {
	case cluster.ObservedRevision:
		v.mu.Lock()
		v.seen++
		live := v.seen > 1
		v.mu.Unlock()
		if !live {
			return // the first sight of the record: its holder may have crashed
		}
		err = fmt.Errorf("locker: key %q: %q wrote it again (term %d): %w", key, ev.Holder, ev.Term, ErrHeld)
	case cluster.AttemptFailed:
		if ev.Reason == cluster.ReasonConflict {
			err = fmt.Errorf("locker: key %q: another instance won the race for it: %w", key, ErrHeld)
		} else {
			err = fmt.Errorf("locker: key %q: the store did not answer (%s): %w", key, ev.Reason, ev.Err)
		}
	default:
		return
	}
	select {
	case v.err <- err:
	default:
	}
}

func (l *Locker) acquire(ctx context.Context, key string, try bool) (*Held, error) {
	if key == "" {
		return nil, errors.New("locker: empty key")
	}
	sp, free, err := l.turn(ctx, key, try)
	if err != nil {
		return nil, err
	}
	verdict := &tryVerdict{err: make(chan error, 1)}
	var (
		e   *cluster.Elector
		won chan context.Context
	)
	if sp != nil {
		// The Elector of a holding lost less than R ago (P2): its next attempt writes a new
		// term, as an Elector's does after a loss, without a release, a read or an Elector
		// started before it.
		e, won = sp.h.e, sp.h.won
	} else {
		observer := l.observer
		if try {
			observer = cluster.Observers(func(ev cluster.Event) { verdict.observe(key, ev) }, l.observer)
		}
		if e, won, err = l.startElector(ctx, key, observer); err != nil {
			free()
			return nil, err
		}
	}
	var fail error
wait:
	for {
		select {
		case lctx := <-won:
			if lctx.Err() != nil {
				continue // a leadership of the spare Elector that ended before this Acquire
			}
			term, _ := cluster.TermOf(lctx)
			h := &Held{key: key, term: term, e: e, l: l, won: won, free: free, ctx: lctx, auto: make(chan struct{})}
			// A function run when the holding ends, not a goroutine waiting for it: thousands of
			// keys held would otherwise park a goroutine (and its stack) each.
			context.AfterFunc(lctx, h.ended)
			return h, nil
		case fail = <-verdict.err:
			break wait
		case <-ctx.Done():
			fail = fmt.Errorf("locker: key %q: %w", key, ctx.Err())
			break wait
		}
	}
	// Leave nothing behind: a leadership won meanwhile is released by Stop (E7), within L.
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), l.l)
	defer cancel()
	if err := e.Stop(sctx); err != nil {
		fail = errors.Join(fail, err)
	}
	free()
	return nil, fail
}

// startElector starts the Elector of key's lease, and returns the channel of its leaderships,
// as WhenLeader starts them.
func (l *Locker) startElector(ctx context.Context, key string, observer func(cluster.Event)) (*cluster.Elector, chan context.Context, error) {
	e, err := cluster.NewElector(cluster.ElectorConfig{
		Lock: l.lock, LeaseName: key, LeaseDuration: l.l, RenewInterval: l.r,
		InstanceID: l.id, Logger: l.log, Observer: observer, Session: l.session,
	})
	if err != nil {
		return nil, nil, fmt.Errorf("locker: key %q: %w", key, err)
	}
	won := make(chan context.Context, 1)
	e.WhenLeader(func(lctx context.Context) error {
		// The latest leadership replaces one nobody took: that one may have ended.
		for {
			select {
			case won <- lctx:
				return nil
			default:
			}
			select {
			case <-won:
			default:
			}
		}
	}, nil)
	if err := e.Start(context.WithoutCancel(ctx)); err != nil {
		return nil, nil, fmt.Errorf("locker: key %q: %w", key, err)
	}
	return e, won, nil
}

// turn waits until no other Acquire of this Locker is acquiring or holding key, and takes the
// key's turn (P5); free ends it. Two holdings of one key in one process would be two Electors
// writing one instance ID under two sessions (E12): the second would only wait for the
// first's record to expire. TryAcquire does not wait: the key's holder in this process is a
// live one. When a lost holding's Elector waits for the key's next Acquire (P2), an Acquire
// takes it over with the turn (sp); a TryAcquire stops it first, and then runs on an Elector
// of its own, which tells a live holder from a crashed one.
func (l *Locker) turn(ctx context.Context, key string, try bool) (sp *spare, free func(), err error) {
	for {
		if err := ctx.Err(); err != nil {
			return nil, nil, fmt.Errorf("locker: key %q: %w", key, err)
		}
		l.mu.Lock()
		t, ok := l.local[key]
		if !ok {
			t = &keyTurn{done: make(chan struct{}), parked: make(chan struct{})}
			l.local[key] = t
			l.mu.Unlock()
			return nil, l.freeTurn(key, t), nil
		}
		if sp := t.spare; sp != nil {
			t.spare = nil
			sp.timer.Stop()
			if !try {
				sp.h.state = heldAdopted
				l.mu.Unlock()
				close(sp.h.auto)
				return sp, sp.h.free, nil
			}
			sp.h.state = heldEnded
			l.mu.Unlock()
			sp.h.stop() // the turn ends with it: wait for that below
			continue
		}
		parked := t.parked
		l.mu.Unlock()
		if try {
			return nil, nil, fmt.Errorf("locker: key %q: this Locker (%q) is acquiring or holding it: %w", key, l.id, ErrHeld)
		}
		select {
		case <-t.done:
		case <-parked:
		case <-ctx.Done():
		}
	}
}

// freeTurn returns the function that ends the key's turn t.
func (l *Locker) freeTurn(key string, t *keyTurn) func() {
	return func() {
		l.mu.Lock()
		delete(l.local, key)
		l.mu.Unlock()
		close(t.done)
	}
}

// ended runs when the holding's leadership ends. Released, the Elector is stopping: ended waits
// for that. Lost, the Elector is kept running for R, for the key's next Acquire (P2): the
// usual loop (lose the key, acquire it again) then costs the Elector's next attempt, as a
// lost Elector's does, instead of a release, a new Elector, its read and its takeover at once,
// which under load went on into more losses. No Acquire within R: the Elector is stopped (its
// record released if still its own).
func (h *Held) ended() {
	l := h.l
	l.mu.Lock()
	if h.releasing || h.state != heldLeading {
		h.state = heldEnded
		l.mu.Unlock()
		h.stop()
		return
	}
	t := l.local[h.key]
	sp := &spare{h: h}
	h.state, t.spare = heldSpare, sp
	close(t.parked)
	t.parked = make(chan struct{})
	sp.timer = time.AfterFunc(l.r, func() {
		l.mu.Lock()
		if t.spare != sp {
			l.mu.Unlock()
			return // taken over, or stopped by a TryAcquire or Release
		}
		t.spare, h.state = nil, heldEnded
		l.mu.Unlock()
		h.stop()
	})
	l.mu.Unlock()
}

// stop stops the Elector, within L, ends the key's turn and closes auto. It runs once per
// Elector: from ended, a spare's timer, TryAcquire or Release, whichever set heldEnded.
func (h *Held) stop() {
	ctx, cancel := context.WithTimeout(context.Background(), h.l.l)
	defer cancel()
	err := h.e.Stop(ctx)
	h.l.mu.Lock()
	h.stopErr = err
	h.l.mu.Unlock()
	h.free()
	close(h.auto)
}

// IsHeld reports whether the key is held at the time of the call: checked against the
// holding's deadline, as Elector.IsLeader is (W7), it turns false the instant the deadline
// passes, while Done closes only once the election goroutine has noticed: a moment later, or,
// in a process that was paused or starved of CPU, once that goroutine runs again. Work under
// the lock checks it right before each action, with Term as the fencing token; Done is for
// waiting. It takes no lock.
func (h *Held) IsHeld() bool {
	term, ok := h.e.Term()
	return ok && term == h.term && h.ctx.Err() == nil
}

// Key returns the key held.
func (h *Held) Key() string { return h.key }

// Term returns the term of this holding: a fencing token, larger than that of every earlier
// holding of the key (E11).
func (h *Held) Term() uint64 { return h.term }

// Done returns a channel closed when the key is no longer held: lost (an attempt failed, E4,
// or no renewal succeeded within (L+R)/2 of the start of the last successful one, E5) or
// released. Work done under the lock must stop when it closes.
func (h *Held) Done() <-chan struct{} { return h.ctx.Done() }

// Context returns a context cancelled when Done closes, carrying the term (cluster.TermOf) and the
// values of Acquire's context.
func (h *Held) Context() context.Context { return h.ctx }

// Release stops renewing and releases the key (E7), so that another Acquire takes it within R;
// Done closes at once. It returns once the election has ended, or with an error wrapping
// ctx's when ctx ends first (a release not yet done is then left to the lease's expiry). A
// second call waits for the first and returns its result. After a loss it ends the wait of the
// holding's Elector for the next Acquire (P2) and reports whether its record could be
// released; once an Acquire has taken that Elector over, there is nothing left to end.
func (h *Held) Release(ctx context.Context) error {
	l := h.l
	l.mu.Lock()
	h.releasing = true
	state := h.state
	if state == heldSpare {
		if t := l.local[h.key]; t != nil && t.spare != nil && t.spare.h == h {
			t.spare.timer.Stop()
			t.spare = nil
		}
		h.state = heldEnded
	}
	l.mu.Unlock()
	switch state {
	case heldAdopted:
		return nil
	case heldSpare:
		h.stop()
	case heldLeading:
		if err := h.e.Stop(ctx); err != nil {
			return fmt.Errorf("locker: key %q: release: %w", h.key, err)
		}
	}
	select {
	case <-h.auto:
	case <-ctx.Done():
		return fmt.Errorf("locker: key %q: release: %w", h.key, ctx.Err())
	}
	l.mu.Lock()
	err := h.stopErr
	l.mu.Unlock()
	if err != nil {
		return fmt.Errorf("locker: key %q: release: %w", h.key, err)
	}
	return nil
}

// newSession returns the token of 16 random hex digits the Elector of every key of a Locker
// writes (E12, P6).
func newSession() string {
	var b [8]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	return hex.EncodeToString(b[:])
}
