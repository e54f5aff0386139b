package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/leasehold/leasehold/cluster"
	"github.com/leasehold/leasehold/cluster/locker"
	"github.com/leasehold/leasehold/internal/proctest"
)

// manyAcquirers bounds the goroutines that acquire (and at the end release) the keys: enough
// to keep a store's connection pool busy, few enough that the harness costs next to nothing
// per key at a million keys.
const manyAcquirers = 128

// lockerFigures are what a many worker through a Locker measures beyond a manyResult.
type lockerFigures struct {
	// Writes are the creates and updates the Lock got during the window: the session
	// lease's renewals (one per R) when no key's record is renewed (P7).
	Writes int64 `json:"writes"`
	// HeapPerKey is the live heap (after a GC) the held keys added, divided by the keys held;
	// RSSPerKey the same of the resident set. Both exclude the harness's own per-key state
	// (the key strings and a slice of *locker.Held), allocated before the baseline and
	// measured on its own as HarnessPerKey.
	HeapPerKey    int64 `json:"heap_per_key"`
	RSSPerKey     int64 `json:"rss_per_key"`
	HarnessPerKey int64 `json:"harness_per_key"`
}

// writeCountingLock counts the writes (creates and updates) apart from countingLock's
// requests.
type writeCountingLock struct {
	countingLock
	writes *atomic.Int64
}

func (c writeCountingLock) Create(ctx context.Context, name string, r cluster.Record) (cluster.Record, error) {
	c.writes.Add(1)
	return c.countingLock.Create(ctx, name, r)
}

func (c writeCountingLock) Update(ctx context.Context, name string, r cluster.Record) (cluster.Record, error) {
	c.writes.Add(1)
	return c.countingLock.Update(ctx, name, r)
}

// liveHeap returns the heap in use by live objects after a full collection.
func liveHeap() int64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapAlloc)
}

// runManyLocker holds n keys through one locker.Locker over one store in this process. A
// bounded pool of goroutines acquires them and keeps each *locker.Held in a slice: a held key
// costs the harness no goroutine, so that the process's growth is the Locker's. Once all are
// held (or the wait for that gave up) it measures a window as runMany does; a key is lost
// when its Done closes (not acquired again: the count of open holdings only falls). It then
// checks each key still held against the store: its record must name this instance with the
// holding's term, or the Locker missed a loss (P2). It writes a manyResult line on stdout.
func runManyLocker(w *proctest.Worker) int {
	n, window, lock, closeLock, err := manySetup(w)
	if err != nil {
		return w.Fail("%v", err)
	}
	defer closeLock()
	ctx := context.Background()

	// The harness's per-key state, before the baseline.
	heap0 := liveHeap()
	keys := make([]string, n)
	for i := range keys {
		keys[i] = fmt.Sprintf("%s-%d", w.Lease, i)
	}
	held := make([]*locker.Held, n)
	heap1 := liveHeap()
	rss1 := rssBytes()

	c := newManyCounters()
	var writes atomic.Int64
	var session string
	lk, err := locker.New(locker.Config{
		Lock:          writeCountingLock{countingLock{lock}, &writes},
		InstanceID:    w.ID,
		LeaseDuration: w.LeaseDuration,
		RenewInterval: w.RenewInterval,
		Logger:        slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError})),
		Observer: func(ev cluster.Event) {
			// One AttemptSucceeded per held key per R: kept out of the durations (they would
			// cost the harness 8 bytes per key per R), which are the session lease's attempts.
			switch {
			case ev.Kind == cluster.StoppedLeading && ev.Lease != session:
				c.lost(ev.Reason)
			case ev.Kind == cluster.AttemptFailed, ev.Lease == session:
				c.observe(ev)
			}
		},
	})
	if err != nil {
		return w.Fail("%v", err)
	}
	session = lk.SessionLease() // before the first Acquire, the first event

	res := manyResult{Leases: n, Window: window, Via: viaLocker}
	res.Locker = &lockerFigures{HarnessPerKey: (heap1 - heap0) / int64(n)}
	acquireCtx, giveUp := context.WithTimeout(ctx, max(30*time.Second, 20*w.LeaseDuration))
	start := time.Now()
	var next atomic.Int64
	var heldN atomic.Int64
	var wg sync.WaitGroup
	for range min(n, manyAcquirers) {
		wg.Go(func() {
			for i := int(next.Add(1) - 1); i < n; i = int(next.Add(1) - 1) {
				h, err := lk.Acquire(acquireCtx, keys[i])
				if err != nil {
					return // the wait gave up (Acquire fails only when its ctx ends)
				}
				held[i] = h
				heldN.Add(1)
			}
		})
	}
	wg.Wait()
	giveUp()
	res.ReadyAfter = time.Since(start)
	res.Leading = int(heldN.Load())

	open := func() int {
		k := 0
		for _, h := range held {
			if h == nil {
				continue
			}
			select {
			case <-h.Done():
			default:
				k++
			}
		}
		return k
	}
	openAtStart := open()
	w0 := writes.Load()
	c.measure(&res, window, func() {
		res.LeadingAtEnd = open()
		res.Locker.Writes = writes.Load() - w0
	})
	res.Lost = int64(openAtStart - res.LeadingAtEnd)
	if res.Leading > 0 {
		res.Locker.HeapPerKey = (liveHeap() - heap1) / int64(res.Leading)
		res.Locker.RSSPerKey = (res.RSS - rss1) / int64(res.Leading)
	}

	still := make([]*locker.Held, 0, res.LeadingAtEnd)
	for _, h := range held {
		if h != nil && h.IsHeld() {
			still = append(still, h)
		}
	}
	res.Unconfirmed = confirmHeld(lock, w.ID, still, w.LeaseDuration)

	stopStart := time.Now()
	releaseTimeout := max(w.LeaseDuration, 30*time.Second)
	var releaseErrs atomic.Int64
	next.Store(0)
	for range min(n, manyAcquirers) {
		wg.Go(func() {
			for i := int(next.Add(1) - 1); i < n; i = int(next.Add(1) - 1) {
				if held[i] == nil {
					continue
				}
				rctx, cancel := context.WithTimeout(ctx, releaseTimeout)
				if held[i].Release(rctx) != nil {
					releaseErrs.Add(1)
				}
				cancel()
			}
		})
	}
	wg.Wait()
	res.StopTook, res.StopFailures = time.Since(stopStart), int(releaseErrs.Load())
	b, err := json.Marshal(res)
	if err != nil {
		return w.Fail("%v", err)
	}
	proctest.WriteStdout(manyPrefix + string(b))
	return proctest.ExitOK
}

// confirmHeld reads the record of every key in held, a few at a time, and returns how many
// do not name this instance (id) with the holding's term although its Done stays open for L
// after the read: losses the Locker did not report. A key lost meanwhile, its Done closed,
// is no such case.
func confirmHeld(lock cluster.Lock, id string, held []*locker.Held, l time.Duration) int {
	var bad atomic.Int64
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(len(held), 64) {
		wg.Go(func() {
			for i := int(next.Add(1) - 1); i < len(held); i = int(next.Add(1) - 1) {
				h := held[i]
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				rec, err := lock.Get(ctx, h.Key())
				cancel()
				if err == nil && rec.Holder == id && rec.Term == h.Term() {
					continue
				}
				select {
				case <-h.Done():
				case <-time.After(l):
					fmt.Fprintf(os.Stderr, "bench: key %s held with term %d, Done open, but its record says holder %q term %d (%v)\n", h.Key(), h.Term(), rec.Holder, rec.Term, err)
					bad.Add(1)
				}
			}
		})
	}
	wg.Wait()
	return int(bad.Load())
}
