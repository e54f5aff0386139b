//go:build unix

package main

import (
	"encoding/json"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"
)

// O1: status --watch, text and --json, begun before the store's file exists: it prints the
// lease as first read (missing), then each change of holder, term or resign once (a leads in
// term 1, releases it, b leads in term 2, is asked to hand over to c, releases it for c) and
// nothing for the renewals between them; SIGINT and SIGTERM end it with exit 0.
func TestStatusWatch(t *testing.T) {
	w := newWorld(t)
	watchArgs := []string{"status", "--watch", "--store", w.storeURL(), "--lease", "jobs", "--interval", "100ms"}
	text := w.start("watch", nil, watchArgs...)
	js := w.start("watch-json", nil, append(watchArgs, "--json")...)
	// both waits for a line of each watcher that satisfies ok: the lines of both arrive on one
	// channel, in any order.
	both := func(what string, ok func(line) bool) {
		t.Helper()
		seen := map[*proc]bool{}
		w.waitLine(30*time.Second, what+" from both watchers", func(l line) bool {
			if (l.proc == text || l.proc == js) && ok(l) {
				seen[l.proc] = true
			}
			return len(seen) == 2
		})
	}
	says := func(state, holder string, term uint64) func(line) bool {
		return func(l line) bool {
			if l.proc == js {
				var wl watchLine
				return json.Unmarshal([]byte(l.text), &wl) == nil && wl.State == state && wl.Holder == holder && wl.Term == term
			}
			return strings.HasSuffix(l.text, " "+changeText(leaseStatus{State: state, Holder: holder, Term: term, Exists: state != "missing"}))
		}
	}
	both("missing", says("missing", "", 0))

	a := w.start("a", []string{"LEASEHOLD_TEST_CMD=record"}, runArgs(w, "a", "--log-level", "debug")...)
	both("a holding term 1", says("held", "a", 1))
	for range 3 {
		w.logLine(10*time.Second, "leasehold: renewed")
	}
	if err := a.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	both("the release of term 1", says("released", "", 1))
	if code := w.waitExit(a, 10*time.Second); code != 0 {
		t.Errorf("a exited %d, want 0", code)
	}
	b := w.start("b", []string{"LEASEHOLD_TEST_CMD=record"}, runArgs(w, "b")...)
	both("b holding term 2", says("held", "b", 2))
	// A resign request changes neither holder nor term: it is a line of its own, and so is the
	// release it leads to, reserved for the instance it names.
	r := w.start("resign", nil, "resign", "--store", w.storeURL(), "--lease", "jobs", "--to", "c")
	if code := w.waitExit(r, 30*time.Second); code != 0 {
		t.Fatalf("resign exited %d; output %q", code, r.output)
	}
	both("the release of term 2 reserved for c", func(l line) bool {
		if l.proc == js {
			var wl watchLine
			return json.Unmarshal([]byte(l.text), &wl) == nil && wl.State == "released" && wl.NextHolder == "c"
		}
		return strings.HasSuffix(l.text, " released term=2 next=c")
	})

	if err := text.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	if err := js.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	for _, p := range []*proc{text, js} {
		if code := w.waitExit(p, 10*time.Second); code != 0 {
			t.Errorf("%s exited %d after SIGINT or SIGTERM, want 0", p.name, code)
		}
	}
	want := []string{"missing", "held holder=a term=1", "released term=1", "held holder=b term=2",
		"held holder=b term=2 resign-requested next=c", "released term=2 next=c"}
	var gotText, gotJSON []string
	text.mu.Lock()
	for _, o := range text.output {
		at, rest, _ := strings.Cut(o, " ")
		if _, err := time.Parse("2006-01-02T15:04:05.000Z07:00", at); err != nil {
			t.Errorf("watch printed %q: want a time, then the change", o)
			continue
		}
		gotText = append(gotText, rest)
	}
	t.Logf("status --watch printed:\n%s", strings.Join(text.output, "\n"))
	text.mu.Unlock()
	js.mu.Lock()
	for _, o := range js.output {
		var wl watchLine
		if err := json.Unmarshal([]byte(o), &wl); err != nil || wl.ObservedAt.IsZero() || wl.Lease != "jobs" {
			t.Errorf("watch --json printed %q (%v): want a JSON object with observedAt and the lease", o, err)
			continue
		}
		gotJSON = append(gotJSON, changeText(wl.leaseStatus))
	}
	js.mu.Unlock()
	if !reflect.DeepEqual(gotText, want) {
		t.Errorf("status --watch printed %q, want %q", gotText, want)
	}
	if !reflect.DeepEqual(gotJSON, want) {
		t.Errorf("status --watch --json printed %q, want %q", gotJSON, want)
	}
	if err := b.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	w.waitExit(b, 10*time.Second)
}

// changeText is what status --watch prints after the time for a change.
func changeText(st leaseStatus) string {
	var b strings.Builder
	_ = printChange(&b, time.Time{}, st)
	_, rest, _ := strings.Cut(strings.TrimSuffix(b.String(), "\n"), " ")
	return rest
}

// --interval is --watch's; it must be positive.
func TestStatusWatchBadInput(t *testing.T) {
	store := "file://" + t.TempDir() + "/r.json"
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--interval", "1s"}, "give --watch"},
		{[]string{"--watch", "--interval", "0s"}, "--interval 0s must be positive"},
	} {
		stdout, stderr, code := runLeasehold(t, append([]string{"status", "--store", store}, tc.args...)...)
		first, _, _ := strings.Cut(stderr, "\n")
		if code != exitUsage || !strings.Contains(first, tc.want) || !isUsageError(stderr, "leasehold status") || stdout != "" {
			t.Errorf("%v: exit %d, first line %q; want exit 2 and %q, then a pointer to --help", tc.args, code, first, tc.want)
		}
	}
}
