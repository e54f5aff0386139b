package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/leasehold/leasehold/cluster"
	"github.com/leasehold/leasehold/internal/proctest"
)

// manyResult is what a many worker reports: one process electing on n lease names over one
// store, measured over a window once every lease is held (or the wait for that gave up).
type manyResult struct {
	Leases       int              `json:"leases"`
	Leading      int              `json:"leading"`       // leases this process led at the end of the wait
	ReadyAfter   time.Duration    `json:"ready_after"`   // from the first Start to the last BecameLeader, or the wait's length
	Window       time.Duration    `json:"window"`        // the measurement window
	LeadingAtEnd int              `json:"leading_end"`   // leases led at the end of the window
	Requests     int64            `json:"requests"`      // lock operations during the window
	CPU          time.Duration    `json:"cpu"`           // CPU time during the window
	RSS          int64            `json:"rss"`           // resident memory at the end of the window
	Lost         int64            `json:"lost"`          // StoppedLeading events during the window
	LostBy       map[string]int64 `json:"lost_by"`       // the same, by cluster.Reason*
	Failed       int64            `json:"failed"`        // AttemptFailed events during the window
	FailedBy     map[string]int64 `json:"failed_by"`     // the same, by cluster.Reason*
	AttemptP50   time.Duration    `json:"attempt_p50"`   // attempt durations during the window
	AttemptP99   time.Duration    `json:"attempt_p99"`   //
	StopTook     time.Duration    `json:"stop_took"`     // Stop of every Elector, in parallel
	StopFailures int              `json:"stop_failures"` // Stops that returned an error
}

const manyPrefix = "bench-many "

// runMany runs n Electors with distinct lease names over one store (one pool of connections,
// one cluster.NewStoreLock) in this process, then writes a manyResult line on stdout.
func runMany(w *proctest.Worker) int {
	n, err := strconv.Atoi(os.Getenv(envMany))
	if err != nil || n <= 0 {
		return w.Fail("%s=%q: want a positive number", envMany, os.Getenv(envMany))
	}
	window, err := time.ParseDuration(os.Getenv(envWindow))
	if err != nil {
		return w.Fail("%s: %v", envWindow, err)
	}
	ctx := context.Background()
	lock, closeLock, err := openLock(ctx, w)
	if err != nil {
		return w.Fail("%v", err)
	}
	defer closeLock()

	var (
		leading, lost, failed atomic.Int64
		measuring             atomic.Bool
		allLead               = make(chan struct{})
		allOnce               sync.Once
		mu                    sync.Mutex
		durations             []time.Duration // attempt durations during the window
		lostBy, failedBy      = map[string]int64{}, map[string]int64{}
	)
	observe := func(ev cluster.Event) {
		switch ev.Kind {
		case cluster.BecameLeader:
			if leading.Add(1) == int64(n) {
				allOnce.Do(func() { close(allLead) })
			}
		case cluster.StoppedLeading:
			leading.Add(-1)
			if measuring.Load() {
				lost.Add(1)
				mu.Lock()
				lostBy[ev.Reason]++
				mu.Unlock()
			}
		case cluster.AttemptFailed:
			if measuring.Load() {
				failed.Add(1)
				mu.Lock()
				failedBy[ev.Reason]++
				mu.Unlock()
			}
		}
		if (ev.Kind == cluster.AttemptSucceeded || ev.Kind == cluster.AttemptFailed) && measuring.Load() {
			mu.Lock()
			durations = append(durations, ev.Duration)
			mu.Unlock()
		}
	}
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))
	els := make([]*cluster.Elector, n)
	for i := range els {
		if els[i], err = cluster.NewElector(cluster.ElectorConfig{
			Lock:          countingLock{lock},
			LeaseName:     fmt.Sprintf("%s-%d", w.Lease, i),
			LeaseDuration: w.LeaseDuration,
			RenewInterval: w.RenewInterval,
			InstanceID:    w.ID,
			Logger:        logger,
			Observer:      observe,
		}); err != nil {
			return w.Fail("%v", err)
		}
	}
	res := manyResult{Leases: n, Window: window}
	start := time.Now()
	for _, el := range els {
		if err := el.Start(ctx); err != nil {
			return w.Fail("%v", err)
		}
	}
	// Every lease is free: each Elector should lead after its first attempt. Wait for that, a
	// generous bound past which the backend cannot keep up: this is one of the ways it breaks.
	wait := time.NewTimer(max(30*time.Second, 20*w.LeaseDuration))
	select {
	case <-allLead:
		res.ReadyAfter = time.Since(start)
	case <-wait.C:
		res.ReadyAfter = time.Since(start)
	}
	wait.Stop()
	res.Leading = int(leading.Load())

	r0, c0 := requests.Load(), cpuTime()
	measuring.Store(true)
	time.Sleep(window) // the measurement window: nothing to wait for, the electors run on their own
	measuring.Store(false)
	res.Requests, res.CPU = requests.Load()-r0, cpuTime()-c0
	res.RSS = rssBytes()
	res.LeadingAtEnd = int(leading.Load())
	res.Lost, res.Failed = lost.Load(), failed.Load()
	mu.Lock()
	res.LostBy, res.FailedBy = lostBy, failedBy
	slices.Sort(durations)
	res.AttemptP50, res.AttemptP99 = quantile(durations, 0.50), quantile(durations, 0.99)
	mu.Unlock()

	stopStart := time.Now()
	stopCtx, cancel := context.WithTimeout(ctx, max(w.LeaseDuration, 30*time.Second))
	defer cancel()
	var wg sync.WaitGroup
	var stopFailures atomic.Int64
	for _, el := range els {
		wg.Go(func() {
			if el.Stop(stopCtx) != nil {
				stopFailures.Add(1)
			}
		})
	}
	wg.Wait()
	res.StopTook, res.StopFailures = time.Since(stopStart), int(stopFailures.Load())
	b, err := json.Marshal(res)
	if err != nil {
		return w.Fail("%v", err)
	}
	proctest.WriteStdout(manyPrefix + string(b))
	return proctest.ExitOK
}
