package cluster

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/leasehold/leasehold/internal/callbacks"
	"github.com/leasehold/leasehold/internal/fencing"
	"github.com/leasehold/leasehold/internal/leaseconf"
	"github.com/leasehold/leasehold/internal/wallclock"
	"github.com/leasehold/leasehold/store"
)

// ElectorConfig configures an Elector. Zero values take the defaults (DefaultLeaseDuration,
// DefaultRenewInterval, DefaultLeaseName; L > 0 and 0 < R < L is checked); InstanceID
// defaults to DefaultInstanceID() and Logger to slog.Default().
type ElectorConfig struct {
	Lock          Lock
	LeaseName     string
	LeaseDuration time.Duration // L: how long a lease is valid without renewal
	RenewInterval time.Duration // R: time between two attempts, lower than L
	InstanceID    string
	Logger        *slog.Logger

	// Session is the token this Elector writes beside InstanceID in the records it holds, to
	// tell its own records from another process's under the same ID (E12): a random one when
	// empty, as it should be. Electors that share one are one process to the election, so
	// only Electors that never run on one lease at once may: the keys of a per-key lock.
	Session string

	// Observer, when set, receives every Event of the election, in order, on the election's
	// goroutine: it must return quickly (hand the event to a channel or a counter) and must
	// not call the Elector's Stop. It receives an event before the Logger gets the line that
	// reports it ("became leader", "stopped leading", "observed leader", "attempt failed"):
	// whoever reads that line may count on the Observer's state.
	Observer func(Event)

	// Gate, when set, decides whether this Elector may write to hold its record: for a
	// product that runs several Electors in one instance of which only some may hold at once
	// (see Gate). nil: always open.
	Gate Gate

	// Advertise is the value this instance publishes while it holds the lease, its address
	// for instance: at most MaxValueBytes, one line (V1). Leader and FollowLeader read it.
	Advertise string

	// Priority ranks this instance among the candidates (Q1), 0 by default, negative allowed:
	// a follower whose priority is higher than the holder's asks it to hand over, once it has
	// been a candidate for StabilityWindow without interruption (Q2). It is written in the
	// records this instance holds, so that the others can compare.
	Priority int
	// StabilityWindow is how long a candidate must have been one, without leading, failing
	// its health check or restarting, before it preempts a holder of lower priority (Q2):
	// during a rolling deploy, leadership moves once, not at every new replica. Default
	// DefaultStabilityWindowFactor × LeaseDuration.
	StabilityWindow time.Duration

	// Health, when set, is this instance's health check, run at Start and then every
	// RenewInterval, each run with HealthTimeout (U1–U3). A candidate whose last check failed
	// (or that has not passed one yet) takes a free lease only as a last resort; a leader
	// whose last HealthFailures checks failed says so in its record, and hands over to the
	// first healthy candidate that asks, whatever its priority. Health must return once its
	// context ends.
	Health func(ctx context.Context) error
	// HealthFailures is how many checks in a row must fail before a leader reports itself
	// unhealthy; default DefaultHealthFailures.
	HealthFailures int
	// HealthTimeout bounds each run of Health; default, and at most, RenewInterval.
	HealthTimeout time.Duration
}

// Defaults of the priority and health settings of ElectorConfig.
const (
	DefaultStabilityWindowFactor = 3
	DefaultHealthFailures        = 3
)

// Elector elects a leader among the instances sharing a lease, and runs the WhenLeader
// callbacks of this instance. It implements Cluster. Create it with NewElector, then Start it;
// Stop releases the lease.
type Elector struct {
	lock     Lock
	watcher  Watcher // the Lock's watch, nil when it has none (E9)
	beatless bool    // its watch sends no heartbeats: only its changes prove it alive (E9)
	name     string
	id       string
	l, r     time.Duration
	log      *slog.Logger
	observer func(Event)
	cb       *callbacks.Runner

	leading atomic.Pointer[leadership] // non-nil while this instance leads
	wrote   atomic.Bool                // a write of the record was ever sent: it may hold the lease

	// Identity and terms (E11, E12). session is this process's token in the records it
	// writes; twin is set once the warning that another process uses this instance ID has
	// been logged. seen is the highest term read or written; lastLed, the term of the last
	// leadership, is owned by the election goroutine.
	session string
	twin    atomic.Bool
	seen    atomic.Uint64
	lastLed uint64
	// wallSkew is added to every wall clock reading this Elector writes (wall): tests set it
	// to give the fake clock (which begins in 2000) a later wall time, or change it while the
	// election runs as a wall clock that jumps (M2).
	wallSkew atomic.Int64

	// Resign and gates (resign.go, gate.go). resigned is the revision of the record this
	// instance released when it stepped down without a next holder (R4), owned by the
	// attempts, which never overlap. claim is ElectorConfig.Gate's (a slot's of
	// cluster/holders, a fence's of cluster/partition), nil for an Elector of its own; slot is
	// what it passes to claim. led is true from BecameLeader until StoppedLeading has been
	// emitted (Idle).
	resigned string
	slot     int
	claim    claimer
	led      atomic.Bool
	// poke asks the election goroutine for an attempt at once: a gate that opened (D6).
	poke chan struct{}

	value string // ElectorConfig.Advertise (V1)
	rank  *rank  // priority and health (priority.go)

	// life is the start and the one stop (E7), and the goroutines Done waits for (stop.go).
	life *lifecycle
}

var _ Cluster = (*Elector)(nil)

// leadership is one term of this instance's leadership.
type leadership struct {
	term     uint64
	deadline time.Time // IsLeader is false from this instant on (E5, W7)
	ctx      context.Context
	cancel   context.CancelFunc
}

// NewElector checks cfg and returns an Elector that has not started (E0).
func NewElector(cfg ElectorConfig) (*Elector, error) {
	if cfg.Lock == nil {
		return nil, errors.New("cluster: ElectorConfig.Lock is nil")
	}
	cfg.LeaseName = leaseconf.LeaseName(cfg.LeaseName)
	if cfg.InstanceID == "" {
		cfg.InstanceID = DefaultInstanceID()
	}
	l, r, err := leaseconf.Timing(cfg.LeaseDuration, cfg.RenewInterval, leaseconf.ElectorNames)
	if err != nil {
		return nil, fmt.Errorf("cluster: lease %q: %w", cfg.LeaseName, err)
	}
	cfg.LeaseDuration, cfg.RenewInterval = l, r
	if m, ok := cfg.Lock.(store.MinWriteInterval); ok {
		// A renewal writes the record every R: a store that takes fewer writes would refuse
		// some, and the leader would lose the lease for nothing.
		if least, why := m.MinWriteInterval(); least > 0 && r < least {
			return nil, fmt.Errorf("cluster: lease %q: ElectorConfig.RenewInterval %v is shorter than %v, the least its store accepts between two writes (%s)", cfg.LeaseName, r, least, why)
		}
	}
	if err := leaseconf.CheckValue("ElectorConfig.Advertise", cfg.Advertise); err != nil {
		return nil, fmt.Errorf("cluster: lease %q: %w", cfg.LeaseName, err)
	}
	rank, err := resolveRank(cfg)
	if err != nil {
		return nil, fmt.Errorf("cluster: lease %q: %w", cfg.LeaseName, err)
	}
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	log = log.With("lease", cfg.LeaseName, "instance", cfg.InstanceID)
	e := &Elector{
		lock:     recovering(cfg.Lock),
		name:     cfg.LeaseName,
		id:       cfg.InstanceID,
		session:  cmp.Or(cfg.Session, newSession()),
		l:        cfg.LeaseDuration,
		r:        cfg.RenewInterval,
		log:      log,
		observer: cfg.Observer,
		value:    cfg.Advertise,
		rank:     rank,
		poke:     make(chan struct{}, 1),
		life:     newLifecycle(cfg.LeaseName),
	}
	if w, ok := cfg.Lock.(Watcher); ok {
		e.watcher = w
		if h, ok := w.(HeartbeatWatcher); ok && !h.WatchHeartbeats() {
			e.beatless = true
		}
	}
	if cfg.Gate != nil {
		e.claim = gateClaimer{cfg.Gate}
	}
	e.cb = callbacks.New(log, e.IsLeader)
	return e, nil
}

// InstanceID returns this instance's identity in the election.
func (e *Elector) InstanceID() string { return e.id }

// newSession returns a random token of 16 hex digits (E12).
func newSession() string {
	var b [8]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	return hex.EncodeToString(b[:])
}

// owns reports whether rec is this instance's own: it names this instance ID and was written
// by this Elector (E12). A record naming this ID with another session, or none, is another
// process's, and is followed as any other holder's.
func (e *Elector) owns(rec Record) bool { return rec.Holder == e.id && rec.Session == e.session }

// checkTwin logs, once per Elector, that another process holds a record under this instance
// ID (E12).
func (e *Elector) checkTwin(rec Record) {
	if rec.Holder == e.id && rec.Session != e.session && e.twin.CompareAndSwap(false, true) {
		e.log.Warn("leasehold: another process uses this instance ID: following its leadership; give each process an ID of its own",
			"holder", rec.Holder, "term", rec.Term)
	}
}

// see records a term read or written (E11).
func (e *Elector) see(term uint64) {
	for {
		s := e.seen.Load()
		if term <= s || e.seen.CompareAndSwap(s, term) {
			return
		}
	}
}

// nextTerm returns the term of a new leadership written on a record of term prev (0 for a
// new record): above prev and every term this Elector has seen, and at least the wall clock's
// floor (E11).
func (e *Elector) nextTerm(prev uint64, now time.Time) uint64 {
	return fencing.Next(prev, e.seen.Load(), e.wall(now))
}

// wall returns the wall clock reading of now, the one place this Elector's wall time comes
// from: the term's floor and the times it writes (M2). It is the process's reading, as the
// partitions take it (wallclock.Reading), plus this Elector's test skew. Every decision
// compares monotonic readings instead.
func (e *Elector) wall(now time.Time) time.Time {
	return wallclock.Reading(now).Add(time.Duration(e.wallSkew.Load()))
}

// LeaseName returns the name of the lease.
func (e *Elector) LeaseName() string { return e.name }

// LeaseDuration returns L, how long a lease is valid without renewal.
func (e *Elector) LeaseDuration() time.Duration { return e.l }

// RenewInterval returns R, the time between two attempts.
func (e *Elector) RenewInterval() time.Duration { return e.r }

// IsLeader reports whether this instance leads: it holds a lease that cannot have expired for
// the others. It is checked against the leadership's deadline at the time of the call, so it
// turns false the instant the deadline passes, before the election goroutine has noticed
// (W7). It takes no lock.
func (e *Elector) IsLeader() bool {
	l := e.leading.Load()
	// time.Until reads only the monotonic clock, not the wall clock as time.Now does: half
	// the cost, on the path every caller of IsLeader pays.
	return l != nil && time.Until(l.deadline) > 0
}

// Term returns the term of the current leadership, and whether this instance leads.
func (e *Elector) Term() (uint64, bool) {
	l := e.leading.Load()
	if l == nil || !time.Now().Before(l.deadline) {
		return 0, false
	}
	return l.term, true
}

// WhenLeader registers fn, to run each time this instance becomes the leader, and
// deregistered (which may be nil), to run each time that leadership ends and when the Elector
// stops. It may be called before Start, while running, or after Stop (W1); registering while
// leading runs fn at once (W2).
//
// The calls of one registration run in order on a goroutine of their own and never overlap:
// deregistered starts only after the fn before it has returned (W4). fn's context is
// cancelled when its leadership ends, and carries the term (TermOf). An error or panic from
// fn is logged and counts as fn having run (W5). deregistered runs only after a fn has run,
// so the two calls always come in pairs.
//
// The returned remove ends the registration: it cancels fn's context, calls deregistered if
// fn ran since the last deregistered, and returns once that call has returned (W6). Calling it
// again does no more. It waits for the registration's callbacks, so they call it on a new
// goroutine (go remove()); see Cluster.WhenLeader for what else a callback may call: not Stop.
func (e *Elector) WhenLeader(fn LeaderFunc, deregistered func()) (remove func()) {
	if fn == nil {
		fn = func(context.Context) error { return nil }
	}
	return e.cb.Add(fn, deregistered)
}

// Start starts the election in the background and returns at once: an attempt runs now,
// then every RenewInterval. The end of ctx stops the election as Stop does, with a context of
// its own that lasts LeaseDuration - RenewInterval (see Stop): nothing waits for that stop, so
// it is bounded by the time the lease leaves to hand over. ctx's values are kept for the
// callbacks' contexts. Start returns an error if the Elector was already started or stopped.
func (e *Elector) Start(ctx context.Context) error {
	return e.life.begin(func() { e.run(ctx) })
}

// Stop ends the election (E7), the one way an election ends. If this instance leads, it
// stops leading at once: the fn contexts are cancelled and Stop waits for every deregistered
// callback to return, then releases the lease so that another instance takes over at its next
// attempt. When ctx ends before the callbacks have returned, Stop does not release the lease
// (it expires by itself, so the next leader's fn never overlaps this one's) and returns an
// error. The end of Start's context is a Stop whose context lasts L - R.
//
// Stop returns once every goroutine of the election has ended, or when ctx ends, whichever
// comes first. The one that may outlive it is the watch's (E9), when the Lock's Watch does not
// return soon after its context ends: Stop then returns, after the release, an error wrapping
// ctx's that names the watch, and Done is closed once the Watch has returned.
//
// Stop happens once: a second call, concurrent or later, and a call after the end of Start's
// context, wait within their own ctx for the first stop and return its result; when the watch
// had not returned by then, they also wait for it, within their ctx.
//
// Stop must not be called from a WhenLeader callback: it waits for every callback, so it
// would wait for itself until ctx ends, then return an error without releasing the lease.
// Call it on a new goroutine instead (see Cluster.WhenLeader).
func (e *Elector) Stop(ctx context.Context) error { return e.life.stop(ctx) }

// Done returns a channel closed once the election has ended, by Stop or by the cancellation
// of Start's context, and every goroutine of it has returned: the watch's too, which waits
// for the Lock's Watch to return after its context ends.
func (e *Elector) Done() <-chan struct{} { return e.life.done }

func (e *Elector) emit(ev Event) {
	switch ev.Kind {
	case BecameLeader:
		e.led.Store(true)
	case StoppedLeading:
		defer e.led.Store(false) // once the Observer has it (Idle)
	}
	if e.observer == nil {
		return
	}
	ev.Lease, ev.Instance = e.name, e.id
	if ev.Time.IsZero() {
		ev.Time = time.Now()
	}
	e.observer(ev)
}
