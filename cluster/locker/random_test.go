package locker

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/leasehold/leasehold/cluster"
)

// randLock is one Locker's Lock in TestRandomLockers: its calls go through a faultStore of its
// own (errors, hangs, latency, lost answers), its watches straight to the memory store, some of
// their calls dropped and some ended with an error; a crash fails every call from then on.
type randLock struct {
	cluster.Lock
	watch   cluster.Watcher
	crashed atomic.Bool
	drop    atomic.Int64 // per thousand watch calls dropped
	mu      sync.Mutex
	rng     *rand.Rand
}

var errCrashed = errors.New("crashed")

func (r *randLock) Get(ctx context.Context, name string) (cluster.Record, error) {
	if r.crashed.Load() {
		return cluster.Record{}, errCrashed
	}
	return r.Lock.Get(ctx, name)
}

func (r *randLock) Create(ctx context.Context, name string, rec cluster.Record) (cluster.Record, error) {
	if r.crashed.Load() {
		return cluster.Record{}, errCrashed
	}
	return r.Lock.Create(ctx, name, rec)
}

func (r *randLock) Update(ctx context.Context, name string, rec cluster.Record) (cluster.Record, error) {
	if r.crashed.Load() {
		return cluster.Record{}, errCrashed
	}
	return r.Lock.Update(ctx, name, rec)
}

func (r *randLock) Watch(ctx context.Context, name string, fn func(cluster.Record, error)) error {
	if r.crashed.Load() {
		return errCrashed
	}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var cut atomic.Bool
	err := r.watch.Watch(wctx, name, func(rec cluster.Record, err error) {
		r.mu.Lock()
		n := r.rng.IntN(1000)
		r.mu.Unlock()
		switch {
		case r.crashed.Load() || cut.Load():
		case n < 5: // the watch fails
			cut.Store(true)
			cancel()
		case int64(n) < r.drop.Load():
		default:
			fn(rec, err)
		}
	})
	if cut.Load() && ctx.Err() == nil {
		return errors.New("watch cut")
	}
	return err
}

// holding is one Held's life in TestRandomLockers: from Acquire's return to its end, the
// earliest of the instant its StoppedLeading reports, the first sample that saw IsHeld false,
// and Release's call.
type holding struct {
	h          *Held
	who        string
	start, end time.Time
	ended      bool
}

// P1–P9 under faults: 3 to 5 Lockers over 2,000 keys, each through a randLock of its own
// (errors, hangs, latency above L − R, lost answers, watch calls dropped and cut), crashing
// (every call failing from then on, its workers gone, its holdings left to their deadline) and
// replaced by a Locker of the same instance ID, for 10 fake minutes per run. 60 workers per
// Locker take random keys (a tenth with TryAcquire, some with a deadline; a third of the picks
// among 100 keys, contended), hold them for a random time and release them. A holding ends at
// its StoppedLeading's time, or at the first 200 ms sample where IsHeld says false, or when
// Release is called: no key ever has two holdings whose lives overlap, and the terms of each
// key's holdings increase in the order they began.
func TestRandomLockers(t *testing.T) {
	for _, run := range []uint64{1, 2} {
		t.Run(fmt.Sprintf("run=%d", run), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) { runRandomLockers(t, run) })
		})
	}
}

func runRandomLockers(t *testing.T, run uint64) {
	const (
		keys    = 2000
		workers = 60
		span    = 10 * time.Minute
		sample  = 200 * time.Millisecond
	)
	rng := rand.New(rand.NewPCG(run, 0x10c4e7))
	w := newWorld(t)
	var (
		mu       sync.Mutex
		holdings []*holding
		ends     = map[string]time.Time{} // by Locker, key and term
		taken    atomic.Int64
		wg       sync.WaitGroup
	)
	type member struct {
		l      *Locker
		lock   *randLock
		faults *faultStore
		cancel context.CancelFunc
		id     string
	}
	workerRand := func() *rand.Rand { return rand.New(rand.NewPCG(rng.Uint64(), rng.Uint64())) }
	start := func(id string) *member {
		f := newFaultStore(w.Mem)
		lock := &randLock{Lock: cluster.NewStoreLock(f), watch: cluster.NewStoreLock(w.Mem).(cluster.Watcher), rng: workerRand()}
		lock.drop.Store(int64(rng.IntN(300)))
		// The instant each holding ended, as the Locker reports it: IsHeld turned false then
		// (W7), which the samples only bound from above.
		observer := func(ev cluster.Event) {
			if ev.Kind == cluster.StoppedLeading && strings.HasPrefix(ev.Lease, "k") {
				mu.Lock()
				ends[fmt.Sprintf("%s/%s/%d", id, ev.Lease, ev.Term)] = ev.Time
				mu.Unlock()
			}
		}
		l, err := New(Config{Lock: lock, InstanceID: id, LeaseDuration: testL, RenewInterval: testR, Logger: quietLogger(), Observer: observer})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		m := &member{l: l, lock: lock, faults: f, cancel: cancel, id: id}
		for range workers {
			wr := workerRand()
			wg.Go(func() {
				for ctx.Err() == nil {
					key := fmt.Sprintf("k%d", wr.IntN(keys))
					if wr.IntN(3) == 0 {
						key = fmt.Sprintf("k%d", wr.IntN(keys/20)) // contended
					}
					actx, acancel := ctx, context.CancelFunc(func() {})
					if wr.IntN(4) == 0 {
						actx, acancel = context.WithTimeout(ctx, time.Duration(wr.Int64N(int64(3*testL))))
					}
					var h *Held
					var err error
					if wr.IntN(10) == 0 {
						h, err = l.TryAcquire(actx, key)
					} else {
						h, err = l.Acquire(actx, key)
					}
					acancel()
					if err != nil {
						if !sleepCtx(ctx, time.Duration(wr.Int64N(int64(testR)))) {
							return
						}
						continue
					}
					taken.Add(1)
					hd := &holding{h: h, who: id, start: time.Now()}
					mu.Lock()
					holdings = append(holdings, hd)
					mu.Unlock()
					timer := time.NewTimer(time.Duration(wr.Int64N(int64(4 * testL))))
					select {
					case <-timer.C:
					case <-h.Done():
					case <-ctx.Done():
					}
					timer.Stop()
					if ctx.Err() != nil && lock.crashed.Load() {
						return // crashed: the holding is left to its deadline
					}
					mu.Lock()
					if !hd.ended {
						hd.end, hd.ended = time.Now(), true
					}
					mu.Unlock()
					rctx, rcancel := context.WithTimeout(context.Background(), testL)
					_ = h.Release(rctx)
					rcancel()
				}
			})
		}
		return m
	}
	n := 3 + rng.IntN(3)
	members := make([]*member, n)
	var crashed []*member
	for i := range members {
		members[i] = start(fmt.Sprintf("m%d", i))
	}
	check := func() {
		mu.Lock()
		defer mu.Unlock()
		now := time.Now()
		for _, hd := range holdings {
			if !hd.ended && !hd.h.IsHeld() {
				hd.end, hd.ended = now, true
			}
		}
	}
	next := 10 * time.Second
	for d := time.Duration(0); d < span; d += sample {
		w.At(d)
		check()
		if d < next {
			continue
		}
		next = d + time.Duration(rng.Int64N(int64(20*time.Second)))
		i := rng.IntN(n)
		m := members[i]
		heal := func() { time.AfterFunc(time.Duration(rng.Int64N(int64(30*time.Second))), m.faults.Heal) }
		switch r := rng.IntN(12); {
		case r < 2:
			// Crashed, and a process of the same ID started in its place.
			m.lock.crashed.Store(true)
			m.cancel()
			crashed = append(crashed, m)
			members[i] = start(m.id)
		case r < 4:
			m.faults.Set(func(f *faultStore) { f.Err = errInjected })
			heal()
		case r < 6:
			m.faults.Set(func(f *faultStore) { f.Hang = true })
			heal()
		case r < 8:
			m.faults.Set(func(f *faultStore) { f.Latency = testL - testR + time.Second })
			heal()
		case r < 10:
			m.faults.Set(func(f *faultStore) { f.WriteThenHang = true })
			heal()
		default:
			m.lock.drop.Store(int64(rng.IntN(1000)))
		}
	}
	w.At(span + 31*time.Second) // every fault healed
	check()
	for _, m := range members {
		m.cancel()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	for d := w.Since(); ; d += sample {
		w.At(d)
		check()
		select {
		case <-done:
		default:
			continue
		}
		break
	}
	check()
	// Every Locker ends its session lease and its fences once its keys are released or lost
	// (P7): nothing outlives them for long, a retried release included.
	lockers := crashed
	for _, m := range members {
		lockers = append(lockers, m)
	}
	idle := func() bool {
		for _, m := range lockers {
			m.l.mu.Lock()
			busy := m.l.sess != nil || m.l.ending != nil || len(m.l.fences) > 0
			m.l.mu.Unlock()
			if busy {
				return false
			}
		}
		return true
	}
	for quiet := w.Since(); !idle(); {
		if w.Since()-quiet > 2*time.Minute {
			t.Fatal("a Locker still runs its session lease or a fence 2 minutes after its workers ended")
		}
		w.At(w.Since() + sample)
	}

	// The oracle: per key, the holdings in the order they began never overlap, and their
	// terms increase.
	mu.Lock()
	defer mu.Unlock()
	byKey := make(map[string][]*holding)
	for _, hd := range holdings {
		if !hd.ended {
			t.Fatalf("key %s: %s's holding (term %d) never ended", hd.h.Key(), hd.who, hd.h.Term())
		}
		if end, ok := ends[fmt.Sprintf("%s/%s/%d", hd.who, hd.h.Key(), hd.h.Term())]; ok && end.Before(hd.end) {
			hd.end = end
		}
		byKey[hd.h.Key()] = append(byKey[hd.h.Key()], hd)
	}
	for key, hs := range byKey {
		sort.Slice(hs, func(i, j int) bool { return hs[i].start.Before(hs[j].start) })
		for i := 1; i < len(hs); i++ {
			prev, cur := hs[i-1], hs[i]
			if cur.start.Before(prev.end) {
				t.Errorf("key %s: %s held it (term %d) from %v while %s held it (term %d) from %v to %v",
					key, cur.who, cur.h.Term(), w.Rel(cur.start), prev.who, prev.h.Term(), w.Rel(prev.start), w.Rel(prev.end))
			}
			if cur.h.Term() <= prev.h.Term() {
				t.Errorf("key %s: term %d (%s, from %v) after term %d (%s, from %v)",
					key, cur.h.Term(), cur.who, w.Rel(cur.start), prev.h.Term(), prev.who, w.Rel(prev.start))
			}
		}
	}
	if got := taken.Load(); got < 1000 {
		t.Fatalf("%d holdings in %v: too few for the check to mean anything", got, span)
	}
	t.Logf("%d Lockers, %d crashed; %d holdings of %d keys", n, len(crashed), taken.Load(), len(byKey))
}
