package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/leasehold/leasehold/cluster"
	"github.com/leasehold/leasehold/cluster/locker"
	"github.com/leasehold/leasehold/internal/proctest"
)

// runManyLocker holds n keys through one locker.Locker over one store in this process, as a
// program holding per-key locks does: one goroutine per key acquires it, keeps it until Done
// closes, and acquires it again. It measures as runMany does, counting as lost every Done
// that closes during the window, and then checks each key still held against the store: its
// record must name this instance with the holding's term, or the Locker missed a loss (P2).
// It writes a manyResult line on stdout.
func runManyLocker(w *proctest.Worker) int {
	n, window, lock, closeLock, err := manySetup(w)
	if err != nil {
		return w.Fail("%v", err)
	}
	defer closeLock()
	ctx := context.Background()

	c := newManyCounters()
	lk, err := locker.New(locker.Config{
		Lock:          countingLock{lock},
		InstanceID:    w.ID,
		LeaseDuration: w.LeaseDuration,
		RenewInterval: w.RenewInterval,
		Logger:        slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError})),
		Observer: func(ev cluster.Event) {
			if ev.Kind == cluster.StoppedLeading {
				c.lost(ev.Reason) // LostBy: why; Lost counts the Done channels that closed
			}
			c.observe(ev)
		},
	})
	if err != nil {
		return w.Fail("%v", err)
	}

	var (
		holding, done      atomic.Int64 // keys held now; Done channels closed during the window
		allHeld            = make(chan struct{})
		allOnce            sync.Once
		stop               = make(chan struct{})
		acquireCtx, cancel = context.WithCancel(ctx)
		wg                 sync.WaitGroup
		mu                 sync.Mutex
		current            = make([]*locker.Held, n) // each key's holding, nil between two
		releaseErrs        atomic.Int64
	)
	defer cancel()
	releaseTimeout := max(w.LeaseDuration, 30*time.Second)
	res := manyResult{Leases: n, Window: window, Via: viaLocker}
	start := time.Now()
	for i := range n {
		key := fmt.Sprintf("%s-%d", w.Lease, i)
		wg.Go(func() {
			for {
				held, err := lk.Acquire(acquireCtx, key)
				if err != nil {
					return // the run is over (Acquire fails only when its ctx ends)
				}
				mu.Lock()
				current[i] = held
				mu.Unlock()
				if holding.Add(1) == int64(n) {
					allOnce.Do(func() { close(allHeld) })
				}
				select {
				case <-held.Done():
					holding.Add(-1)
					if c.measuring.Load() {
						done.Add(1)
					}
					mu.Lock()
					current[i] = nil
					mu.Unlock()
				case <-stop:
					rctx, rcancel := context.WithTimeout(context.Background(), releaseTimeout)
					if held.Release(rctx) != nil {
						releaseErrs.Add(1)
					}
					rcancel()
					return
				}
			}
		})
	}
	wait := time.NewTimer(max(30*time.Second, 20*w.LeaseDuration))
	select {
	case <-allHeld:
	case <-wait.C:
	}
	wait.Stop()
	res.ReadyAfter = time.Since(start)
	res.Leading = int(holding.Load())

	c.measure(&res, window, func() { res.LeadingAtEnd = int(holding.Load()) })
	res.Lost = done.Load()

	mu.Lock()
	held := make([]*locker.Held, 0, n)
	for _, h := range current {
		if h != nil {
			held = append(held, h)
		}
	}
	mu.Unlock()
	res.Unconfirmed = confirmHeld(lock, w.ID, held, w.LeaseDuration)

	stopStart := time.Now()
	close(stop)
	cancel() // the keys being acquired again give up
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
	sem := make(chan struct{}, 16)
	var wg sync.WaitGroup
	for _, h := range held {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			rec, err := lock.Get(ctx, h.Key())
			cancel()
			if err == nil && rec.Holder == id && rec.Term == h.Term() {
				return
			}
			select {
			case <-h.Done():
			case <-time.After(l):
				fmt.Fprintf(os.Stderr, "bench: key %s held with term %d, Done open, but its record says holder %q term %d (%v)\n", h.Key(), h.Term(), rec.Holder, rec.Term, err)
				bad.Add(1)
			}
		})
	}
	wg.Wait()
	return int(bad.Load())
}
