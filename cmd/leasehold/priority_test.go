//go:build unix

package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// healthFile is a --health-cmd that passes while the file name exists in the test's directory.
func healthFile(w *world, name string) string {
	return "test -e '" + filepath.Join(w.dir, name) + "'"
}

// isLog reports whether l is a JSON log line of p whose msg is msg, and returns its attributes.
func isLog(l line, p *proc, msg string) (map[string]any, bool) {
	m, ok := jsonLog(l.text)
	return m, ok && l.proc == p && m["msg"] == msg
}

// Q1-Q4 through the command: a leader of priority 0 runs CMD; an instance of priority 5 with a
// short stability window joins and asks it to hand over (status shows the pending preemption,
// its next holder and their priority, while the leader's leasehold is stopped by SIGSTOP so
// that it cannot act on it yet); once resumed, the leader's CMD ends before the new leader's
// starts (the helpers' flock would report two at once), and status shows priority 5.
func TestRunPriorityTakesOver(t *testing.T) {
	w := newWorld(t)
	env := []string{"LEASEHOLD_TEST_CMD=record"}
	// A long lease for a: it must outlast the pause below by far, or b would take it over as
	// expired while a's CMD still runs.
	a := w.start("a", env, runArgs(w, "a", "--lease-duration", "30s", "--renew-interval", "10s")...)
	first, _ := w.waitCmd(30*time.Second, "CMD-START", func(e cmdEvent) bool { return e.id == "a" })
	if err := a.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	resumed := false
	resume := func() {
		if !resumed {
			resumed = true
			_ = a.cmd.Process.Signal(syscall.SIGCONT)
		}
	}
	defer resume()
	b := w.start("b", env, runArgs(w, "b", "--priority", "5", "--stability-window", "1s")...)
	w.waitLine(30*time.Second, "b asking a to hand over", func(l line) bool {
		m, ok := isLog(l, b, "leasehold: asked the holder to hand over")
		return ok && m["holder"] == "a" && jsonInt(m["priority"]) == 5
	})
	st := statusJSON(t, w.storeURL(), "jobs")
	if st.Holder != "a" || st.Priority != 0 || st.ResignRequested == nil || !st.Preempt || st.NextHolder != "b" ||
		st.NextPriority == nil || *st.NextPriority != 5 {
		t.Errorf("status --json with b's request pending: %s; want holder a of priority 0, preempt by b of priority 5", mustJSON(st))
	}
	out, _, _ := runLeasehold(t, "status", "--store", w.storeURL(), "--lease", "jobs")
	if !regexp.MustCompile(`\nresign: +requested .*, to hand over to b\npreempt: +by b, of priority 5\n`).MatchString(out) ||
		strings.Contains(out, "\npriority:") {
		t.Errorf("status with b's request pending:\n%s", out)
	}
	resume()

	stop, _ := w.waitCmd(30*time.Second, "CMD-STOP", nil)
	if stop.id != "a" {
		t.Fatalf("CMD-STOP of %s; want a's", stop.id)
	}
	start, _ := w.waitCmd(30*time.Second, "CMD-START", nil)
	if start.id != "b" || start.term <= first.term {
		t.Fatalf("next CMD-START: %+v; want b's, in a term above %d", start, first.term)
	}
	if !start.at.After(stop.at) {
		t.Fatalf("b's CMD started at %v, before a's stopped at %v", start.at, stop.at)
	}
	st = statusJSON(t, w.storeURL(), "jobs")
	if st.Holder != "b" || st.Priority != 5 || st.Unhealthy || st.Preempt {
		t.Errorf("status --json once b leads: %s; want holder b of priority 5", mustJSON(st))
	}
	out, _, _ = runLeasehold(t, "status", "--store", w.storeURL(), "--lease", "jobs")
	if !regexp.MustCompile(`\nholder: +b\npriority: +5\nterm: `).MatchString(out) {
		t.Errorf("status once b leads does not show priority 5:\n%s", out)
	}
	watch := w.start("watch", nil, "status", "--watch", "--interval", "100ms", "--store", w.storeURL(), "--lease", "jobs")
	w.waitLine(10*time.Second, "status --watch line with the priority", func(l line) bool {
		return l.proc == watch && strings.Contains(l.text, " held holder=b term=") && strings.HasSuffix(l.text, " priority=5")
	})
	_ = watch.cmd.Process.Signal(syscall.SIGTERM)
	w.waitExit(watch, 10*time.Second)
}

// U1-U2 through the command: the leader's check starts failing (the file it tests is
// removed); after --health-failures checks it reports itself unhealthy, the healthy instance
// asks, and it hands over: its CMD ends before the other's starts. While its check fails it
// does not take the lease back: it stays a follower for several more checks.
func TestRunHealthHandsOver(t *testing.T) {
	w := newWorld(t)
	env := []string{"LEASEHOLD_TEST_CMD=record"}
	okFile := filepath.Join(w.dir, "a-ok")
	if err := os.WriteFile(okFile, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	a := w.start("a", env, runArgs(w, "a", "--health-cmd", healthFile(w, "a-ok"), "--health-failures", "2")...)
	first, _ := w.waitCmd(30*time.Second, "CMD-START", func(e cmdEvent) bool { return e.id == "a" })
	b := w.start("b", env, runArgs(w, "b", "--health-cmd", "true")...)
	passes, observes := false, false
	w.waitLine(30*time.Second, "b passing its check and observing a", func(l line) bool {
		_, p := isLog(l, b, "leasehold: health check passes")
		m, o := isLog(l, b, "leasehold: observed leader")
		passes, observes = passes || p, observes || o && m["holder"] == "a"
		return passes && observes
	})
	if err := os.Remove(okFile); err != nil {
		t.Fatal(err)
	}
	stop, _ := w.waitCmd(30*time.Second, "CMD-STOP", nil)
	if stop.id != "a" {
		t.Fatalf("CMD-STOP of %s; want a's", stop.id)
	}
	start, _ := w.waitCmd(30*time.Second, "CMD-START", nil)
	if start.id != "b" || start.term <= first.term || !start.at.After(stop.at) {
		t.Fatalf("next CMD-START: %+v; want b's, in a term above %d, after a's CMD stopped at %v", start, first.term, stop.at)
	}
	var failures int
	for _, m := range a.jsonLines() {
		if m["msg"] == "leasehold: health check failed: unhealthy, handing over to a healthy candidate" {
			failures = jsonInt(m["failures"])
		}
	}
	if failures != 2 {
		t.Errorf("a handed over without logging itself unhealthy after 2 failed checks (logged %d)", failures)
	}
	// a follows b while its check fails: for longer than a lease and a renew interval (8 more
	// checks, one every R), no CMD starts and nothing stops.
	var last int
	w.waitLine(60*time.Second, "8 more failed checks of a", func(l line) bool {
		if _, ok := parseCmdEvent(l.text); ok {
			t.Fatalf("%s while a's check fails and b leads: %s", l.proc.name, l.text)
		}
		if m, ok := isLog(l, a, "leasehold: health check failed"); ok {
			last = jsonInt(m["failures"])
		}
		return last >= 10
	})
	if st := statusJSON(t, w.storeURL(), "jobs"); st.Holder != "b" || st.Unhealthy || st.Term != start.term {
		t.Errorf("status --json while a fails: %s; want b, healthy, term %d", mustJSON(st), start.term)
	}
}

// U1-U3 through the command: when every instance fails its check, the leader keeps leading
// and its CMD runs on; status shows it unhealthy.
func TestRunAllUnhealthy(t *testing.T) {
	w := newWorld(t)
	env := []string{"LEASEHOLD_TEST_CMD=record"}
	// Neither file exists: both checks fail from the start. a takes the missing lease as a
	// last resort.
	a := w.start("a", env, runArgs(w, "a", "--health-cmd", healthFile(w, "a-ok"))...)
	first, _ := w.waitCmd(30*time.Second, "CMD-START", func(e cmdEvent) bool { return e.id == "a" })
	b := w.start("b", env, runArgs(w, "b", "--health-cmd", healthFile(w, "b-ok"))...)
	// a may have become unhealthy (3 failed checks, the default) before it took the lease:
	// its later failed checks say it still is.
	unhealthy, observes := false, false
	w.waitLine(30*time.Second, "a unhealthy and b observing a", func(l line) bool {
		if _, ok := parseCmdEvent(l.text); ok {
			t.Fatalf("%s: %s; want a's CMD to run on", l.proc.name, l.text)
		}
		m, u := isLog(l, a, "leasehold: health check failed")
		if !u {
			m, u = isLog(l, a, "leasehold: health check failed: unhealthy, handing over to a healthy candidate")
		}
		unhealthy = unhealthy || u && jsonInt(m["failures"]) >= 3
		m, o := isLog(l, b, "leasehold: observed leader")
		observes = observes || o && m["holder"] == "a"
		return unhealthy && observes
	})
	// For longer than a lease and a renew interval after that (8 more failed checks of b, one
	// every R), nothing stops and nothing starts.
	var last, from int
	w.waitLine(60*time.Second, "8 more failed checks of b", func(l line) bool {
		if _, ok := parseCmdEvent(l.text); ok {
			t.Fatalf("%s while every check fails: %s; want a's CMD to run on", l.proc.name, l.text)
		}
		if m, ok := isLog(l, b, "leasehold: health check failed"); ok {
			last = jsonInt(m["failures"])
			if from == 0 {
				from = last
			}
		}
		return from > 0 && last >= from+8
	})
	st := statusJSON(t, w.storeURL(), "jobs")
	if st.Holder != "a" || st.Term != first.term || !st.Unhealthy || st.ResignRequested != nil {
		t.Errorf("status --json: %s; want a, term %d, unhealthy, no request", mustJSON(st), first.term)
	}
	out, _, _ := runLeasehold(t, "status", "--store", w.storeURL(), "--lease", "jobs")
	if !regexp.MustCompile(`\nholder: +a\npriority: +0, unhealthy \(`).MatchString(out) {
		t.Errorf("status does not show a unhealthy:\n%s", out)
	}
	for _, p := range []*proc{a, b} {
		for _, m := range p.jsonLines() {
			if m["msg"] == "leasehold: stopped leading" || m["msg"] == "leasehold: asked the holder to hand over" {
				t.Errorf("%s logged %s while every check fails", p.name, mustJSON(m))
			}
		}
	}
}

// The priority and health flags' bad values are bad input (exit 2) naming the flag, refused
// before anything is written; with --config, a flag at fault is named as the flag and a
// parameter as the parameter.
func TestRunPriorityHealthFlagErrors(t *testing.T) {
	w := newWorld(t)
	registry := filepath.Join(w.dir, "app-registry.json")
	withCheck := writeConfig(t, w.dir, "check.json", `
		"Registry": {"type": "Webda/FileStore", "path": "`+registry+`"},
		"cluster": {"type": "Webda/StoreClusterService", "leaseDuration": 2000, "renewInterval": 500, "healthCommand": "true"}`)
	noCheck := writeConfig(t, w.dir, "nocheck.json", `
		"Registry": {"type": "Webda/FileStore", "path": "`+registry+`"},
		"cluster": {"type": "Webda/StoreClusterService", "leaseDuration": 2000, "renewInterval": 500}`)
	badParam := writeConfig(t, w.dir, "badparam.json", `
		"Registry": {"type": "Webda/FileStore", "path": "`+registry+`"},
		"cluster": {"type": "Webda/StoreClusterService", "leaseDuration": 2000, "renewInterval": 500, "healthCommand": "true", "healthTimeout": "600ms"}`)
	store := []string{"run", "--store", w.storeURL()}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--priority", "2147483648"}, "--priority 2147483648 is outside the 32-bit range"},
		{[]string{"--priority", "-2147483649"}, "--priority -2147483649 is outside the 32-bit range"},
		{[]string{"--priority", "high"}, `invalid value "high" for flag --priority`},
		{[]string{"--stability-window", "-1s"}, `invalid value "-1s" for flag --stability-window: negative duration`},
		{[]string{"--stability-window", "0"}, "--stability-window 0s must be positive"},
		{[]string{"--health-cmd", "true", "--health-url", "http://127.0.0.1:8080/healthz"}, "--health-cmd and --health-url cannot be used together"},
		{[]string{"--health-cmd", " "}, "--health-cmd is empty"},
		{[]string{"--health-url", "ftp://127.0.0.1/healthz"}, "--health-url ftp://127.0.0.1/healthz: the scheme must be http or https"},
		{[]string{"--health-url", "http://user:s3cret@/healthz"}, "--health-url http://user:xxxxx@/healthz: no host"},
		{[]string{"--health-url", "127.0.0.1:8080"}, "--health-url"},
		{[]string{"--health-cmd", "true", "--health-failures", "-1"}, "--health-failures -1 must be at least 1"},
		{[]string{"--health-cmd", "true", "--health-failures", "0"}, "--health-failures 0 must be at least 1"},
		{[]string{"--health-cmd", "true", "--health-timeout", "-1s"}, `invalid value "-1s" for flag --health-timeout`},
		{[]string{"--health-cmd", "true", "--renew-interval", "500ms", "--health-timeout", "600ms"}, "--health-timeout 600ms exceeds --renew-interval 500ms"},
		{[]string{"--health-cmd", "true", "--health-timeout", "6s"}, "--health-timeout 6s exceeds --renew-interval 5s"},
		{[]string{"--health-timeout", "100ms"}, "--health-timeout needs a health check: give --health-cmd or --health-url"},
		{[]string{"--health-failures", "2"}, "--health-failures needs a health check: give --health-cmd or --health-url"},
		{[]string{"--holders", "2", "--priority", "3"}, "--priority cannot be used with --holders 2"},
	} {
		args := append(append(append([]string(nil), store...), tc.args...), "--", "true")
		out, errOut, code := runLeasehold(t, args...)
		lines := strings.Split(strings.TrimSpace(errOut), "\n")
		if code != exitUsage || out != "" || !strings.Contains(lines[0], tc.want) || strings.Contains(errOut, "s3cret") || strings.Contains(errOut, "panic") {
			t.Errorf("leasehold %q: exit %d, stdout %q, stderr %q; want exit 2 and %q", args, code, out, errOut, tc.want)
		}
	}
	if _, err := os.Stat(filepath.Join(w.dir, "registry.json")); err == nil {
		t.Error("a refused run wrote the store")
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--config", withCheck, "--health-timeout", "600ms"}, "--health-timeout 600ms exceeds the renew interval of --config " + withCheck + " 500ms"},
		{[]string{"--config", noCheck, "--health-failures", "2"}, "--health-failures needs a health check"},
		{[]string{"--config", noCheck, "--holders", "2", "--health-cmd", "true"}, "--health-cmd cannot be used with --holders 2"},
		{[]string{"--config", badParam}, `--config ` + badParam + `: cluster service "cluster": parameter "healthTimeout" 600ms exceeds the renew interval 500ms`},
		{[]string{"--config", withCheck, "--health-url", "http://127.0.0.1:8080/healthz", "--health-cmd", "true"}, "--health-cmd and --health-url cannot be used together"},
	} {
		args := append(append([]string{"run"}, tc.args...), "--", "true")
		out, errOut, code := runLeasehold(t, args...)
		lines := strings.Split(strings.TrimSpace(errOut), "\n")
		if code != exitUsage || out != "" || !strings.Contains(lines[0], tc.want) {
			t.Errorf("leasehold %q: exit %d, stdout %q, stderr %q; want exit 2 and %q", args, code, out, errOut, tc.want)
		}
	}
	if _, err := os.Stat(registry); err == nil {
		t.Error("a refused run wrote the configuration's Registry")
	}
	out, _, code := runLeasehold(t, "run", "--help")
	for _, flag := range []string{"--priority N", "--stability-window D", "--health-cmd CMD", "--health-url HTTP-URL", "--health-timeout D", "--health-failures N"} {
		if code != exitOK || !strings.Contains(out, "\n  "+flag+" ") {
			t.Errorf("run --help (exit %d) does not list %s", code, flag)
		}
	}
}

// The cluster service's parameter priority is written in the record, and run --priority
// overrides it, as the command line overrides the service's parameters; a health check given
// on the command line replaces the configuration's.
func TestRunPriorityConfig(t *testing.T) {
	w := newWorld(t)
	registry := filepath.Join(w.dir, "app-registry.json")
	cfg := writeConfig(t, w.dir, "app.json", `
		"Registry": {"type": "Webda/FileStore", "path": "`+registry+`"},
		"cluster": {"type": "Webda/StoreClusterService", "leaseName": "api", "leaseDuration": 2000, "renewInterval": 500,
			"priority": 3, "stabilityWindow": "5s", "healthUrl": "http://127.0.0.1:1/healthz", "healthFailures": 2}`)
	for _, tc := range []struct {
		id    string
		flags []string
		want  int
	}{
		{"from-flag", []string{"--priority", "9", "--health-cmd", "true"}, 9},
		{"from-config", nil, 3},
	} {
		args := append(append([]string{"run", "--config", cfg, "--instance-id", tc.id, "--log-format", "json"}, tc.flags...), append([]string{"--"}, helperCmd()...)...)
		p := w.start(tc.id, []string{"LEASEHOLD_TEST_CMD=record"}, args...)
		w.waitCmd(30*time.Second, "CMD-START", func(e cmdEvent) bool { return e.id == tc.id })
		out, errOut, code := runLeasehold(t, "status", "--config", cfg, "--json")
		if code != exitOK || !strings.Contains(out, `"holder": "`+tc.id+`"`) || !regexp.MustCompile(`"priority": `+strconv.Itoa(tc.want)+`,`).MatchString(out) {
			t.Errorf("status --config with run %q: exit %d, stdout %s, stderr %q; want %s of priority %d", tc.flags, code, out, errOut, tc.id, tc.want)
		}
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		w.waitExit(p, 10*time.Second)
		// The configuration's URL answers nothing: its check fails, and says so. With
		// --health-cmd true, nothing fails.
		failed := false
		for _, m := range p.jsonLines() {
			failed = failed || m["msg"] == "leasehold: health check failed"
		}
		if failed != (tc.flags == nil) {
			t.Errorf("run %q: a failed health check logged: %v; want %v", tc.flags, failed, tc.flags == nil)
		}
	}
}
