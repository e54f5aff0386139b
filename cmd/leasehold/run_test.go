//go:build unix

package main

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Timings of the run tests, and the slack allowed on top of each bound: a CMD is a fresh
// process of this (possibly -race) test binary, the file store polls its flock, and the
// machine's two cores are shared with other tests; 1s covers that with room, and is still
// well below the bounds' own size, so a broken bound (a takeover at 2L, say) fails.
const (
	testL  = 2 * time.Second
	testR  = 500 * time.Millisecond
	slack  = time.Second
	testLs = "2s"
	testRs = "500ms"
)

func runArgs(w *world, id string, extra ...string) []string {
	args := []string{"run", "--store", w.storeURL(), "--lease", "jobs", "--lease-duration", testLs,
		"--renew-interval", testRs, "--instance-id", id, "--log-format", "json"}
	args = append(args, extra...)
	return append(append(args, "--"), helperCmd()...)
}

// Three leasehold run processes over one file store: one CMD runs at a time (the helpers'
// flock proves it, and the recorded intervals are checked); SIGKILL of the leader's leasehold
// kills its CMD at once (its keeper does) and another CMD starts within L + R (E6); SIGTERM
// of the next leader stops its CMD, releases the lease, and another CMD starts within R (E7).
func TestRunFailover(t *testing.T) {
	w := newWorld(t)
	env := []string{"LEASEHOLD_TEST_CMD=record"}
	procs := map[string]*proc{}
	for _, id := range []string{"a", "b", "c"} {
		procs[id] = w.start(id, env, runArgs(w, id)...)
	}
	type interval struct {
		id         string
		start, end time.Time
	}
	var intervals []interval

	first, _ := w.waitCmd(30*time.Second, "CMD-START", nil)
	if first.lease != "jobs" || first.term == 0 || procs[first.id] == nil {
		t.Fatalf("first CMD: lease %q term %d instance %q, want lease jobs, a term, one of a, b, c", first.lease, first.term, first.id)
	}

	// SIGKILL the leader: its CMD must die with it, and another CMD start within L + R.
	killedAt := time.Now()
	if err := procs[first.id].cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitGone(t, first.pid, slack) // "at once": its keeper kills CMD's tree when leasehold dies
	intervals = append(intervals, interval{first.id, first.start(), time.Now()})
	second, _ := w.waitCmd(3*(testL+testR), "CMD-START", func(e cmdEvent) bool { return e.id != first.id })
	if took := second.at.Sub(killedAt); took > testL+testR+slack {
		t.Errorf("after SIGKILL of the leader, the next CMD started %v later, want at most L+R = %v (+%v slack)", took, testL+testR, slack)
	} else {
		t.Logf("takeover after SIGKILL: %v (bound L+R = %v)", took.Round(time.Millisecond), testL+testR)
	}
	if second.term <= first.term {
		t.Errorf("second CMD's LEASEHOLD_TERM = %d, want above %d (E11)", second.term, first.term)
	}

	// SIGTERM the new leader: its CMD stops, the lease is released, the last instance takes
	// over at its next attempt.
	if err := procs[second.id].cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	stop, _ := w.waitCmd(10*time.Second, "CMD-STOP", func(e cmdEvent) bool { return e.id == second.id })
	intervals = append(intervals, interval{second.id, second.at, stop.at})
	third, _ := w.waitCmd(3*(testL+testR), "CMD-START", nil)
	if third.id == first.id || third.id == second.id {
		t.Fatalf("third CMD run by %q, which is gone", third.id)
	}
	if took := third.at.Sub(stop.at); took > testR+slack {
		t.Errorf("after SIGTERM of the leader, the next CMD started %v after the last one stopped, want at most R = %v (+%v slack)", took, testR, slack)
	} else {
		t.Logf("takeover after SIGTERM: %v (bound R = %v)", took.Round(time.Millisecond), testR)
	}
	if code := w.waitExit(procs[second.id], 10*time.Second); code != 0 {
		t.Errorf("leasehold stopped by SIGTERM exited %d, want 0", code)
	}

	if err := procs[third.id].cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	stop, _ = w.waitCmd(10*time.Second, "CMD-STOP", func(e cmdEvent) bool { return e.id == third.id })
	intervals = append(intervals, interval{third.id, third.at, stop.at})
	if code := w.waitExit(procs[third.id], 10*time.Second); code != 0 {
		t.Errorf("leasehold stopped by SIGTERM exited %d, want 0", code)
	}

	// The recorded intervals never overlap. The first one's end is when the test saw its CMD
	// gone: later than it really ended, so the check is on the safe side.
	for i := 1; i < len(intervals); i++ {
		prev, cur := intervals[i-1], intervals[i]
		if !cur.start.After(prev.end) {
			t.Errorf("CMD of %s started at %v, before the CMD of %s ended at %v", cur.id, cur.start, prev.id, prev.end)
		}
	}
}

// start is when the CMD started, by its own clock.
func (e cmdEvent) start() time.Time { return e.at }

// A CMD that ignores SIGTERM is SIGKILLed once the grace has passed, then the lease is
// released and leasehold exits 0.
func TestRunSIGKILLAfterGrace(t *testing.T) {
	w := newWorld(t)
	const grace = 300 * time.Millisecond
	p := w.start("a", []string{"LEASEHOLD_TEST_CMD=ignore-term"}, runArgs(w, "a", "--grace", grace.String())...)
	started, _ := w.waitCmd(30*time.Second, "CMD-START", nil)
	sent := time.Now()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	w.logLine(10*time.Second, "leasehold: CMD did not stop within the grace: SIGKILL")
	waitGone(t, started.pid, 10*time.Second)
	if took := time.Since(sent); took < grace {
		t.Errorf("CMD ignoring SIGTERM was gone %v after it, before the grace %v", took, grace)
	}
	if code := w.waitExit(p, 10*time.Second); code != 0 {
		t.Errorf("leasehold exited %d, want 0", code)
	}
	if st := statusJSON(t, w.storeURL(), "jobs"); st.State != "released" {
		t.Errorf("lease state after the stop = %q, want released", st.State)
	}
}

// When CMD exits by itself, leasehold releases the lease and exits with CMD's status; a CMD
// found at start-up that cannot be executed once leading gives 127; a CMD killed by a signal
// gives 128+N. (A CMD that cannot be found is refused at start-up: TestRunCommandNotFound.)
func TestRunExitStatus(t *testing.T) {
	w := newWorld(t)
	badFormat := filepath.Join(w.dir, "bad-format")
	if err := os.WriteFile(badFormat, []byte{0, 1, 2, 3}, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		env  []string
		cmd  []string
		want int
	}{
		{"exit 0", []string{"LEASEHOLD_TEST_CMD=exit", "LEASEHOLD_TEST_EXIT=0"}, helperCmd(), 0},
		{"exit 7", []string{"LEASEHOLD_TEST_CMD=exit", "LEASEHOLD_TEST_EXIT=7"}, helperCmd(), 7},
		{"cannot exec", nil, []string{badFormat}, 127},
		{"killed", nil, []string{"/bin/sh", "-c", "kill -9 $$"}, 128 + 9},
	} {
		args := []string{"run", "--store", w.storeURL(), "--lease", "jobs", "--lease-duration", testLs,
			"--renew-interval", testRs, "--log-format", "json", "--"}
		p := w.start(tc.name, tc.env, append(args, tc.cmd...)...)
		if code := w.waitExit(p, 30*time.Second); code != tc.want {
			t.Errorf("%s: leasehold exited %d, want %d", tc.name, code, tc.want)
		}
		if st := statusJSON(t, w.storeURL(), "jobs"); st.State != "released" {
			t.Errorf("%s: lease state after leasehold exited = %q, want released", tc.name, st.State)
		}
	}
}

// --restart runs CMD again while still leading, in the same term.
func TestRunRestart(t *testing.T) {
	w := newWorld(t)
	p := w.start("a", []string{"LEASEHOLD_TEST_CMD=exit", "LEASEHOLD_TEST_EXIT=3"}, runArgs(w, "a", "--restart")...)
	var pids []int
	var term uint64
	for range 3 {
		ev, _ := w.waitCmd(30*time.Second, "CMD-START", nil)
		if term == 0 {
			term = ev.term
		}
		if ev.term == 0 || ev.term != term {
			t.Errorf("restarted CMD has LEASEHOLD_TERM %d, want %d, the first CMD's (same leadership)", ev.term, term)
		}
		pids = append(pids, ev.pid)
	}
	if pids[0] == pids[1] || pids[1] == pids[2] {
		t.Errorf("CMD pids %v: want three processes", pids)
	}
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := w.waitExit(p, 10*time.Second); code != 0 {
		t.Errorf("leasehold exited %d, want 0", code)
	}
}

// SIGHUP is forwarded to CMD, which keeps running; SIGINT is forwarded as SIGINT and stops
// leasehold.
func TestRunForwardsSignals(t *testing.T) {
	w := newWorld(t)
	p := w.start("a", []string{"LEASEHOLD_TEST_CMD=record"}, runArgs(w, "a")...)
	w.waitCmd(30*time.Second, "CMD-START", nil)
	if err := p.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	w.waitCmd(10*time.Second, "CMD-HUP", nil)
	if err := p.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	w.waitLine(10*time.Second, "CMD-STOP after SIGINT", func(l line) bool {
		return strings.HasPrefix(l.text, "CMD-STOP") && strings.Contains(l.text, "signal=interrupt")
	})
	if code := w.waitExit(p, 10*time.Second); code != 0 {
		t.Errorf("leasehold exited %d, want 0", code)
	}
}

// The environment of CMD names the lease, the instance and the term.
func TestRunEnvironment(t *testing.T) {
	w := newWorld(t)
	p := w.start("a", []string{"LEASEHOLD_TEST_CMD=exit"}, runArgs(w, "node-7")...)
	ev, _ := w.waitCmd(30*time.Second, "CMD-START", nil)
	if ev.lease != "jobs" || ev.id != "node-7" || ev.term == 0 {
		t.Errorf("CMD environment: LEASEHOLD_LEASE=%q LEASEHOLD_INSTANCE_ID=%q LEASEHOLD_TERM=%d, want jobs, node-7, a term", ev.lease, ev.id, ev.term)
	}
	w.waitExit(p, 30*time.Second)
}

// The store's URL, which LEASEHOLD_STORE may hold with its password, is not passed on to CMD.
func TestRunKeepsTheStoreURLFromCMD(t *testing.T) {
	w := newWorld(t)
	p := w.start("a", []string{"LEASEHOLD_TEST_CMD=print-store", "LEASEHOLD_STORE=redis://:hunter2@127.0.0.1:1/0"},
		runArgs(w, "node-1")...)
	l := w.waitLine(30*time.Second, "CMD-STORE", func(l line) bool { return strings.HasPrefix(l.text, "CMD-STORE") })
	if l.text != `CMD-STORE ""` {
		t.Errorf("CMD saw %s, want LEASEHOLD_STORE unset", l.text)
	}
	w.waitExit(p, 30*time.Second)
}

// A CMD that cannot be started is an error at start-up, on every instance, before joining the
// election: exit 2, the message names the command, and the lease record is never created.
func TestRunCommandNotFound(t *testing.T) {
	w := newWorld(t)
	notExec := filepath.Join(w.dir, "not-executable")
	if err := os.WriteFile(notExec, []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, cmd, want string }{
		{"missing file", filepath.Join(w.dir, "no-such-command"), "no such file"},
		{"not in PATH", "leasehold-no-such-command", "not found"},
		{"not executable", notExec, "permission denied"},
		{"directory", w.dir, "directory"},
	} {
		start := time.Now()
		stdout, stderr, code := runLeasehold(t, "run", "--store", w.storeURL(), "--lease", "jobs", "--lease-duration", testLs,
			"--renew-interval", testRs, "--", tc.cmd, "arg")
		first, _, _ := strings.Cut(stderr, "\n")
		if code != 2 {
			t.Errorf("%s: exit %d, want 2; stderr:\n%s", tc.name, code, stderr)
		}
		if !strings.Contains(first, strconv.Quote(tc.cmd)) || !strings.Contains(first, tc.want) {
			t.Errorf("%s: first line %q, want it to name %q and say %q", tc.name, first, tc.cmd, tc.want)
		}
		if stdout != "" || strings.Contains(stderr, "joined the election") {
			t.Errorf("%s: output of a command that should not have run:\nstdout: %s\nstderr: %s", tc.name, stdout, stderr)
		}
		if took := time.Since(start); took > 10*time.Second {
			t.Errorf("%s: took %v", tc.name, took)
		}
		if st := statusJSON(t, w.storeURL(), "jobs"); st.State != "missing" {
			t.Errorf("%s: lease state %q, want missing: the election was joined", tc.name, st.State)
		}
	}
	// The store itself was never written.
	if _, err := os.Stat(filepath.Join(w.dir, "registry.json")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("registry.json: %v, want it never created", err)
	}
}
