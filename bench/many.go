package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
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
	Via          string           `json:"via,omitempty"` // viaLocker, or viaElector ("" in earlier results)
	Leases       int              `json:"leases"`
	Leading      int              `json:"leading"`       // leases this process led at the end of the wait
	ReadyAfter   time.Duration    `json:"ready_after"`   // from the first Start to the last BecameLeader, or the wait's length
	Window       time.Duration    `json:"window"`        // the measurement window
	LeadingAtEnd int              `json:"leading_end"`   // leases led at the end of the window
	Requests     int64            `json:"requests"`      // lock operations during the window
	CPU          time.Duration    `json:"cpu"`           // CPU time during the window
	RSS          int64            `json:"rss"`           // resident memory at the end of the window
	Goroutines   int              `json:"goroutines"`    // at the end of the window
	Lost         int64            `json:"lost"`          // StoppedLeading events (Locker: Done closed) during the window
	LostBy       map[string]int64 `json:"lost_by"`       // the same, by cluster.Reason*
	Failed       int64            `json:"failed"`        // AttemptFailed events during the window
	FailedBy     map[string]int64 `json:"failed_by"`     // the same, by cluster.Reason*
	AttemptP50   time.Duration    `json:"attempt_p50"`   // attempt durations during the window
	AttemptP99   time.Duration    `json:"attempt_p99"`   //
	StopTook     time.Duration    `json:"stop_took"`     // Stop of every Elector (Locker: Release of every key), in parallel
	StopFailures int              `json:"stop_failures"` // Stops (Releases) that returned an error
	// Unconfirmed (Locker): keys held at the end of the window whose record did not name this
	// holding while its Done stayed open: a loss the Locker did not report (must be 0).
	Unconfirmed int `json:"unconfirmed,omitempty"`
	// Locker: the figures of a Locker's keys (writes, memory per key).
	Locker *lockerFigures `json:"locker,omitempty"`
}

// How a many worker holds its leases: one Elector per lease name, or one locker.Locker for
// every key (the --many-via flag).
const (
	viaElector = "elector"
	viaLocker  = "locker"
)

const manyPrefix = "bench-many "

// manySetup reads the many-leases worker's settings (the lease count and the measurement
// window) and opens its Lock.
func manySetup(w *proctest.Worker) (n int, window time.Duration, lock cluster.Lock, closeLock func(), err error) {
	if n, err = strconv.Atoi(os.Getenv(envMany)); err != nil || n <= 0 {
		return 0, 0, nil, nil, fmt.Errorf("%s=%q: want a positive number", envMany, os.Getenv(envMany))
	}
	if window, err = time.ParseDuration(os.Getenv(envWindow)); err != nil {
		return 0, 0, nil, nil, fmt.Errorf("%s: %v", envWindow, err)
	}
	lock, closeLock, err = openLock(context.Background(), w)
	return n, window, lock, closeLock, err
}

// runMany runs n Electors with distinct lease names over one store (one pool of connections,
// one cluster.NewStoreLock) in this process, then writes a manyResult line on stdout.
func runMany(w *proctest.Worker) int {
	n, window, lock, closeLock, err := manySetup(w)
	if err != nil {
		return w.Fail("%v", err)
	}
	defer closeLock()
	ctx := context.Background()

	c := newManyCounters()
	var (
		leading atomic.Int64
		allLead = make(chan struct{})
		allOnce sync.Once
	)
	observe := func(ev cluster.Event) {
		switch ev.Kind {
		case cluster.BecameLeader:
			if leading.Add(1) == int64(n) {
				allOnce.Do(func() { close(allLead) })
			}
		case cluster.StoppedLeading:
			leading.Add(-1)
			c.lost(ev.Reason)
		}
		c.observe(ev)
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
	res := manyResult{Leases: n, Window: window, Via: viaElector}
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

	c.measure(&res, window, func() { res.LeadingAtEnd = int(leading.Load()) })

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

// envProfile, when set in the environment of `go run ./bench`, names a directory where each
// many worker writes a CPU profile and a heap (allocation) profile of its measurement window:
// cpu-PID.pprof and allocs-PID.pprof, for `go tool pprof`.
const envProfile = "LEASEHOLD_BENCH_PROFILE"

// startProfile starts the CPU profile of a measurement window when envProfile asks for one,
// and returns what ends it and writes the allocation profile.
func startProfile() (stop func()) {
	dir := os.Getenv(envProfile)
	if dir == "" {
		return func() {}
	}
	name := func(kind string) string { return filepath.Join(dir, fmt.Sprintf("%s-%d.pprof", kind, os.Getpid())) }
	f, err := os.Create(name("cpu"))
	if err != nil {
		fmt.Fprintf(os.Stderr, "bench: profile: %v\n", err)
		return func() {}
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		fmt.Fprintf(os.Stderr, "bench: profile: %v\n", err)
		f.Close()
		return func() {}
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
		if a, err := os.Create(name("allocs")); err == nil {
			_ = pprof.Lookup("allocs").WriteTo(a, 0)
			a.Close()
		}
	}
}

// manyCounters count what a many worker measures over its window: lost leaderships and
// failed attempts by reason, and the attempts' durations. observe and lost run on the
// elections' goroutines.
type manyCounters struct {
	measuring    atomic.Bool
	lostN, failN atomic.Int64
	mu           sync.Mutex
	durations    []time.Duration
	lostBy       map[string]int64
	failedBy     map[string]int64
}

func newManyCounters() *manyCounters {
	return &manyCounters{lostBy: map[string]int64{}, failedBy: map[string]int64{}}
}

// observe counts an Event's failed attempt and attempt duration during the window.
func (c *manyCounters) observe(ev cluster.Event) {
	if !c.measuring.Load() {
		return
	}
	switch ev.Kind {
	case cluster.AttemptFailed:
		c.failN.Add(1)
		c.mu.Lock()
		c.failedBy[ev.Reason]++
		c.mu.Unlock()
	}
	if ev.Kind == cluster.AttemptSucceeded || ev.Kind == cluster.AttemptFailed {
		c.mu.Lock()
		c.durations = append(c.durations, ev.Duration)
		c.mu.Unlock()
	}
}

// lost counts a leadership lost during the window, for reason.
func (c *manyCounters) lost(reason string) {
	if !c.measuring.Load() {
		return
	}
	c.lostN.Add(1)
	c.mu.Lock()
	c.lostBy[reason]++
	c.mu.Unlock()
}

// measure lets window pass, counting, and fills res with its figures; atEnd runs as the
// window closes, before the counters are read.
func (c *manyCounters) measure(res *manyResult, window time.Duration, atEnd func()) {
	r0, c0 := requests.Load(), cpuTime()
	stopProfile := startProfile()
	c.measuring.Store(true)
	time.Sleep(window) // the measurement window: nothing to wait for, the elections run on their own
	c.measuring.Store(false)
	stopProfile()
	res.Requests, res.CPU = requests.Load()-r0, cpuTime()-c0
	res.RSS = rssBytes()
	res.Goroutines = runtime.NumGoroutine()
	atEnd()
	res.Lost, res.Failed = c.lostN.Load(), c.failN.Load()
	c.mu.Lock()
	res.LostBy, res.FailedBy = c.lostBy, c.failedBy
	slices.Sort(c.durations)
	res.AttemptP50, res.AttemptP99 = quantile(c.durations, 0.50), quantile(c.durations, 0.99)
	c.mu.Unlock()
}
