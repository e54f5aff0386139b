// Command bench measures leasehold against the established Go leader-election libraries on
// the same machine, in the same run, with equivalent settings: crash takeover
// (SIGKILL of the leader process), clean handover (SIGTERM), the steady-state cost of 3 and
// 50 instances on one lease (backend requests/s, CPU seconds per instance-hour, resident
// memory), and many elections in one process (1,000 and 10,000 lease names over PostgreSQL
// and Redis, through one Elector per name and through one locker.Locker). The anchors are k8s.io/client-go/tools/leaderelection with a LeaseLock against
// the same kube-apiserver as leasehold's Kubernetes backend, and go.etcd.io/etcd/client/v3's
// concurrency Election against the same embedded etcd as leasehold's etcd store.
//
//	go run ./bench --out docs/bench                  # the full run (about 40 minutes)
//	go run ./bench --backends postgres,client-go --trials 10
//	go run ./bench --ci                              # a few trials, small N (what the test runs)
//	go run ./bench --backends "" --many 10000 --many-via locker   # 10,000 keys through one Locker
//	go run ./bench --backends "" --many 100000 --many-via locker --many-etcd 100000 --lease 15s --renew 5s --window 60s
//
// Every candidate is a separate OS process: this program re-executes itself as a worker. It
// prints a Markdown table on stdout, and with --out writes results.md, results.json and
// latency.svg (the latency distributions). Linux only (signals, /proc, CLOCK_MONOTONIC).
// It exits 1 when a measurement failed, 2 on a usage error.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

func main() {
	maybeWorker()
	os.Exit(run(context.Background(), os.Args[1:], nil, os.Stdout, os.Stderr))
}

// options are the command's settings.
type options struct {
	Trials           int
	Backends         []string
	LatencyInstances int
	Instances        []int // steady state
	Many             []int
	ManyBackends     []string
	ManyVia          []string // viaElector, viaLocker
	ManyEtcd         []int    // key counts of the etcd anchor of the keys held through a Locker
	// Partitions are the K of the partitions scenario (none: not run), PartitionsMembers its
	// N, PartitionsBackends its stores.
	Partitions         []int
	PartitionsMembers  []int
	PartitionsBackends []string
	PartitionsMaxMoves int // partition.Config.MaxMoves
	Window             time.Duration
	L, R               time.Duration
	Out                string
	Trace              string // directory of the leasehold workers' traces, "" for none
	Seed               uint64
	CI                 bool
	Command            string // the command line, for the report
}

func parseOptions(args []string, stderr io.Writer) (options, error) {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	if stderr != nil {
		fs.SetOutput(stderr)
	}
	trials := fs.Int("trials", 30, "crash and handover trials per system (each)")
	backends := fs.String("backends", "all", "comma-separated systems: "+strings.Join(allBackends, ", ")+"; or all")
	latInst := fs.Int("latency-instances", 3, "candidate processes during the takeover trials")
	instances := fs.String("instances", "3,50", "comma-separated instance counts for the steady-state figures")
	many := fs.String("many", "1000,10000", "comma-separated lease-name counts for the many-elections figures (empty: none)")
	manyBackends := fs.String("many-backends", "postgres,redis", "backends of the many-elections figures")
	manyEtcd := fs.String("many-etcd", "", "comma-separated key counts held through etcd's concurrency.Mutex on one Session, beside the keys held through one Locker (empty: none)")
	manyVia := fs.String("many-via", "elector,locker", "how the many-elections process holds its leases: elector (one cluster.Elector per lease name), locker (one locker.Locker for every key), or both")
	partitions := fs.String("partitions", "", "comma-separated partition counts K for the partitions scenario (empty: none), e.g. 1024,10000")
	partsMembers := fs.String("partitions-instances", "3,10", "comma-separated member counts N of the partitions scenario (at least 2 each)")
	partsBackends := fs.String("partitions-backends", "postgres,redis", "backends of the partitions scenario")
	partsMoves := fs.Int("partitions-max-moves", 1, "partitions a member hands over per R at most in the partitions scenario (partition.Config.MaxMoves)")
	window := fs.Duration("window", 20*time.Second, "measurement window of the steady-state and many-elections figures")
	lease := fs.Duration("lease", 2*time.Second, "lease duration L (whole seconds: client-go's Lease and etcd's TTL hold seconds)")
	renew := fs.Duration("renew", 500*time.Millisecond, "renew interval R (client-go's RetryPeriod)")
	trace := fs.String("trace", "", "directory where each leasehold worker of the takeover trials writes its lock calls, watch deliveries and events (to explain a slow trial)")
	out := fs.String("out", "", "directory for results.md, results.json and latency.svg (default: the table on stdout only)")
	seed := fs.Uint64("seed", 0, "seed of the signal timing (0: random, reported)")
	ci := fs.Bool("ci", false, "CI mode: 2 trials, 3 instances, 100 lease names, 1s windows, L=1s, R=250ms")
	if err := fs.Parse(args); err != nil {
		return options{}, err
	}
	if fs.NArg() > 0 {
		return options{}, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	o := options{Trials: *trials, LatencyInstances: *latInst, Window: *window, L: *lease, R: *renew, Out: *out, Seed: *seed, CI: *ci,
		Command: commandLine(args)}
	if *trace != "" {
		dir, err := filepath.Abs(*trace)
		if err == nil {
			err = os.MkdirAll(dir, 0o755)
		}
		if err != nil {
			return o, fmt.Errorf("--trace %s: %w", *trace, err)
		}
		o.Trace = dir
	}
	if *ci {
		o.Trials, *instances, *many, o.Window, o.L, o.R = 2, "3", "100", time.Second, time.Second, 250*time.Millisecond
		*partitions, *partsMembers = "64", "3"
	}
	var err error
	if o.Instances, err = ints("--instances", *instances); err != nil {
		return o, err
	}
	if o.Many, err = ints("--many", *many); err != nil {
		return o, err
	}
	if o.ManyEtcd, err = ints("--many-etcd", *manyEtcd); err != nil {
		return o, err
	}
	if o.Partitions, err = ints("--partitions", *partitions); err != nil {
		return o, err
	}
	if o.PartitionsMembers, err = ints("--partitions-instances", *partsMembers); err != nil {
		return o, err
	}
	for _, n := range o.PartitionsMembers {
		if n < 2 {
			return o, fmt.Errorf("--partitions-instances: %d: want at least 2 (a crash must leave a member)", n)
		}
	}
	o.PartitionsBackends = list(*partsBackends)
	if o.PartitionsMaxMoves = *partsMoves; o.PartitionsMaxMoves < 1 {
		return o, fmt.Errorf("--partitions-max-moves %d: want at least 1", o.PartitionsMaxMoves)
	}
	o.Backends = list(*backends)
	if *backends == "all" {
		o.Backends = allBackends
	}
	o.ManyBackends = list(*manyBackends)
	o.ManyVia = list(*manyVia)
	for _, v := range o.ManyVia {
		if v != viaElector && v != viaLocker {
			return o, fmt.Errorf("--many-via: %q is neither %s nor %s", v, viaElector, viaLocker)
		}
	}
	switch {
	case o.Trials < 1:
		return o, fmt.Errorf("--trials %d: want at least 1", o.Trials)
	case o.LatencyInstances < 2:
		return o, fmt.Errorf("--latency-instances %d: want at least 2 (a leader and a successor)", o.LatencyInstances)
	case o.L%time.Second != 0:
		return o, fmt.Errorf("--lease %v: want whole seconds (client-go's Lease and etcd's session TTL count seconds)", o.L)
	case o.R <= 0 || o.R*6/5 >= (o.L+o.R)/2:
		return o, fmt.Errorf("--renew %v: want 0 < 1.2 R < (L + R) / 2, client-go's constraint on RetryPeriod and RenewDeadline", o.R)
	case o.Window <= 0:
		return o, fmt.Errorf("--window %v: want a positive duration", o.Window)
	}
	return o, nil
}

// commandLine is the command as typed, for the report: empty arguments and arguments with
// spaces quoted.
func commandLine(args []string) string {
	parts := []string{"go run ./bench"}
	for _, a := range args {
		if a == "" || strings.ContainsAny(a, " \t\"'") {
			a = strconv.Quote(a)
		}
		parts = append(parts, a)
	}
	return strings.Join(parts, " ")
}

func ints(flagName, s string) ([]int, error) {
	var out []int
	for _, f := range list(s) {
		n, err := strconv.Atoi(f)
		if err != nil || n < 1 {
			return nil, fmt.Errorf("%s: %q is not a positive number", flagName, f)
		}
		out = append(out, n)
	}
	return out, nil
}

func list(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

// run is the command; workerArgs are the arguments a worker process gets (the test binary's
// -test.run=^$), nil for this program.
func run(ctx context.Context, args, workerArgs []string, stdout, stderr io.Writer) int {
	o, err := parseOptions(args, stderr)
	if err != nil {
		if err != flag.ErrHelp {
			fmt.Fprintln(stderr, "bench:", err)
		}
		return 2
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	logf := func(format string, args ...any) { fmt.Fprintf(stderr, format+"\n", args...) }
	rep, err := measure(ctx, o, workerArgs, logf)
	if err != nil {
		fmt.Fprintln(stderr, "bench:", err)
		return 1
	}
	if err := writeMarkdown(stdout, rep); err != nil {
		fmt.Fprintln(stderr, "bench:", err)
		return 1
	}
	if o.Out != "" {
		if err := writeFiles(o.Out, rep); err != nil {
			fmt.Fprintf(stderr, "bench: --out %s: %v\n", o.Out, err)
			return 1
		}
	}
	return 0
}
