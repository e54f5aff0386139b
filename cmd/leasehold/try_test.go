//go:build unix

package main

import (
	"strings"
	"syscall"
	"testing"
	"time"
)

// C5: three leasehold run --try started together over one file store: exactly one CMD runs;
// the other two exit 75 at their first attempt (they found the record held, or lost the race
// to create it), without running CMD.
func TestRunTryThreeTogether(t *testing.T) {
	w := newWorld(t)
	env := []string{"LEASEHOLD_TEST_CMD=record"}
	procs := map[string]*proc{}
	for _, id := range []string{"a", "b", "c"} {
		procs[id] = w.start(id, env, runArgs(w, id, "--try")...)
	}
	started := time.Now()
	var leader string
	gaveUp := 0
	for leader == "" || gaveUp < 2 {
		l := w.waitLine(30*time.Second, "one CMD-START and two give-ups", func(l line) bool {
			if ev, ok := parseCmdEvent(l.text); ok && ev.kind == "CMD-START" {
				return true
			}
			m, ok := jsonLog(l.text)
			msg, _ := m["msg"].(string)
			return ok && strings.Contains(msg, "giving up")
		})
		if ev, ok := parseCmdEvent(l.text); ok {
			if leader != "" {
				t.Fatalf("a second CMD started, by %s, after %s's", ev.id, leader)
			}
			leader = ev.id
			continue
		}
		gaveUp++
		if code := w.waitExit(l.proc, 10*time.Second); code != exitBusy {
			t.Errorf("%s gave up and exited %d, want %d", l.proc.name, code, exitBusy)
		}
		t.Logf("%s: %s (exit %d, %v after the start)", l.proc.name, l.text, l.proc.code, time.Since(started).Round(time.Millisecond))
	}
	if err := procs[leader].cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := w.waitExit(procs[leader], 10*time.Second); code != 0 {
		t.Errorf("the leader %s exited %d after SIGTERM, want 0", leader, code)
	}
	for id, p := range procs {
		if id == leader {
			continue
		}
		p.mu.Lock()
		for _, o := range p.output {
			if strings.HasPrefix(o, "CMD-") {
				t.Errorf("%s gave up but its CMD ran: %s", id, o)
			}
		}
		p.mu.Unlock()
	}
}

// C5: --wait D with a holder that releases the lease before D: it leads (its CMD starts once
// the holder's has stopped); with a holder that keeps it: it gives up at D, exit 75.
func TestRunWait(t *testing.T) {
	t.Run("released before D", func(t *testing.T) {
		w := newWorld(t)
		a := w.start("a", []string{"LEASEHOLD_TEST_CMD=record"}, runArgs(w, "a")...)
		first, _ := w.waitCmd(30*time.Second, "CMD-START", nil)
		b := w.start("b", []string{"LEASEHOLD_TEST_CMD=record"}, runArgs(w, "b", "--wait", "30s")...)
		w.waitLine(30*time.Second, "b observing a", func(l line) bool {
			m, ok := jsonLog(l.text)
			return ok && l.proc == b && m["msg"] == "leasehold: observed leader" && m["holder"] == "a"
		})
		if err := a.cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		stop, _ := w.waitCmd(10*time.Second, "CMD-STOP", func(e cmdEvent) bool { return e.id == "a" })
		ev, _ := w.waitCmd(3*(testL+testR), "CMD-START", func(e cmdEvent) bool { return e.id == "b" })
		if ev.term <= first.term {
			t.Errorf("b's CMD runs in term %d, want above a's %d", ev.term, first.term)
		}
		t.Logf("b, under --wait 30s, led %v after a's CMD stopped", ev.at.Sub(stop.at).Round(time.Millisecond))
		if err := b.cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		if code := w.waitExit(b, 10*time.Second); code != 0 {
			t.Errorf("b exited %d after SIGTERM, want 0", code)
		}
	})
	t.Run("held past D", func(t *testing.T) {
		w := newWorld(t)
		const d = 3 * time.Second
		a := w.start("a", []string{"LEASEHOLD_TEST_CMD=record"}, runArgs(w, "a")...)
		w.waitCmd(30*time.Second, "CMD-START", nil)
		b := w.start("b", []string{"LEASEHOLD_TEST_CMD=record"}, runArgs(w, "b", "--wait", d.String())...)
		joined := w.waitLine(30*time.Second, "b joining", func(l line) bool {
			m, ok := jsonLog(l.text)
			return ok && l.proc == b && m["msg"] == "leasehold: joined the election"
		})
		gave := w.waitLine(d+10*time.Second, "b giving up", func(l line) bool {
			m, ok := jsonLog(l.text)
			return ok && l.proc == b && m["msg"] == "leasehold: another instance holds the lease: giving up" && m["holder"] == "a"
		})
		if code := w.waitExit(b, 10*time.Second); code != exitBusy {
			t.Errorf("b exited %d, want %d", code, exitBusy)
		}
		// The line was read after b wrote it: the wait measured here may be short of b's own by
		// the pipe's delay, hence the margin below D.
		if took := gave.at.Sub(joined.at); took < d-200*time.Millisecond || took > d+slack {
			t.Errorf("b gave up %v after joining, want --wait %v (+%v slack)", took, d, slack)
		} else {
			t.Logf("b gave up %v after joining (--wait %v)", took.Round(time.Millisecond), d)
		}
		if err := a.cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		w.waitExit(a, 10*time.Second)
	})
}

// C5 and E6: --try gives up on a live holder, whose renewals it sees, within about R; a lease
// left by a crashed holder (SIGKILL: the record stays, naming it) is not held for --try, whose
// election watches the record unchanged for L, takes it over and runs CMD, all within L + R of
// its start.
func TestRunTryCrashedHolder(t *testing.T) {
	w := newWorld(t)
	a := w.start("a", []string{"LEASEHOLD_TEST_CMD=record"}, runArgs(w, "a")...)
	first, _ := w.waitCmd(30*time.Second, "CMD-START", nil)

	started := time.Now()
	_, stderr, code := runLeasehold(t, probeArgs(w, "b", "--try")...)
	if took := time.Since(started); code != exitBusy || !strings.Contains(stderr, `"holder":"a"`) || took >= testL {
		t.Errorf("--try over a live holder's lease: exit %d after %v; want %d naming holder a, within about R = %v (before L = %v); stderr:\n%s",
			code, took, exitBusy, testR, testL, stderr)
	}

	if err := a.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	w.waitExit(a, 10*time.Second)
	waitGone(t, first.pid, slack)
	if st := statusJSON(t, w.storeURL(), "jobs"); st.Holder != "a" {
		t.Fatalf("lease after a's crash: %+v; want the record still naming a", st)
	}

	c := w.start("c", []string{"LEASEHOLD_TEST_CMD=exit", "LEASEHOLD_TEST_EXIT=5"}, runArgs(w, "c", "--try")...)
	ev, _ := w.waitCmd(2*(testL+testR)+slack, "CMD-START", func(e cmdEvent) bool { return e.id == "c" })
	// Both times are leasehold's own clock: from joining the election to leading, then CMD.
	joined, err := time.Parse(time.RFC3339Nano, lastLogTime(w, c, "leasehold: joined the election"))
	if err != nil {
		t.Fatal(err)
	}
	led, err := time.Parse(time.RFC3339Nano, lastLogTime(w, c, "leasehold: became leader"))
	if err != nil {
		t.Fatal(err)
	}
	if took := led.Sub(joined); took < testL || took > testL+testR+slack/2 {
		t.Errorf("--try over a crashed holder's lease led %v after joining the election; want after L = %v, within L + R = %v (+%v slack)", took, testL, testL+testR, slack/2)
	} else {
		t.Logf("--try led %v after joining the election, over a crashed holder's lease; its CMD started %v later", took.Round(time.Millisecond), ev.at.Sub(led).Round(time.Millisecond))
	}
	if ev.term <= first.term {
		t.Errorf("c's CMD runs in term %d, want above a's %d", ev.term, first.term)
	}
	if code := w.waitExit(c, 10*time.Second); code != 5 {
		t.Errorf("c exited %d, want 5 (its CMD's)", code)
	}
}

// C6: run --hold-at-least D: CMD exits at once (status 7), the lease stays held and renewed
// until D after CMD started, then it is released and leasehold exits 7. A --try in that window
// gives up; one after it leads, in the next term.
func TestRunHoldAtLeast(t *testing.T) {
	w := newWorld(t)
	const hold = 3 * time.Second // more than L: the lease is renewed in the window
	a := w.start("a", []string{"LEASEHOLD_TEST_CMD=exit", "LEASEHOLD_TEST_EXIT=7"}, runArgs(w, "a", "--hold-at-least", hold.String())...)
	keeping := w.logLine(30*time.Second, "leasehold: CMD exited: keeping the lease for --hold-at-least")
	until, err := time.Parse(time.RFC3339Nano, keeping["until"].(string))
	if err != nil {
		t.Fatalf("the hold's until: %v", err)
	}
	if started, err := time.Parse(time.RFC3339Nano, lastLogTime(w, a, "leasehold: started CMD")); err != nil || until.Sub(started) > hold || until.Sub(started) < hold-slack {
		t.Errorf("the hold lasts until %v, CMD started at %v (%v): want --hold-at-least %v after CMD's start", until, started, err, hold)
	}

	_, stderr, code := runLeasehold(t, probeArgs(w, "b", "--try")...)
	if code != exitBusy || !strings.Contains(stderr, `"holder":"a"`) {
		t.Errorf("--try while a holds the lease after its CMD: exit %d, want %d naming holder a; stderr:\n%s", code, exitBusy, stderr)
	}
	released := w.waitLine(hold+10*time.Second, "a releasing the lease", func(l line) bool {
		m, ok := jsonLog(l.text)
		return ok && l.proc == a && m["msg"] == "leasehold: released lease"
	})
	if code := w.waitExit(a, 10*time.Second); code != 7 {
		t.Errorf("a exited %d, want 7 (its CMD's status)", code)
	}
	// Both times are leasehold's own clock: the release may not come before the hold's end.
	m, _ := jsonLog(released.text)
	s, _ := m["time"].(string)
	at, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		t.Fatal(err)
	}
	if late := at.Sub(until); late < 0 || late > slack {
		t.Errorf("the lease was released at %v, %v after the hold's end %v; want after it, within %v", at, late, until, slack)
	} else {
		t.Logf("released %v after the end of --hold-at-least %v", late.Round(time.Millisecond), hold)
	}
	a.mu.Lock()
	var aCmd cmdEvent
	for _, o := range a.output {
		if e, ok := parseCmdEvent(o); ok && e.kind == "CMD-START" {
			aCmd = e
		}
	}
	a.mu.Unlock()
	held := statusJSON(t, w.storeURL(), "jobs")
	if held.State != "released" || held.Term == 0 || held.Term != aCmd.term {
		t.Errorf("lease after the hold: %+v, want released in the term a's CMD ran in, %d (renewed, never taken over)", held, aCmd.term)
	}
	c := w.start("c", []string{"LEASEHOLD_TEST_CMD=exit", "LEASEHOLD_TEST_EXIT=0"}, runArgs(w, "c", "--try")...)
	ev, _ := w.waitCmd(30*time.Second, "CMD-START", func(e cmdEvent) bool { return e.id == "c" })
	if ev.term <= held.Term {
		t.Errorf("c's CMD after the hold runs in term %d, want above %d", ev.term, held.Term)
	}
	if code := w.waitExit(c, 10*time.Second); code != 0 {
		t.Errorf("c exited %d, want 0", code)
	}
}

// C6: SIGTERM during the hold releases the lease at once; leasehold exits with CMD's status.
func TestRunHoldAtLeastStopped(t *testing.T) {
	w := newWorld(t)
	a := w.start("a", []string{"LEASEHOLD_TEST_CMD=exit", "LEASEHOLD_TEST_EXIT=7"}, runArgs(w, "a", "--hold-at-least", "1h")...)
	w.logLine(30*time.Second, "leasehold: CMD exited: keeping the lease for --hold-at-least")
	sent := time.Now()
	if err := a.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := w.waitExit(a, 30*time.Second); code != 7 {
		t.Errorf("a exited %d after SIGTERM during the hold, want 7 (its CMD's status)", code)
	}
	// At once, not at the end of the hour: the bound only has to tell the two apart.
	if took := time.Since(sent); took > 10*time.Second {
		t.Errorf("a took %v to exit after SIGTERM during the hold", took)
	}
	if st := statusJSON(t, w.storeURL(), "jobs"); st.State != "released" {
		t.Errorf("lease after SIGTERM during the hold: %q, want released", st.State)
	}
}

// lastLogTime is the time field of p's last JSON log line whose msg is msg.
func lastLogTime(w *world, p *proc, msg string) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i := len(p.output) - 1; i >= 0; i-- {
		if m, ok := jsonLog(p.output[i]); ok && m["msg"] == msg {
			s, _ := m["time"].(string)
			return s
		}
	}
	return ""
}

// probeArgs are run's arguments for an instance expected to give up: its CMD is true, not the
// test binary, which without a helper mode would run the tests.
func probeArgs(w *world, id string, extra ...string) []string {
	args := runArgs(w, id, extra...)
	return append(args[:len(args)-len(helperCmd())], "true")
}

// The flags of C5 and C6 that make no sense are bad input (exit 2, one line, a pointer to --help).
func TestRunTryBadInput(t *testing.T) {
	store := "file://" + t.TempDir() + "/r.json"
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--try", "--wait", "1s"}, "--try and --wait"},
		{[]string{"--wait", "0s"}, "--wait 0s must be positive"},
		{[]string{"--wait", "-1s"}, `for flag --wait: negative duration "-1s"`},
		{[]string{"--hold-at-least", "0s"}, "--hold-at-least 0s must be positive"},
		{[]string{"--hold-at-least", "1m", "--restart"}, "--hold-at-least and --restart"},
	} {
		args := append(append([]string{"run", "--store", store}, tc.args...), "--", "true")
		stdout, stderr, code := runLeasehold(t, args...)
		first, _, _ := strings.Cut(stderr, "\n")
		if code != exitUsage || !strings.Contains(first, tc.want) || !isUsageError(stderr, "leasehold run") || stdout != "" {
			t.Errorf("%v: exit %d, first line %q; want exit 2 and %q, then a pointer to --help", tc.args, code, first, tc.want)
		}
	}
}
