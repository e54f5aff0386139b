// Package locker hands out leases on named keys: a distributed mutex around one job at a time
// per key, over any cluster.Lock.
//
// A Locker holds its keys through one lease of its own, its session lease, elected and renewed
// by a cluster.Elector (E1–E12 hold for it). A key's record names the holder, the leadership of
// the session lease it was taken under (an epoch) and the key's own term; it is written only
// when the key is taken or released. A key is held while its record names the current epoch and
// the session lease holds, so that a Locker renews one record per R however many keys it holds,
// and a held key costs no goroutine and no timer of its own (P7–P9 in docs/design.md).
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
	"github.com/leasehold/leasehold/internal/recoverlock"
)

// ErrHeld is returned, wrapped, by Locker.TryAcquire when a live holder has the key (P3).
var ErrHeld = errors.New("locker: key held by a live holder")

// Config configures a Locker. Zero values take the defaults, as in ElectorConfig:
// cluster.DefaultLeaseDuration, cluster.DefaultRenewInterval, cluster.DefaultInstanceID() and slog.Default().
type Config struct {
	Lock          cluster.Lock
	InstanceID    string
	LeaseDuration time.Duration // L: how long the session lease is valid without renewal
	RenewInterval time.Duration // R: time between two renewals of the session lease, lower than L
	Logger        *slog.Logger

	// Observer, when set, receives, with Event.Lease the key: each key's BecameLeader and
	// StoppedLeading, an AttemptSucceeded when it is taken, at each renewal of the session
	// lease while it is held and at each read of its record while it is waited for (Holder
	// the record's), and an AttemptFailed for each of its reads and writes that fails; and, with
	// Event.Lease the session lease's name, the session lease's attempts (AttemptSucceeded,
	// AttemptFailed, WatchedChange, ObservedLeader, ObservedRevision), not its leaderships. It
	// is called one event at a time, with the constraints of cluster.ElectorConfig.Observer,
	// and must not call the Locker. It is the one cost that grows with the keys held: a call
	// per held key at every renewal of the session lease.
	Observer func(cluster.Event)
}

// Locker hands out leases on named keys: a distributed mutex around one job at a time per key
// (P1–P9 in docs/design.md). Its keys are held through one session lease, run while a key is
// held, being taken or released. A Locker is safe for concurrent use.
type Locker struct {
	lock     cluster.Lock // the configured Lock, its panics made errors (E8)
	raw      cluster.Lock // the configured Lock, for the Electors (which wrap it themselves)
	watcher  cluster.Watcher
	id       string
	l, r     time.Duration
	log      *slog.Logger
	observer func(cluster.Event)
	// token is the session lease's session (E12), kept by every run of the session lease's
	// Elector: a record naming it is this Locker's, whichever epoch it names (P8).
	token string
	name  string // the session lease's name

	mu     sync.Mutex
	local  map[string]*keyTurn // the keys acquiring, held, or being released (P5)
	sess   *session            // the session lease's current run, nil when none
	ending chan struct{}       // closed once the last run's Elector has stopped; nil when none is stopping
	fences map[string]*fence   // by session lease name: the other sessions the acquiring keys wait for
	emitMu sync.Mutex          // one Observer call at a time
}

// keyTurn is a key's turn in its Locker (P5): from an Acquire until the key is released, lost,
// or given up, a release whose answer was lost included.
type keyTurn struct {
	done chan struct{} // closed when the turn ends
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
	token := newToken()
	lk := &Locker{
		lock: recoverlock.Lock[cluster.Record]{Store: cfg.Lock, Pkg: "locker"}, raw: cfg.Lock,
		id: cfg.InstanceID, l: l, r: r, log: log, observer: cfg.Observer,
		token: token, name: sessionLeaseName(cfg.InstanceID, token),
		local: make(map[string]*keyTurn), fences: make(map[string]*fence),
	}
	lk.watcher, _ = cfg.Lock.(cluster.Watcher)
	return lk, nil
}

// InstanceID returns the holder name this Locker writes in the records of the keys it holds.
func (l *Locker) InstanceID() string { return l.id }

// SessionLease returns the name of this Locker's session lease: the record whose leadership
// the keys it holds are held under (P7).
func (l *Locker) SessionLease() string { return l.name }

// Acquire blocks until this process holds key, and returns it held (P1). A read or write that
// fails is retried every R (E8). When ctx ends first, Acquire returns an error wrapping ctx's,
// having left nothing held: a key taken meanwhile is released. ctx bounds only the wait: the
// key, once held, lasts until it is lost or released; ctx's values are kept in Held.Context.
// While this Locker is acquiring, holding or releasing key, Acquire first waits for that to
// end (P5). The empty key is refused.
func (l *Locker) Acquire(ctx context.Context, key string) (*Held, error) {
	return l.acquire(ctx, key, false)
}

// TryAcquire takes key if no live holder has it (P3), the rule of `leasehold run --try` (C5):
// it returns key held when the record is free, released, or names a leadership of its holder's
// session lease that has ended (a crashed holder's key is taken within L + R of its session's
// last renewal); an error wrapping ErrHeld when it saw the holder alive (its session lease
// renewed after the first sight, or another instance won a race for the key), within about R;
// and the store's error, wrapped, at the first read or write that gets no answer. ctx's end
// returns as Acquire's does. When it returns an error, nothing is left held.
func (l *Locker) TryAcquire(ctx context.Context, key string) (*Held, error) {
	return l.acquire(ctx, key, true)
}

func (l *Locker) acquire(ctx context.Context, key string, try bool) (*Held, error) {
	if key == "" {
		return nil, errors.New("locker: empty key")
	}
	t, err := l.turn(ctx, key, try)
	if err != nil {
		return nil, err
	}
	a := &attempt{l: l, key: key, turn: t, try: try}
	h, err := a.run(ctx)
	a.close()
	if err != nil {
		a.giveUp()
		return nil, err
	}
	return h, nil
}

// turn waits until this Locker is not acquiring, holding or releasing key, and takes the key's
// turn (P5). TryAcquire does not wait: the key's holder in this process is a live one.
func (l *Locker) turn(ctx context.Context, key string, try bool) (*keyTurn, error) {
	for {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("locker: key %q: %w", key, err)
		}
		l.mu.Lock()
		t, ok := l.local[key]
		if !ok {
			t = &keyTurn{done: make(chan struct{})}
			l.local[key] = t
			l.mu.Unlock()
			return t, nil
		}
		l.mu.Unlock()
		if try {
			return nil, fmt.Errorf("locker: key %q: this Locker (%q) is acquiring or holding it: %w", key, l.id, ErrHeld)
		}
		select {
		case <-t.done:
		case <-ctx.Done():
		}
	}
}

// endTurnLocked ends key's turn t. Called with l.mu held.
func (l *Locker) endTurnLocked(key string, t *keyTurn) {
	if l.local[key] == t {
		delete(l.local, key)
	}
	close(t.done)
}

// emit sends ev to the Observer, if any, one call at a time.
func (l *Locker) emit(ev cluster.Event) {
	if l.observer == nil {
		return
	}
	if ev.Instance == "" {
		ev.Instance = l.id
	}
	if ev.Time.IsZero() {
		ev.Time = time.Now()
	}
	l.emitMu.Lock()
	defer l.emitMu.Unlock()
	l.observer(ev)
}

// newToken returns the token of 16 random hex digits the session lease's Elector writes (E12),
// which the records of the keys name beside the epoch (P8).
func newToken() string {
	var b [8]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	return hex.EncodeToString(b[:])
}
