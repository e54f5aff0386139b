package main

import (
	"context"
	crand "crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/leasehold/leasehold/internal/proctest"
)

// report is everything one run measured.
type report struct {
	Options   options
	Machine   machine
	Started   time.Time
	Took      time.Duration
	Seed      uint64
	IsLeader  float64      // nanoseconds per call, on an Elector that leads
	Baseline  steadyResult // idle workers: the memory every worker carries
	Systems   []sysResult
	Many      []manyRow
	Parts     []partsRow
	Skipped   []string // systems not measured, and why
	Anomalies []string // what went wrong in a measurement that still produced figures
}

// sysResult is the figures of one system.
type sysResult struct {
	System              system
	Crash, Handover     Dist
	CrashSinceRenewal   Dist
	HandoverSinceUnlead Dist
	SlowHandovers       []string // latencyResult.Slow
	Steady              []steadyResult
}

// manyRow is one many-elections measurement.
// partsRow is one partitions figure: a partitions worker's result over a backend.
type partsRow struct {
	Backend string
	partitionsResult
}

type manyRow struct {
	Backend string
	manyResult
}

// measure runs every measurement of o.
func measure(ctx context.Context, o options, workerArgs []string, logf func(string, ...any)) (*report, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("find this program to run it as a worker: %w", err)
	}
	dir, err := os.MkdirTemp("", "leasehold-bench-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	srv := &servers{ctx: ctx, dir: dir, renew: o.R}
	defer srv.close()

	rep := &report{Options: o, Started: time.Now(), Seed: o.Seed, Machine: readMachine()}
	if rep.Seed == 0 {
		rep.Seed = rand.Uint64()
	}
	rng := rand.New(rand.NewPCG(rep.Seed, rep.Seed))
	var idb [3]byte
	_, _ = crand.Read(idb[:])
	runID := hex.EncodeToString(idb[:]) // lease names of this run: never another run's records
	logf("bench: seed %d, L=%v R=%v, %d trials, run %s; load %s", rep.Seed, o.L, o.R, o.Trials, runID, rep.Machine.LoadBefore)

	newFleet := func(sys system, kind, lease string) *fleet {
		f := &fleet{ctx: ctx, exe: exe, args: workerArgs, env: sys.Env, kind: kind, lease: lease, l: o.L, r: o.R, inbox: proctest.NewInbox[message]()}
		if kind == kindLeasehold {
			f.log = filepath.Join(dir, lease+".log")
			if o.Trace != "" {
				f.env = append(slices.Clip(f.env), envTrace+"="+o.Trace)
			}
		}
		return f
	}

	rep.IsLeader, err = isLeaderCost()
	if err != nil {
		return nil, err
	}
	{
		f := newFleet(system{}, kindIdle, "bench-"+runID+"-idle")
		rep.Baseline, err = idleBaseline(f)
		f.close()
		if err != nil {
			return nil, err
		}
		logf("bench: an idle worker holds %s", mib(rep.Baseline.RSS))
	}

	for _, name := range o.Backends {
		sys, err := srv.system(name)
		if errors.Is(err, errUnavailable) {
			logf("bench: skipping %s: %v", name, err)
			rep.Skipped = append(rep.Skipped, fmt.Sprintf("%s: %v", name, err))
			continue
		}
		if err != nil {
			return nil, err
		}
		logf("bench: %s: %d crash and %d handover trials, %d candidates", sys.Name, o.Trials, o.Trials, o.LatencyInstances)
		res := sysResult{System: sys}
		lease := fmt.Sprintf("bench-%s-%s-lat", runID, name)
		f := newFleet(sys, sys.Kind, lease)
		lat, err := latencyTrials(f, rng, o.LatencyInstances, o.Trials, logf)
		f.close()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", sys.Name, err)
		}
		if sys.Kind == kindLeasehold {
			if msg := checkLog(filepath.Join(dir, lease+".log")); msg != "" {
				rep.Anomalies = append(rep.Anomalies, sys.Name+": "+msg)
				logf("bench: %s: %s", sys.Name, msg)
			}
		}
		res.Crash, res.Handover = summarize(lat.Crash), summarize(lat.Handover)
		res.CrashSinceRenewal, res.HandoverSinceUnlead = summarize(lat.CrashSinceRenewal), summarize(lat.HandoverSinceUnlead)
		if !sys.Anchor && name != "mysql" {
			// The 20 ms target is for the backends that notify; MySQL polls (within R), and
			// the anchors have targets of their own.
			res.SlowHandovers = lat.Slow
		}
		for _, n := range o.Instances {
			f := newFleet(sys, sys.Kind, fmt.Sprintf("bench-%s-%s-s%d", runID, name, n))
			f.env = append(f.env, envQuiet+"=1")
			st, err := steady(f, n, o.Window)
			f.close()
			if err != nil {
				return nil, fmt.Errorf("%s, %d instances: %w", sys.Name, n, err)
			}
			logf("bench: %s, %d instances: %.1f requests/s, %.2f CPU s per instance-hour, %s RSS per instance", sys.Name, n, st.ReqPerSec, st.CPUHour, mib(st.RSS))
			res.Steady = append(res.Steady, st)
		}
		logf("bench: %s: crash p50 %v max %v, handover p50 %v max %v", sys.Name, ms(res.Crash.P50), ms(res.Crash.Max), ms(res.Handover.P50), ms(res.Handover.Max))
		rep.Systems = append(rep.Systems, res)
	}

	for _, name := range o.ManyBackends {
		if len(o.Many) == 0 {
			break
		}
		sys, err := srv.system(name)
		if errors.Is(err, errUnavailable) {
			rep.Skipped = append(rep.Skipped, fmt.Sprintf("many elections over %s: %v", name, err))
			continue
		}
		if err != nil {
			return nil, err
		}
		if sys.Kind != kindLeasehold {
			return nil, fmt.Errorf("--many-backends: %s is not a leasehold backend", name)
		}
		for _, via := range o.ManyVia {
			kind, lease := kindMany, "m"
			if via == viaLocker {
				kind, lease = kindManyLock, "k"
			}
			for _, n := range o.Many {
				logf("bench: %s: %d lease names in one process, through %s", sys.Name, n, via)
				f := newFleet(sys, kind, fmt.Sprintf("bench-%s-%s%d", runID, lease, n))
				row, err := many(f, n, o.Window)
				f.close()
				if err != nil {
					return nil, fmt.Errorf("%s, %d lease names through %s: %w", sys.Name, n, via, err)
				}
				row.Backend = name
				logf("bench: %s, %d leases through %s: %d led after %v, %.0f requests/s, %.1f%% CPU, %s RSS, %d goroutines, %d lost, %d failed attempts, attempt p99 %v",
					name, n, via, row.Leading, ms(row.ReadyAfter), float64(row.Requests)/row.Window.Seconds(), 100*row.CPU.Seconds()/row.Window.Seconds(),
					mib(row.RSS), row.Goroutines, row.Lost, row.Failed, ms(row.AttemptP99))
				logManyLocker(logf, row, o.R)
				if row.Unconfirmed > 0 {
					rep.Anomalies = append(rep.Anomalies, fmt.Sprintf("%s, %d keys through a Locker: %d held keys whose record names another holding (P2)", name, n, row.Unconfirmed))
				}
				rep.Many = append(rep.Many, row)
			}
		}
	}
	if err := measureManyEtcd(o, srv, rep, logf, func(sys system, n int) *fleet {
		return newFleet(sys, kindManyEtcdMutex, fmt.Sprintf("bench-%s-e%d", runID, n))
	}); err != nil {
		return nil, err
	}
	if err := measurePartitions(o, srv, rep, logf, func(sys system, k, n int) *fleet {
		return newFleet(sys, kindParts, fmt.Sprintf("bench-%s-p%dx%d", runID, k, n))
	}); err != nil {
		return nil, err
	}
	rep.Took = time.Since(rep.Started)
	rep.Machine.LoadAfter = loadAvg()
	return rep, nil
}

// measurePartitions runs the partitions scenario: for each backend, K and N, one worker.
func measurePartitions(o options, srv *servers, rep *report, logf func(string, ...any), newFleet func(sys system, k, n int) *fleet) error {
	if len(o.Partitions) == 0 {
		return nil
	}
	for _, name := range o.PartitionsBackends {
		sys, err := srv.system(name)
		if errors.Is(err, errUnavailable) {
			rep.Skipped = append(rep.Skipped, fmt.Sprintf("partitions over %s: %v", name, err))
			continue
		}
		if err != nil {
			return err
		}
		if sys.Kind != kindLeasehold || sys.Backend == "kubernetes" {
			return fmt.Errorf("--partitions-backends: %s is not a leasehold store backend", name)
		}
		for _, k := range o.Partitions {
			for _, n := range o.PartitionsMembers {
				logf("bench: %s: %d partitions over %d members in one process", sys.Name, k, n)
				f := newFleet(sys, k, n)
				row, err := partitionsFigure(f, k, n, o.PartitionsMaxMoves, o.Window)
				f.close()
				if err != nil {
					return fmt.Errorf("%s, %d partitions over %d members: %w", sys.Name, k, n, err)
				}
				row.Backend = name
				logf("bench: %s, %d partitions over %d: members up after %v, even after %v, join even after %v (%d moved), crash even after %v (%d moved, gap max %v), %d member leases lost, baseline %d..%d per member, %d callbacks overlapped",
					name, k, n, ms(row.MembersUp), ms(row.Spread), ms(row.Join.EvenAfter), row.Join.Moved, ms(row.Crash.EvenAfter), row.Crash.Moved, ms(row.Crash.GapMax),
					row.MemberLeasesLost, row.Baseline.MinOwned, row.Baseline.MaxOwned, row.CallbacksOverlapped)
				if row.MemberLeasesLost > 0 {
					rep.Anomalies = append(rep.Anomalies, fmt.Sprintf("%s, %d partitions over %d: %d member leases lost while their members ran (every partition under one ends with it)", name, k, n, row.MemberLeasesLost))
				}
				if row.DoubleOwners > 0 {
					rep.Anomalies = append(rep.Anomalies, fmt.Sprintf("%s, %d partitions over %d: %d times two members owned one partition at once", name, k, n, row.DoubleOwners))
				}
				if !row.SpreadReached || !row.Join.Even || !row.Crash.Even {
					rep.Anomalies = append(rep.Anomalies, fmt.Sprintf("%s, %d partitions over %d: no even spread within the wait (first %v, after the join %v, after the crash %v)%s",
						name, k, n, row.SpreadReached, row.Join.Even, row.Crash.Even, unevenSummary(row.partitionsResult)))
				}
				rep.Parts = append(rep.Parts, row)
			}
		}
	}
	return nil
}

// partitionsFigure runs one partitions worker and returns its result.
func partitionsFigure(f *fleet, k, n, maxMoves int, window time.Duration) (partsRow, error) {
	p, err := f.start(envPartitions+"="+fmt.Sprint(k), envMembers+"="+fmt.Sprint(n), envMaxMoves+"="+fmt.Sprint(maxMoves), envWindow+"="+window.String())
	if err != nil {
		return partsRow{}, err
	}
	p.signalled = true // it exits by itself once measured
	if err := f.wait("result", 10*time.Minute+60*f.l+window, func() bool { return p.exited }); err != nil {
		return partsRow{}, err
	}
	if p.err != nil || p.many == "" {
		return partsRow{}, fmt.Errorf("bench: partitions worker %s: %v, no result%s", p.ID, p.err, p.StderrTail(2<<10))
	}
	var row partsRow
	if err := json.Unmarshal([]byte(p.many), &row.partitionsResult); err != nil {
		return partsRow{}, fmt.Errorf("bench: partitions worker %s: %w", p.ID, err)
	}
	return row, nil
}

// idleBaseline measures 3 idle workers' memory.
func idleBaseline(f *fleet) (steadyResult, error) {
	ps, err := f.startReady(3)
	if err != nil {
		return steadyResult{}, err
	}
	if err := f.pause(time.Second); err != nil {
		return steadyResult{}, err
	}
	st, err := f.statsRound(ps)
	if err != nil {
		return steadyResult{}, err
	}
	res := steadyResult{Instances: 3, RSS: st[1].RSS}
	for _, s := range st {
		res.RSS = min(res.RSS, s.RSS)
		res.RSSMax = max(res.RSSMax, s.RSS)
	}
	return res, f.stopAll()
}

// many runs one many worker and returns its result.
func many(f *fleet, n int, window time.Duration) (manyRow, error) {
	p, err := f.start(envMany+"="+fmt.Sprint(n), envWindow+"="+window.String())
	if err != nil {
		return manyRow{}, err
	}
	p.signalled = true // it exits by itself once measured
	if err := f.wait("result", 3*time.Minute+20*f.l+window, func() bool { return p.exited }); err != nil {
		return manyRow{}, err
	}
	if p.err != nil || p.many == "" {
		return manyRow{}, fmt.Errorf("bench: many worker %s: %v, no result%s", p.ID, p.err, p.StderrTail(2<<10))
	}
	var row manyRow
	if err := json.Unmarshal([]byte(p.many), &row.manyResult); err != nil {
		return manyRow{}, fmt.Errorf("bench: many worker %s: %w", p.ID, err)
	}
	return row, nil
}

// checkLog checks a leasehold fleet's shared log: leaderships of different instances never
// overlapped and the term grew with each leader (E2, E5, W7, W8). It returns "" when they
// hold.
func checkLog(path string) string {
	lines, err := proctest.ReadLog(path)
	if err != nil {
		return err.Error()
	}
	ivs, err := proctest.Intervals(lines)
	if err != nil {
		return err.Error()
	}
	if err := proctest.CheckExclusive(ivs); err != nil {
		return err.Error()
	}
	return ""
}

func ms(d time.Duration) string {
	return fmt.Sprintf("%.0fms", float64(d)/float64(time.Millisecond))
}

func mib(b int64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }

// machine describes where the run happened.
type machine struct {
	CPUs, Model, Memory, Kernel, Go string
	LoadBefore, LoadAfter           string
}

func readMachine() machine {
	m := machine{Go: goVersion(), LoadBefore: loadAvg()}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		n := 0
		for _, line := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(line, "processor") {
				n++
			}
			if v, ok := strings.CutPrefix(line, "model name"); ok && m.Model == "" {
				m.Model = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(v), ":"))
			}
		}
		m.CPUs = fmt.Sprint(n)
	}
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		if f := strings.Fields(strings.SplitN(string(b), "\n", 2)[0]); len(f) >= 2 {
			var kb int64
			fmt.Sscan(f[1], &kb)
			m.Memory = fmt.Sprintf("%.1f GiB", float64(kb)/(1<<20))
		}
	}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = strings.TrimSpace(string(b))
	}
	return m
}

func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}
