package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/leasehold/leasehold/cluster"
	"github.com/leasehold/leasehold/internal/proctest"
)

// What a worker runs, beside proctest's Config: envWorker is the worker kind.
const (
	envWorker   = "LEASEHOLD_BENCH_WORKER"    // leasehold, client-go, etcd, idle, many, many-locker
	envKubeHost = "LEASEHOLD_BENCH_KUBE_HOST" // set: the leasehold worker uses the Lease lock
	envKubeCA   = "LEASEHOLD_BENCH_KUBE_CA"   // file holding the API server's CA (PEM)
	envKubeTok  = "LEASEHOLD_BENCH_KUBE_TOKEN"
	envKubeNS   = "LEASEHOLD_BENCH_KUBE_NS"
	envMany     = "LEASEHOLD_BENCH_MANY"   // many: the number of lease names
	envWindow   = "LEASEHOLD_BENCH_WINDOW" // many: the measurement window
	envQuiet    = "LEASEHOLD_BENCH_QUIET"  // 1: lead and unlead lines only (steady state)
)

// Worker kinds.
const (
	kindLeasehold = "leasehold"
	kindClientGo  = "client-go"
	kindEtcd      = "etcd"
	kindIdle      = "idle"
	kindMany      = "many"
	kindManyLock  = "many-locker"
)

// maybeWorker runs the worker and exits when the environment says this process is one;
// otherwise it returns at once. main and TestMain call it first.
func maybeWorker() { proctest.ServeWorker("bench", runWorker) }

func runWorker(w *proctest.Worker) int {
	switch kind := os.Getenv(envWorker); kind {
	case kindLeasehold:
		return runLeasehold(w)
	case kindClientGo:
		return runClientGo(w)
	case kindEtcd:
		return runEtcd(w)
	case kindIdle:
		return runIdle(w)
	case kindMany:
		return runMany(w)
	case kindManyLock:
		return runManyLocker(w)
	case kindManyEtcdMutex:
		return runManyEtcdMutex(w)
	case kindParts:
		return runPartitions(w)
	default:
		return w.Fail("%s: unknown worker kind %q", envWorker, kind)
	}
}

// requests counts the backend requests of a worker: lock operations (leasehold), HTTP
// requests (client-go), gRPC calls and stream messages sent (etcd).
var requests atomic.Int64

// serveStats answers each SIGUSR1 with a stats line on stdout: requests so far, CPU time
// used (user + system, from getrusage) and resident memory (VmRSS). The driver reads the
// counters at both ends of a measurement window.
func serveStats(id string) {
	usr1 := make(chan os.Signal, 1)
	signal.Notify(usr1, syscall.SIGUSR1)
	go func() {
		for range usr1 {
			proctest.WriteStdout(statsLine{ID: id, Requests: requests.Load(), CPU: cpuTime(), RSS: rssBytes()}.String())
		}
	}()
}

// countingLock counts the lock operations of a cluster.Lock: each is one backend request
// (one query, command or HTTP request; two for the stores whose update reads first), and
// each watch established one.
type countingLock struct{ cluster.Lock }

func (c countingLock) Get(ctx context.Context, name string) (cluster.Record, error) {
	requests.Add(1)
	return c.Lock.Get(ctx, name)
}

func (c countingLock) Create(ctx context.Context, name string, r cluster.Record) (cluster.Record, error) {
	requests.Add(1)
	return c.Lock.Create(ctx, name, r)
}

func (c countingLock) Update(ctx context.Context, name string, r cluster.Record) (cluster.Record, error) {
	requests.Add(1)
	return c.Lock.Update(ctx, name, r)
}

// Watch forwards the watch of the inner Lock (without it the Elector would poll): its
// establishment counts as one request (at its first call, or when it fails otherwise than
// by being unsupported, which asks the backend nothing), the notifications as none.
func (c countingLock) Watch(ctx context.Context, name string, fn func(cluster.Record, error)) error {
	w, ok := c.Lock.(cluster.Watcher)
	if !ok {
		return fmt.Errorf("bench: %w", cluster.ErrWatchUnsupported)
	}
	var counted atomic.Bool
	err := w.Watch(ctx, name, func(r cluster.Record, err error) {
		if counted.CompareAndSwap(false, true) {
			requests.Add(1)
		}
		fn(r, err)
	})
	if !errors.Is(err, cluster.ErrWatchUnsupported) && counted.CompareAndSwap(false, true) {
		requests.Add(1)
	}
	return err
}

// WatchHeartbeats forwards what the inner Lock says of its watch's heartbeats
// (cluster.HeartbeatWatcher), so that the Elector trusts the watch as it would without the
// count.
func (c countingLock) WatchHeartbeats() bool {
	h, ok := c.Lock.(cluster.HeartbeatWatcher)
	return !ok || h.WatchHeartbeats()
}

// runLeasehold runs one cluster.Elector over a store URL or a Kubernetes Lease, reporting
// its leadership lines with proctest's Observer (stdout and the shared log).
func runLeasehold(w *proctest.Worker) int {
	ctx := context.Background()
	lock, closeLock, err := openLock(ctx, w)
	if err != nil {
		return w.Fail("%v", err)
	}
	defer closeLock()
	tr, err := openTracer(w)
	if err != nil {
		return w.Fail("%v", err)
	}
	defer tr.close()
	var counted cluster.Lock = countingLock{lock}
	if tr != nil {
		counted = tracingLock{countingLock{lock}, tr}
	}
	el, err := cluster.NewElector(cluster.ElectorConfig{
		Lock:          counted,
		LeaseName:     w.Lease,
		LeaseDuration: w.LeaseDuration,
		RenewInterval: w.RenewInterval,
		InstanceID:    w.ID,
		Logger:        slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
		Observer:      tr.tracing(observer(w)),
	})
	if err != nil {
		return w.Fail("%v", err)
	}
	serveStats(w.ID)
	return w.RunElector(ctx, el)
}

// observer returns a leasehold worker's Observer: proctest's (lead, renew and unlead lines,
// on stdout and in the shared log) for the takeover trials; lead and unlead lines on stdout
// only for the steady state, where the anchors' workers write nothing per renewal either.
func observer(w *proctest.Worker) func(cluster.Event) {
	if os.Getenv(envQuiet) != "1" {
		return w.Observer()
	}
	return func(ev cluster.Event) {
		switch ev.Kind {
		case cluster.BecameLeader:
			w.Report(proctest.KindLead, ev.Term, "")
		case cluster.StoppedLeading:
			w.Report(proctest.KindUnlead, ev.Term, ev.Reason)
		}
	}
}

// runIdle is a worker that elects nothing: its resident memory is the baseline every worker
// carries (the one binary links every backend's client and the embedded etcd server).
func runIdle(w *proctest.Worker) int {
	serveStats(w.ID)
	w.Ready()
	<-w.Term()
	return w.Stopped(nil)
}

// statsLine is a worker's answer to SIGUSR1.
type statsLine struct {
	ID       string
	Requests int64
	CPU      time.Duration
	RSS      int64
}

const statsPrefix = "bench-stats "

func (s statsLine) String() string {
	return fmt.Sprintf("%s%s %d %d %d", statsPrefix, s.ID, s.Requests, int64(s.CPU), s.RSS)
}

func parseStats(line string) (statsLine, error) {
	f := strings.Fields(strings.TrimPrefix(line, statsPrefix))
	if len(f) != 4 {
		return statsLine{}, fmt.Errorf("bench: stats line %q: want 4 fields", line)
	}
	s := statsLine{ID: f[0]}
	var cpu int64
	var err error
	for i, p := range []*int64{&s.Requests, &cpu, &s.RSS} {
		if *p, err = strconv.ParseInt(f[i+1], 10, 64); err != nil {
			return statsLine{}, fmt.Errorf("bench: stats line %q: %w", line, err)
		}
	}
	s.CPU = time.Duration(cpu)
	return s, nil
}
