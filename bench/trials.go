package main

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"syscall"
	"time"

	"github.com/leasehold/leasehold/internal/proctest"
)

// latencyResult is what the takeover trials of one system measured.
type latencyResult struct {
	// Crash: from the SIGKILL of the leader to another instance's lead line (its callback
	// starting). Handover: from the SIGTERM of the leader to another instance's lead line.
	Crash, Handover []time.Duration
	// Leasehold only, for its design bounds: crash takeover measured from the killed
	// leader's last renewal (E6: within L + R), handover from its unlead line (E7: within R).
	CrashSinceRenewal, HandoverSinceUnlead []time.Duration
	Overlaps                               string // leasehold: proctest.CheckExclusive on the shared log
	// Slow: the handover trials that took longer than slowHandover, each with what the machine
	// was doing meanwhile.
	Slow []string
}

// slowHandover is the handover target of a backend that notifies: a trial above it is
// reported one by one, with the CPU pressure during it and the instant of its SIGTERM (to
// find it in the workers' traces, --trace).
const slowHandover = 20 * time.Millisecond

// latencyTrials runs trials crash rounds and trials handover rounds, alternating, with
// `instances` workers electing on one lease; each signalled leader is replaced by a new
// worker so that `instances` candidates remain.
func latencyTrials(f *fleet, rng *rand.Rand, instances, trials int, logf func(string, ...any)) (latencyResult, error) {
	var res latencyResult
	if _, err := f.startReady(instances); err != nil {
		return res, err
	}
	for i := 0; len(res.Crash) < trials || len(res.Handover) < trials; i++ {
		if i > 4*trials+10 {
			return res, fmt.Errorf("bench: %s: the leader kept changing by itself: %d crash and %d handover trials after %d rounds", f.kind, len(res.Crash), len(res.Handover), i)
		}
		crash := len(res.Crash) <= len(res.Handover) && len(res.Crash) < trials
		old, err := f.waitLeader()
		if err != nil {
			return res, err
		}
		// Signal at a random phase of the renewals and of the followers' polls: R plus a
		// uniform fraction of R after the leader is known (it led at least R).
		if err := f.pause(f.r + time.Duration(rng.Int64N(int64(f.r)))); err != nil {
			return res, err
		}
		if f.leader != old {
			continue // it lost the lease meanwhile: not a trial
		}
		n := len(f.leads)
		sig, what := syscall.SIGTERM, "handover"
		if crash {
			sig, what = syscall.SIGKILL, "crash"
		}
		waitedBefore, pressure := cpuWaited()
		at := proctest.Now()
		if err := f.signal(old, sig); err != nil {
			return res, err
		}
		next, err := f.nextLead(old, n)
		if err != nil {
			return res, err
		}
		waitedAfter, _ := cpuWaited() // read as the lead line arrives: the trial's window
		if err := f.waitExit(old); err != nil {
			return res, err
		}
		took := time.Duration(next.t - at)
		if crash {
			res.Crash = append(res.Crash, took)
			if f.kind == kindLeasehold && old.last != nil {
				res.CrashSinceRenewal = append(res.CrashSinceRenewal, time.Duration(next.t-sinceRenewal(old.last, at, f.l, f.r)))
			}
		} else {
			if old.err != nil {
				return res, fmt.Errorf("bench: %s after SIGTERM: %v%s", old.ID, old.err, old.StderrTail(2<<10))
			}
			res.Handover = append(res.Handover, took)
			if took > slowHandover {
				note := fmt.Sprintf("handover %s → %s took %v (SIGTERM at %d ns)", old.ID, next.p.ID, took.Round(time.Millisecond/10), at)
				if pressure {
					note += fmt.Sprintf("; meanwhile, tasks waited for a CPU during %v (/proc/pressure/cpu)", (waitedAfter - waitedBefore).Round(time.Millisecond/10))
				}
				res.Slow = append(res.Slow, note)
			}
			if f.kind == kindLeasehold && old.unlead != nil {
				res.HandoverSinceUnlead = append(res.HandoverSinceUnlead, time.Duration(next.t-old.unlead.T))
			}
		}
		logf("  %s: %s %s → %s in %v", f.lease, what, old.ID, next.p.ID, took.Round(time.Millisecond/10))
		if _, err := f.startReady(1); err != nil {
			return res, err
		}
	}
	return res, f.stopAll()
}

// sinceRenewal is the instant the E6 bound counts from: the killed leader's last renewal
// (its line), unless the kill fell within 25ms of its next attempt (which starts R after the
// last successful one, E1): a renewal may then have landed unlogged, and the kill is the
// safe origin, as in proctest.
func sinceRenewal(last *proctest.Line, killAt int64, l, r time.Duration) int64 {
	next := last.Deadline - int64((l+r)/2) + int64(r)
	if killAt >= next-int64(25*time.Millisecond) {
		return killAt
	}
	return last.T
}

// steadyResult is the cost of n instances on one lease while nothing happens.
type steadyResult struct {
	Instances int
	Window    time.Duration
	ReqPerSec float64 // backend requests per second, all instances
	CPUHour   float64 // CPU seconds per instance-hour
	RSS       int64   // median resident memory per instance
	RSSMax    int64
}

// steady starts n workers, waits for a leader and for every worker's first attempts, then
// reads every worker's counters at both ends of the window.
func steady(f *fleet, n int, window time.Duration) (steadyResult, error) {
	res := steadyResult{Instances: n, Window: window}
	ps, err := f.startReady(n)
	if err != nil {
		return res, err
	}
	if _, err := f.waitLeader(); err != nil {
		return res, err
	}
	// Let the start-up (connection set-up, first attempts, the GC's first cycles) pass.
	if err := f.pause(2 * f.r); err != nil {
		return res, err
	}
	before, err := f.statsRound(ps)
	if err != nil {
		return res, err
	}
	if err := f.pause(window); err != nil {
		return res, err
	}
	after, err := f.statsRound(ps)
	if err != nil {
		return res, err
	}
	var reqs int64
	var cpu time.Duration
	var rss []int64
	for i := range ps {
		reqs += after[i].Requests - before[i].Requests
		cpu += after[i].CPU - before[i].CPU
		rss = append(rss, after[i].RSS)
	}
	slices.Sort(rss)
	el := time.Duration(after[0].at - before[0].at)
	res.Window = el
	res.ReqPerSec = float64(reqs) / el.Seconds()
	res.CPUHour = cpu.Seconds() / float64(n) / el.Hours()
	res.RSS, res.RSSMax = rss[len(rss)/2], rss[len(rss)-1]
	return res, f.stopAll()
}

type stamped struct {
	statsLine
	at int64
}

// statsRound asks every worker of ps for its counters (SIGUSR1) and waits for the answers.
func (f *fleet) statsRound(ps []*proc) ([]stamped, error) {
	counts := make([]int, len(ps))
	at := proctest.Now()
	for i, p := range ps {
		counts[i] = len(p.stats)
		if err := f.signal(p, syscall.SIGUSR1); err != nil {
			return nil, err
		}
	}
	err := f.wait("stats", 30*time.Second, func() bool {
		for i, p := range ps {
			if len(p.stats) == counts[i] {
				return false
			}
		}
		return true
	})
	if err != nil {
		return nil, err
	}
	out := make([]stamped, len(ps))
	for i, p := range ps {
		out[i] = stamped{p.stats[len(p.stats)-1], at}
	}
	return out, nil
}
