package campaign

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// The CI mode's size: each campaign injects every kind of its schedule once (its first round,
// in a random order; Run does not end before), and at least ciMinFaults faults over at least
// LEASEHOLD_FAULTS_DURATION (default ciDefaultDuration). The first round dominates: 10 kinds
// without a network, 15 with one, 10 to 15 over a cluster; 15 to 40 seconds a campaign. The
// CI tests run their campaigns two at a time (ciRun); the depth is the soak's (go run
// ./faults --soak, at least 1,000 faults per backend).
const (
	ciDefaultDuration = 5 * time.Second
	ciMinFaults       = 10
)

// TestCampaignCI is the CI mode of the campaign: for each backend, 3 worker processes, L = 1s,
// R = 250ms, every kind of fault once and then at random up to ciMinFaults faults and
// LEASEHOLD_FAULTS_DURATION, run one backend after the other. It fails on any overlap of
// leaderships outside SIGSTOP pauses (E2, E5, W7), any action accepted from a stale term or
// sent outside its sender's leadership (W7, W8), any takeover beyond L + R after a crash,
// pause or partition of the leader (E6) or beyond R after a clean stop (E7), each plus
// DefaultSlack (100ms, for process scheduling), any worker that crashes or does not stop
// cleanly (E7, E8), and any kind of the backend's schedule not injected. A backend whose
// server is unreachable is skipped, or fails when LEASEHOLD_REQUIRE_SERVERS=1.
// LEASEHOLD_FAULTS_MIN raises the number of faults (a longer run); LEASEHOLD_FAULTS_OUT keeps
// the reports.
func TestCampaignCI(t *testing.T) {
	skipCI(t)
	duration, minFaults := ciDuration(t), ciMin(t)
	only := os.Getenv("LEASEHOLD_FAULTS_BACKENDS") // comma-separated subset, for local runs
	reps := &ciReports{}
	// Every registered backend, one after the other: etcd (embedded), file, kubernetes (a
	// kube-apiserver of its own), mysql, nats, postgres, redis, sqlite.
	for _, name := range Backends() {
		if !selected(only, name) || IsClusterBackend(name) {
			continue // the cluster backends run in TestCampaignClusterCI
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel() // two at a time: ciRun
			rep := ciRun(t, Options{Backend: name, Duration: duration, MinFaults: minFaults}, minFaults)
			reps.add(rep)
			if n := rep.overlapsOutsidePauses(); n != 0 {
				t.Errorf("%d overlaps of two leaders outside pauses", n)
			}
			if rep.Actions.AcceptedStale != 0 {
				t.Errorf("%d stale actions accepted", rep.Actions.AcceptedStale)
			}
			for _, f := range rep.Faults {
				if f.Unrecovered {
					t.Logf("fault %d (%s of %s): the cluster did not recover: %s", f.N, f.Kind, f.Target, f.UnrecoveredWhy)
				}
			}
		})
	}
	reps.writeWhenDone(t, fmt.Sprintf("LEASEHOLD_FAULTS_DURATION=%v LEASEHOLD_FAULTS_MIN=%d go test -run TestCampaignCI ./faults/...", duration, minFaults))
}

// skipCI skips a CI campaign test where it cannot run.
func skipCI(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("runs server and worker processes for minutes")
	}
	if runtime.GOOS != "linux" {
		t.Skip("the campaign signals process groups and reads CLOCK_MONOTONIC on Linux")
	}
}

// selected reports whether LEASEHOLD_FAULTS_BACKENDS (only) picks the backend.
func selected(only, name string) bool {
	return only == "" || strings.Contains(","+only+",", ","+name+",")
}

// ciRun runs one campaign of the CI mode (3 workers, L = 1s, R = 250ms, DefaultSlack, this
// test binary as the worker, over o's backend and mode) and fails t on what no campaign may
// show: a violation, faults that stopped early, fewer than minFaults faults, a kind of the
// schedule never injected, no action accepted. It skips t when the backend's server is not
// there and not required.
func ciRun(t *testing.T, o Options, minFaults int) *Report {
	t.Helper()
	ciSlots <- struct{}{}
	defer func() { <-ciSlots }()
	o.gate = &ciGate
	o.Instances, o.LeaseDuration, o.RenewInterval, o.Slack = 3, time.Second, 250*time.Millisecond, DefaultSlack
	o.WorkerArgs, o.Logf = []string{"-test.run=^$"}, t.Logf
	rep, err := Run(t.Context(), o)
	switch {
	case errors.Is(err, ErrUnavailable) && !Required(o.Backend):
		t.Skip(err)
	case err != nil:
		t.Fatal(err)
	}
	if len(rep.Faults) < minFaults {
		t.Errorf("%d faults injected, want at least %d", len(rep.Faults), minFaults)
	}
	if missing := rep.MissingKinds(); len(missing) > 0 {
		t.Errorf("kinds of fault never injected: %v", missing)
	}
	if rep.Actions.Accepted == 0 {
		t.Errorf("no action reached the fenced resource: the leaders did not act")
	}
	if rep.Stopped != "" {
		t.Errorf("the faults stopped early: %s", rep.Stopped)
	}
	for _, v := range rep.Violations {
		t.Errorf("VIOLATION: %s", v)
	}
	var md strings.Builder
	if err := WriteMarkdown(&md, "", []*Report{rep}, nil); err != nil {
		t.Fatal(err)
	}
	t.Logf("\n%s", md.String())
	return rep
}

// The CI campaigns run two at a time (LEASEHOLD_FAULTS_PARALLEL: another number; 1, one after
// the other), as parallel subtests: each spends most of its time waiting on L and R, not
// computing. They share ciGate, so that each starts its backend and workers alone and none
// measures a bound while another starts (see gate).
var (
	ciSlots = make(chan struct{}, ciParallel())
	ciGate  gate
)

func ciParallel() int {
	if n, err := strconv.Atoi(os.Getenv("LEASEHOLD_FAULTS_PARALLEL")); err == nil && n > 0 {
		return n
	}
	return 2
}

// ciReports collects the reports of a CI test's parallel subtests.
type ciReports struct {
	mu   sync.Mutex
	reps []*Report
}

func (c *ciReports) add(rep *Report) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.reps = append(c.reps, rep)
}

// writeWhenDone writes the reports into LEASEHOLD_FAULTS_OUT, when it is set, once t's
// subtests are done, in the order of their names.
func (c *ciReports) writeWhenDone(t *testing.T, command string) {
	t.Cleanup(func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		slices.SortFunc(c.reps, func(a, b *Report) int { return strings.Compare(a.Name(), b.Name()) })
		if dir := os.Getenv("LEASEHOLD_FAULTS_OUT"); dir != "" && len(c.reps) > 0 {
			if err := WriteFiles(dir, command, c.reps); err != nil {
				t.Error(err)
			}
		}
	})
}

// ciDuration is LEASEHOLD_FAULTS_DURATION, ciDefaultDuration by default.
func ciDuration(t *testing.T) time.Duration {
	duration := ciDefaultDuration
	if v := os.Getenv("LEASEHOLD_FAULTS_DURATION"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			t.Fatalf("LEASEHOLD_FAULTS_DURATION: %v", err)
		}
		duration = d
	}
	return duration
}

// ciMin is LEASEHOLD_FAULTS_MIN, ciMinFaults by default.
func ciMin(t *testing.T) int {
	if v := os.Getenv("LEASEHOLD_FAULTS_MIN"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			t.Fatalf("LEASEHOLD_FAULTS_MIN: %q is not a number of faults", v)
		}
		return n
	}
	return ciMinFaults
}

// TestCampaignClusterCI is the CI mode over the cluster backends (RegisterClusterBackend:
// etcd, NATS, Redis with Sentinels, PostgreSQL with a standby): the store runs as a cluster of
// server processes, and besides the instances' faults (kill, pause, clean stop and partition
// of the leader, resets, outages) the schedule kills, pauses and cuts off single members (the
// cluster's leader, another one, the one the leading instance talks to), fails the cluster
// over when it can, and restarts it whole. 3 workers, L = 1s, R = 250ms, every kind of the
// cluster's schedule once, then at random up to ciMinFaults faults and
// LEASEHOLD_FAULTS_DURATION, per backend. The checks are TestCampaignCI's, and after a
// member's fault the fleet leads again within L + R + DefaultSlack of the store answering
// again (but after a restart of the whole cluster, which is not bounded, as an outage is not).
// LEASEHOLD_FAULTS_BACKENDS picks some; LEASEHOLD_FAULTS_MIN raises the number of faults (a
// longer run); LEASEHOLD_FAULTS_OUT keeps the reports.
func TestCampaignClusterCI(t *testing.T) {
	skipCI(t)
	duration, minFaults := ciDuration(t), ciMin(t)
	only := os.Getenv("LEASEHOLD_FAULTS_BACKENDS")
	reps := &ciReports{}
	for _, name := range ClusterBackends() {
		if !selected(only, name) {
			continue
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel() // two at a time: ciRun
			rep := ciRun(t, Options{Backend: name, Duration: duration, MinFaults: minFaults}, minFaults)
			reps.add(rep)
			// ciRun checks every kind came; these are the ones a cluster must have.
			count := map[Kind]int{}
			for _, f := range rep.Faults {
				count[f.Kind]++
			}
			for _, k := range []Kind{MemberKillLeader, MemberKillFollower, MemberFailover} {
				if count[k] == 0 && !slices.Contains(rep.Cluster.NoFailover, k) {
					t.Errorf("no %s fault injected", k)
				}
			}
		})
	}
	reps.writeWhenDone(t, fmt.Sprintf("LEASEHOLD_FAULTS_DURATION=%v LEASEHOLD_FAULTS_MIN=%d go test -run TestCampaignClusterCI ./faults/...", duration, minFaults))
}

// The campaign cleans up after itself when interrupted: a cancelled context ends Run with its
// error, every worker it started is gone (a SIGSTOPped one too), and so is its directory.
func TestInterruptCleansUp(t *testing.T) {
	if testing.Short() || runtime.GOOS != "linux" {
		t.Skip("starts worker processes on Linux")
	}
	var d *driver
	testHookDriver = func(x *driver) { d = x }
	t.Cleanup(func() { testHookDriver = nil })
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	faults := 0
	_, err := Run(ctx, Options{
		Backend: "file", Duration: time.Hour, WorkerArgs: []string{"-test.run=^$"},
		Logf: func(format string, args ...any) {
			t.Logf(format, args...)
			if strings.Contains(format, "fault %d") {
				if faults++; faults == 3 {
					// Logf runs on Run's goroutine: freeze a worker as a pause would, then
					// interrupt; the campaign's next wait returns at once.
					if p := d.slots[0].cur; p != nil && !p.exited {
						if err := p.Signal(syscall.SIGSTOP); err != nil {
							t.Error(err)
						}
						p.paused = true
					}
					cancel()
				}
			}
		},
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Run after cancel: %v, want context.Canceled", err)
	}
	if d == nil || len(d.procs) < 3 {
		t.Fatalf("the test hook saw no workers")
	}
	for _, p := range d.procs {
		if !p.exited {
			t.Errorf("worker %s (pid %d) has not exited", p.ID, p.Cmd.Process.Pid)
		}
		if p.Cmd.ProcessState == nil {
			t.Errorf("worker %s (pid %d) was not waited for", p.ID, p.Cmd.Process.Pid)
		}
	}
	if _, err := os.Stat(d.dir); !os.IsNotExist(err) {
		t.Errorf("the campaign's directory %s is still there (%v)", d.dir, err)
	}
}

// An election that does not settle after a fault ends the run with its report, the stuck
// settle among the violations, rather than with an error and no report; every worker is gone.
func TestStuckElectionEndsWithAReport(t *testing.T) {
	if testing.Short() || runtime.GOOS != "linux" {
		t.Skip("starts worker processes on Linux")
	}
	var d *driver
	testHookDriver = func(x *driver) { d, x.settleWait = x, 2*time.Second }
	t.Cleanup(func() { testHookDriver = nil })
	faults := 0
	rep, err := Run(t.Context(), Options{
		Backend: "file", Duration: time.Hour, MinFaults: 1000, WorkerArgs: []string{"-test.run=^$"},
		Logf: func(format string, args ...any) {
			t.Logf(format, args...)
			if strings.Contains(format, "fault %d") {
				if faults++; faults == 2 {
					// A worker frozen for good: its attempts never succeed again.
					for _, s := range d.slots {
						if p := s.cur; p != nil && !p.exited && !p.paused {
							if err := p.Signal(syscall.SIGSTOP); err != nil {
								t.Error(err)
							}
							p.paused = true
							break
						}
					}
				}
			}
		},
	})
	if err != nil {
		t.Fatalf("Run: %v, want a report", err)
	}
	if !strings.Contains(rep.Stopped, "ended after fault") || !rep.Failed() ||
		!strings.Contains(strings.Join(rep.Violations, "\n"), "healthy election") {
		t.Errorf("stopped %q, violations %q; want the run ended on the stuck election", rep.Stopped, rep.Violations)
	}
	if len(rep.Faults) < 2 || len(rep.Faults) >= 1000 {
		t.Errorf("%d faults in the report", len(rep.Faults))
	}
	for _, p := range d.procs {
		if !p.exited {
			t.Errorf("worker %s (pid %d) has not exited", p.ID, p.Cmd.Process.Pid)
		}
	}
}

// MaxDuration ends the faults short of MinFaults, with a report that says so.
func TestMaxDurationEndsWithAReport(t *testing.T) {
	if testing.Short() || runtime.GOOS != "linux" {
		t.Skip("starts worker processes on Linux")
	}
	rep, err := Run(t.Context(), Options{
		Backend: "file", MinFaults: 10000, MaxDuration: 2 * time.Second, WorkerArgs: []string{"-test.run=^$"}, Logf: t.Logf,
	})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(rep.Stopped, "reached the maximum duration 2s") || len(rep.Faults) == 0 || len(rep.Faults) >= 10000 {
		t.Errorf("stopped %q after %d faults", rep.Stopped, len(rep.Faults))
	}
	for _, v := range rep.Violations {
		t.Errorf("VIOLATION: %s", v)
	}
}
