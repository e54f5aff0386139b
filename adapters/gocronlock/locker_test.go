package gocronlock_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-co-op/gocron/v2"

	"github.com/leasehold/leasehold/adapters/gocronlock"
	"github.com/leasehold/leasehold/cluster"
	"github.com/leasehold/leasehold/cluster/locker"
	"github.com/leasehold/leasehold/store/memory"
)

var quietLog = slog.New(slog.NewTextHandler(io.Discard, nil))

func newTestLocker(t *testing.T, lock cluster.Lock, id string) *gocronlock.Locker {
	t.Helper()
	l, err := gocronlock.NewLocker(gocronlock.LockerConfig{
		Lock: lock, InstanceID: id, LeaseDuration: fleetL, RenewInterval: fleetR, Hold: fleetHold, Logger: quietLog,
	})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func TestNewLockerConfig(t *testing.T) {
	lock := cluster.NewStoreLock(memory.New())
	for _, c := range []struct {
		cfg  gocronlock.LockerConfig
		want string
	}{
		{gocronlock.LockerConfig{Lock: lock, RenewInterval: time.Second, Hold: time.Second}, "Hold"},
		{gocronlock.LockerConfig{Lock: lock, RenewInterval: time.Second}, "Hold"},
		{gocronlock.LockerConfig{Lock: lock, LeaseDuration: time.Second, RenewInterval: 2 * time.Second, Hold: 3 * time.Second}, "RenewInterval"},
		{gocronlock.LockerConfig{Hold: time.Hour}, "Lock"},
	} {
		if _, err := gocronlock.NewLocker(c.cfg); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("NewLocker(%+v) = %v, want an error naming %s", c.cfg, err, c.want)
		}
	}
	if _, err := gocronlock.NewElector(nil); err == nil {
		t.Error("NewElector(nil) returned no error")
	}
}

// A run's key is kept for Hold after it was taken, however soon Unlock comes, and released
// then; a run that outlasts Hold releases it at Unlock.
func TestLockKeepsTheKeyForHold(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lock := cluster.NewStoreLock(memory.New())
		a, b := newTestLocker(t, lock, "a"), newTestLocker(t, lock, "b")
		ctx := t.Context()
		start := time.Now()
		la, err := a.Lock(ctx, "job")
		if err != nil {
			t.Fatal(err)
		}
		if err := la.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
		// a's own next run and b's are refused while the key is kept.
		if _, err := a.Lock(ctx, "job"); !errors.Is(err, locker.ErrHeld) {
			t.Fatalf("a's second Lock within Hold = %v, want ErrHeld", err)
		}
		if _, err := b.Lock(ctx, "job"); !errors.Is(err, locker.ErrHeld) {
			t.Fatalf("b's Lock within Hold = %v, want ErrHeld", err)
		}
		if took := time.Since(start); took >= fleetHold {
			t.Fatalf("b gave up %v after the key was taken, not within Hold %v", took, fleetHold)
		}
		time.Sleep(fleetHold - time.Since(start))
		synctest.Wait()
		lb, err := b.Lock(ctx, "job")
		if err != nil {
			t.Fatalf("b's Lock after Hold: %v", err)
		}
		// A run longer than Hold: the key is released at Unlock.
		time.Sleep(2 * fleetHold)
		if _, err := a.Lock(ctx, "job"); !errors.Is(err, locker.ErrHeld) {
			t.Fatalf("a's Lock while b's run goes on past Hold = %v, want ErrHeld", err)
		}
		unlocked := time.Now()
		if err := lb.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		la, err = a.Lock(ctx, "job")
		if err != nil {
			t.Fatalf("a's Lock after b's Unlock past Hold: %v", err)
		}
		if d := time.Since(unlocked); d != 0 {
			t.Errorf("key taken %v after an Unlock past Hold, want at once", d)
		}
		// Close waits for the key's release, at the end of its Hold.
		if err := la.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
		taken := time.Now()
		if err := a.Close(ctx); err != nil {
			t.Fatal(err)
		}
		if d := time.Since(taken); d != fleetHold {
			t.Errorf("Close returned %v after the last key was taken, want Hold %v", d, fleetHold)
		}
		if err := b.Close(ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := a.Lock(ctx, "job"); err == nil {
			t.Error("Lock after Close succeeded")
		}
	})
}

// releasingLocker is the classic distributed lock around gocron's runs: held while the run
// goes on, released at Unlock. It is the control of TestOneRunPerTick.
type releasingLocker struct{ l *locker.Locker }

func (r releasingLocker) Lock(ctx context.Context, key string) (gocron.Lock, error) {
	h, err := r.l.TryAcquire(ctx, key)
	if err != nil {
		return nil, err
	}
	return releasingLock{h}, nil
}

type releasingLock struct{ h *locker.Held }

func (r releasingLock) Unlock(ctx context.Context) error { return r.h.Release(ctx) }

// Two real gocron schedulers in fake time run a job every second whose runs take 10ms, b's
// ticks skew after a's. With a Locker, each tick runs once while skew + R < Hold (the
// store's latency is 0 here); with a skew past the last renewal before the release, b reads
// a's record too late to see it renewed, and takes the key when a releases it. With a lock
// released when the run ends, b takes the key at once and runs every tick again.
func TestOneRunPerTick(t *testing.T) {
	holding := func(t *testing.T, lock cluster.Lock, id string) gocron.Locker { return newTestLocker(t, lock, id) }
	releasing := func(t *testing.T, lock cluster.Lock, id string) gocron.Locker {
		l, err := locker.New(locker.Config{Lock: lock, InstanceID: id, LeaseDuration: fleetL, RenewInterval: fleetR, Logger: quietLog})
		if err != nil {
			t.Fatal(err)
		}
		return releasingLocker{l}
	}
	for _, c := range []struct {
		name   string
		locker func(t *testing.T, lock cluster.Lock, id string) gocron.Locker
		skew   time.Duration
		dups   bool
	}{
		{"Locker", holding, 0, false},
		{"Locker skew within Hold-R", holding, fleetHold - fleetR - 50*time.Millisecond, false},
		{"Locker skew past the last renewal", holding, fleetHold - 50*time.Millisecond, true},
		// b fires 1ms after a, so that it finds the key taken rather than racing a for it
		// at one instant (a lost race is ErrHeld too, P3): it then takes it at a's Unlock.
		{"released at Unlock", releasing, time.Millisecond, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				lock := cluster.NewStoreLock(memory.New())
				var mu sync.Mutex
				runs := map[int64][]string{}
				var scheds []gocron.Scheduler
				var lockers []gocron.Locker
				first := time.Now().Add(time.Second)
				for i, id := range []string{"a", "b"} {
					locker := c.locker(t, lock, id)
					lockers = append(lockers, locker)
					s, err := gocron.NewScheduler(gocron.WithDistributedLocker(locker),
						gocron.WithLogger(gocron.NewLogger(gocron.LogLevelError)))
					if err != nil {
						t.Fatal(err)
					}
					_, err = s.NewJob(gocron.DurationJob(time.Second), gocron.NewTask(func() {
						mu.Lock()
						tick := time.Now().Truncate(time.Second).Unix()
						runs[tick] = append(runs[tick], id)
						mu.Unlock()
						time.Sleep(10 * time.Millisecond)
					}), gocron.WithName("tick"), gocron.WithStartAt(gocron.WithStartDateTime(first.Add(time.Duration(i)*c.skew))))
					if err != nil {
						t.Fatal(err)
					}
					scheds = append(scheds, s)
				}
				for _, s := range scheds {
					s.Start()
				}
				time.Sleep(10*time.Second + 900*time.Millisecond)
				for _, s := range scheds {
					if err := s.Shutdown(); err != nil {
						t.Fatal(err)
					}
				}
				for _, l := range lockers {
					if l, ok := l.(*gocronlock.Locker); ok {
						if err := l.Close(t.Context()); err != nil {
							t.Fatal(err)
						}
					}
				}
				mu.Lock()
				defer mu.Unlock()
				dups := 0
				for _, ids := range runs {
					if len(ids) > 1 {
						dups++
					}
				}
				t.Logf("skew %v: %d ticks run, %d of them twice", c.skew, len(runs), dups)
				if len(runs) < 10 {
					t.Errorf("%d ticks run in 10.9 s, want 10", len(runs))
				}
				if c.dups != (dups > 0) {
					t.Errorf("%d ticks run twice, want duplicates: %v", dups, c.dups)
				}
			})
		})
	}
}

// A run whose holder crashes with the key: another replica's Lock of the same tick, which
// read the record before any renewal, takes the key once it has expired, L later; it must
// not run that tick, which the crashed holder may have run, but give the key back at once.
func TestLockAfterACrashedHolderSkipsTheTick(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lock := cluster.NewStoreLock(memory.New())
		cut := &cutLock{Lock: lock}
		a, b := newTestLocker(t, cut, "a"), newTestLocker(t, lock, "b")
		ctx := t.Context()
		if _, err := a.Lock(ctx, "job"); err != nil {
			t.Fatal(err)
		}
		cut.cut.Store(true)
		asked := time.Now()
		if _, err := b.Lock(ctx, "job"); !errors.Is(err, gocronlock.ErrLate) {
			t.Fatalf("b's Lock of the crashed holder's tick = %v, want ErrLate", err)
		}
		if took := time.Since(asked); took < fleetL || took > fleetL+fleetR {
			t.Errorf("b's Lock returned %v after it was called, want within [L, L+R] = [%v, %v]", took, fleetL, fleetL+fleetR)
		}
		// The key was given back: the next tick takes it at once.
		asked = time.Now()
		lb, err := b.Lock(ctx, "job")
		if err != nil {
			t.Fatalf("b's Lock of the next tick: %v", err)
		}
		if took := time.Since(asked); took != 0 {
			t.Errorf("b's Lock of the next tick took %v, want at once", took)
		}
		if err := lb.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
		if err := b.Close(ctx); err != nil {
			t.Fatal(err)
		}
	})
}
