//go:build unix

package main

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// O1: status --watch, text and --json, begun before the store's file exists: it prints the
// lease as first read (missing), then each change of holder, term or resign once (a leads,
// releases it, b leads in a larger term, is asked to hand over to c, releases it for c) and
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
	// says matches a change to state and holder; its term is none (term nil), or *term, which
	// the first line that matches sets when it is 0: terms are fencing tokens from the wall
	// clock (E11), known only once read.
	says := func(state, holder string, term *uint64) func(line) bool {
		return func(l line) bool {
			var got uint64
			if l.proc == js {
				var wl watchLine
				if json.Unmarshal([]byte(l.text), &wl) != nil || wl.State != state || wl.Holder != holder {
					return false
				}
				got = wl.Term
			} else {
				got = textTerm(l.text)
				if !strings.HasSuffix(l.text, " "+changeText(leaseStatus{State: state, Holder: holder, Term: got, Exists: state != "missing"})) {
					return false
				}
			}
			if term == nil {
				return got == 0
			}
			if *term == 0 {
				*term = got
			}
			return got != 0 && got == *term
		}
	}
	var ta, tb uint64
	both("missing", says("missing", "", nil))

	a := w.start("a", []string{"LEASEHOLD_TEST_CMD=record"}, runArgs(w, "a", "--log-level", "debug")...)
	both("a holding its term", says("held", "a", &ta))
	for range 3 {
		w.logLine(10*time.Second, "leasehold: renewed")
	}
	if err := a.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	both("the release of a's term", says("released", "", &ta))
	if code := w.waitExit(a, 10*time.Second); code != 0 {
		t.Errorf("a exited %d, want 0", code)
	}
	b := w.start("b", []string{"LEASEHOLD_TEST_CMD=record"}, runArgs(w, "b")...)
	both("b holding its term", says("held", "b", &tb))
	if tb <= ta {
		t.Fatalf("b holds term %d, not above a's %d", tb, ta)
	}
	// A resign request changes neither holder nor term: it is a line of its own, and so is the
	// release it leads to, reserved for the instance it names.
	r := w.start("resign", nil, "resign", "--store", w.storeURL(), "--lease", "jobs", "--to", "c")
	if code := w.waitExit(r, 30*time.Second); code != 0 {
		t.Fatalf("resign exited %d; output %q", code, r.output)
	}
	both("the release of b's term reserved for c", func(l line) bool {
		if l.proc == js {
			var wl watchLine
			return json.Unmarshal([]byte(l.text), &wl) == nil && wl.State == "released" && wl.NextHolder == "c"
		}
		return strings.HasSuffix(l.text, fmt.Sprintf(" released term=%d next=c", tb))
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
	want := []string{"missing", fmt.Sprintf("held holder=a term=%d", ta), fmt.Sprintf("released term=%d", ta), fmt.Sprintf("held holder=b term=%d", tb),
		fmt.Sprintf("held holder=b term=%d resign-requested next=c", tb), fmt.Sprintf("released term=%d next=c", tb)}
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

// textTerm is the term= of a line of status --watch, 0 when it has none.
func textTerm(text string) uint64 {
	for _, f := range strings.Fields(text) {
		if v, ok := strings.CutPrefix(f, "term="); ok {
			t, _ := strconv.ParseUint(v, 10, 64)
			return t
		}
	}
	return 0
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
