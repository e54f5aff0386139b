package gocronlock

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/go-co-op/gocron/v2"

	"github.com/leasehold/leasehold/cluster"
	"github.com/leasehold/leasehold/cluster/locker"
	"github.com/leasehold/leasehold/internal/leaseconf"
)

// ErrLate is returned, wrapped, by Locker.Lock when it could take the key only after a
// crashed holder's record expired: that holder may have run the same tick.
var ErrLate = errors.New("gocronlock: key taken after its holder's lease expired; the run is skipped")

// LockerConfig configures a Locker. Lock, InstanceID, LeaseDuration, RenewInterval, Logger and
// Observer are those of locker.Config, with its defaults and checks.
type LockerConfig struct {
	Lock          cluster.Lock
	InstanceID    string
	LeaseDuration time.Duration // L
	RenewInterval time.Duration // R
	Logger        *slog.Logger
	Observer      func(cluster.Event)

	// Hold is how long a run keeps its job's key after taking it, however soon the job
	// returns: above R plus the skew between the replicas' ticks, below the period of the
	// most frequent job (see the package documentation). Required: it depends on the jobs.
	Hold time.Duration

	// KeyPrefix is put before each job's name to make its key (its lease's name), so that
	// the jobs' keys do not meet other leases in the store.
	KeyPrefix string
}

// Locker is a gocron.Locker over a locker.Locker: each run of a job takes the job's key
// with TryAcquire, and keeps it for Hold (see the package documentation for the rule and
// its guarantees). A Locker is safe for concurrent use.
type Locker struct {
	cl     *locker.Locker
	hold   time.Duration
	l, r   time.Duration
	prefix string
	log    *slog.Logger

	mu      sync.Mutex
	closed  bool
	pending sync.WaitGroup // keys taken and not yet released
}

var _ gocron.Locker = (*Locker)(nil)

// NewLocker checks cfg and returns a Locker. Errors name the parameter at fault.
func NewLocker(cfg LockerConfig) (*Locker, error) {
	l, r, err := leaseconf.Timing(cfg.LeaseDuration, cfg.RenewInterval, leaseconf.ElectorNames)
	if err != nil {
		return nil, fmt.Errorf("gocronlock: NewLocker: %w", err)
	}
	if cfg.Hold <= r {
		return nil, fmt.Errorf("gocronlock: NewLocker: Hold %v must be above RenewInterval %v: a replica whose tick fires later gives up on a live holder only once it sees a renewal, within R", cfg.Hold, r)
	}
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	cl, err := locker.New(locker.Config{
		Lock: cfg.Lock, InstanceID: cfg.InstanceID, LeaseDuration: l, RenewInterval: r,
		Logger: log, Observer: cfg.Observer,
	})
	if err != nil {
		return nil, fmt.Errorf("gocronlock: NewLocker: %w", err)
	}
	return &Locker{cl: cl, hold: cfg.Hold, l: l, r: r, prefix: cfg.KeyPrefix, log: log}, nil
}

// InstanceID returns the holder name written in the records of the keys this Locker takes.
func (l *Locker) InstanceID() string { return l.cl.InstanceID() }

// Lock takes the key of the job named key (KeyPrefix + key) with locker.Locker.TryAcquire,
// for one run. It returns an error wrapping locker.ErrHeld when another replica's run holds
// the key, or this Locker's does (a run of an earlier tick, still running or within its
// Hold), and the store's error when the store does not answer: gocron then skips the run.
//
// A key left by a crashed holder is taken once its record has expired, L after this Lock
// first read it, and at once given back: the crashed holder may have run this very tick.
// Lock then returns, within L + R, an error wrapping ErrLate, and the next tick finds the key
// free. The test is the time taken: a key taken more than (L+R)/2 after Lock was called. An
// expiry comes L after the first read at the earliest, and every other way to the key is
// shorter than R: a free or released record is taken at the first attempt, and a live
// holder either renews within R (ErrHeld) or releases it before. ctx (gocron's job context)
// bounds the wait.
func (l *Locker) Lock(ctx context.Context, key string) (gocron.Lock, error) {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil, fmt.Errorf("gocronlock: lock %q: the Locker is closed", l.prefix+key)
	}
	l.pending.Add(1)
	l.mu.Unlock()
	asked := time.Now()
	h, err := l.cl.TryAcquire(ctx, l.prefix+key)
	if err != nil {
		l.pending.Done()
		return nil, err
	}
	if took := time.Since(asked); took > (l.l+l.r)/2 {
		defer l.pending.Done()
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), l.l)
		defer cancel()
		if rerr := h.Release(rctx); rerr != nil {
			l.log.Warn("gocronlock: release", "key", h.Key(), "err", rerr)
		}
		return nil, fmt.Errorf("gocronlock: lock %q: taken %v after the tick, past (L+R)/2: %w", h.Key(), took.Round(time.Millisecond), ErrLate)
	}
	return &runLock{l: l, h: h, until: time.Now().Add(l.hold)}, nil
}

// Close refuses new locks and waits until every key taken has been released: at most Hold
// after the last one was taken, once its run has returned. When ctx ends first it returns
// ctx's error; the keys still held are released at their time, or expire if the process
// exits first.
func (l *Locker) Close(ctx context.Context) error {
	l.mu.Lock()
	l.closed = true
	l.mu.Unlock()
	done := make(chan struct{})
	go func() {
		l.pending.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("gocronlock: close: keys still held: %w", ctx.Err())
	}
}

// runLock is one run's hold of its job's key.
type runLock struct {
	l     *Locker
	h     *locker.Held
	until time.Time // the key is kept at least until then
	once  sync.Once
}

// Unlock ends the run's use of the key and returns at once: the key is released in the
// background at the end of its Hold (at once if that has passed), so that a replica whose
// tick fires later does not run the same tick again. A second call does nothing.
func (k *runLock) Unlock(context.Context) error {
	k.once.Do(func() {
		go k.release()
	})
	return nil
}

func (k *runLock) release() {
	defer k.l.pending.Done()
	if d := time.Until(k.until); d > 0 {
		t := time.NewTimer(d)
		select {
		case <-t.C:
		case <-k.h.Done(): // lost: nothing left to keep
		}
		t.Stop()
	}
	ctx, cancel := context.WithTimeout(context.Background(), k.l.l)
	defer cancel()
	if err := k.h.Release(ctx); err != nil {
		k.l.log.Warn("gocronlock: release", "key", k.h.Key(), "err", err)
	}
}
