package main

import (
	"context"
	"fmt"
	"io"
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

// The driver tells a worker what to run through these environment variables; envWorker being
// set is what makes the program (or the test binary) a worker.
const (
	envWorker   = "LEASEHOLD_BENCH_WORKER" // the worker kind: leasehold, client-go, etcd, idle, many
	envID       = "LEASEHOLD_BENCH_ID"
	envURL      = "LEASEHOLD_BENCH_URL" // store URL (leasehold), etcd endpoint (etcd)
	envLease    = "LEASEHOLD_BENCH_LEASE"
	envL        = "LEASEHOLD_BENCH_L"
	envR        = "LEASEHOLD_BENCH_R"
	envLog      = "LEASEHOLD_BENCH_LOG"
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
)

// Exit codes of a worker.
const (
	exitOK       = 0
	exitStopErr  = 1
	exitSetup    = 2
	exitOrphaned = 3
)

// maybeWorker runs the worker and exits when the environment says this process is one;
// otherwise it returns at once. main and TestMain call it first.
func maybeWorker() {
	kind := os.Getenv(envWorker)
	if kind == "" {
		return
	}
	os.Exit(runWorker(kind))
}

// workerEnv is what every worker kind reads from its environment.
type workerEnv struct {
	id, url, lease string
	l, r           time.Duration
	log            *os.File // the shared log (leasehold workers), nil for the others
}

func runWorker(kind string) int {
	id := os.Getenv(envID)
	fail := func(format string, args ...any) int {
		fmt.Fprintf(os.Stderr, "bench worker %s (%s): %s\n", id, kind, fmt.Sprintf(format, args...))
		return exitSetup
	}
	if id == "" || strings.ContainsAny(id, " \n") {
		return fail("%s %q is empty or holds a space", envID, id)
	}
	we := workerEnv{id: id, url: os.Getenv(envURL), lease: os.Getenv(envLease)}
	var err error
	if we.l, err = time.ParseDuration(os.Getenv(envL)); err != nil {
		return fail("%s: %v", envL, err)
	}
	if we.r, err = time.ParseDuration(os.Getenv(envR)); err != nil {
		return fail("%s: %v", envR, err)
	}
	if p := os.Getenv(envLog); p != "" {
		if we.log, err = os.OpenFile(p, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644); err != nil {
			return fail("%s: %v", envLog, err)
		}
		defer we.log.Close()
	}
	signal.Notify(term, syscall.SIGTERM)
	// Stdin is a pipe from the driver, never written to: EOF means the driver is gone, and no
	// worker outlives it.
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		os.Exit(exitOrphaned)
	}()
	switch kind {
	case kindLeasehold:
		return runLeasehold(we, fail)
	case kindClientGo:
		return runClientGo(we, fail)
	case kindEtcd:
		return runEtcd(we, fail)
	case kindIdle:
		return runIdle(we)
	case kindMany:
		return runMany(we, fail)
	}
	return fail("%s: unknown worker kind %q", envWorker, kind)
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
			writeOut(statsLine{ID: id, Requests: requests.Load(), CPU: cpuTime(), RSS: rssBytes()}.String())
		}
	}()
}

// writeOut writes one line on stdout with a single write: lines of different goroutines
// never interleave (a pipe write of less than PIPE_BUF bytes is atomic).
func writeOut(line string) {
	if _, err := os.Stdout.WriteString(line + "\n"); err != nil {
		os.Exit(exitOrphaned)
	}
}

// out writes a proctest line on stdout.
func out(l proctest.Line) { writeOut(l.String()) }

// term receives SIGTERM, from before the worker's ready line: the driver may stop a worker
// as soon as it is ready.
var term = make(chan os.Signal, 1)

// waitTerm blocks until SIGTERM.
func waitTerm() { <-term }

// countingLock counts the lock operations of a cluster.Lock: each is one backend request
// (one query, command or HTTP request; two for the stores whose update reads first).
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

// runLeasehold runs one cluster.Elector over a store URL or a Kubernetes Lease, reporting
// its leadership lines with proctest's Observer (stdout and the shared log).
func runLeasehold(we workerEnv, fail func(string, ...any) int) int {
	ctx := context.Background()
	lock, closeLock, err := openLock(ctx, we)
	if err != nil {
		return fail("%v", err)
	}
	defer closeLock()
	el, err := cluster.NewElector(cluster.ElectorConfig{
		Lock:          countingLock{lock},
		LeaseName:     we.lease,
		LeaseDuration: we.l,
		RenewInterval: we.r,
		InstanceID:    we.id,
		Logger:        slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
		Observer:      observer(we),
	})
	if err != nil {
		return fail("%v", err)
	}
	serveStats(we.id)
	if err := el.Start(ctx); err != nil {
		return fail("%v", err)
	}
	out(proctest.Line{Instance: we.id, Kind: proctest.KindReady, T: proctest.Now()})
	waitTerm()
	stopCtx, cancel := context.WithTimeout(ctx, we.l)
	defer cancel()
	if err := el.Stop(stopCtx); err != nil {
		out(proctest.Line{Instance: we.id, Kind: proctest.KindStopped, T: proctest.Now(), Reason: err.Error()})
		return exitStopErr
	}
	out(proctest.Line{Instance: we.id, Kind: proctest.KindStopped, T: proctest.Now(), Reason: "ok"})
	return exitOK
}

// observer returns a leasehold worker's Observer: proctest's (lead, renew and unlead lines,
// on stdout and in the shared log) for the takeover trials; lead and unlead lines on stdout
// only for the steady state, where the anchors' workers write nothing per renewal either.
func observer(we workerEnv) func(cluster.Event) {
	if os.Getenv(envQuiet) != "1" {
		return proctest.Observer(we.id, we.l, we.r, we.log)
	}
	return func(ev cluster.Event) {
		switch ev.Kind {
		case cluster.BecameLeader:
			out(proctest.Line{Instance: we.id, Kind: proctest.KindLead, Term: ev.Term, T: proctest.Now()})
		case cluster.StoppedLeading:
			out(proctest.Line{Instance: we.id, Kind: proctest.KindUnlead, Term: ev.Term, T: proctest.Now(), Reason: ev.Reason})
		}
	}
}

// runIdle is a worker that elects nothing: its resident memory is the baseline every worker
// carries (the one binary links every backend's client and the embedded etcd server).
func runIdle(we workerEnv) int {
	serveStats(we.id)
	out(proctest.Line{Instance: we.id, Kind: proctest.KindReady, T: proctest.Now()})
	waitTerm()
	out(proctest.Line{Instance: we.id, Kind: proctest.KindStopped, T: proctest.Now(), Reason: "ok"})
	return exitOK
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
