//go:build unix

package main

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// resignArgs is a leasehold resign command line over the test's store and lease.
func resignArgs(w *world, extra ...string) []string {
	return append([]string{"resign", "--store", w.storeURL(), "--lease", "jobs"}, extra...)
}

// R1-R3 through the command: a leads, b and c follow; resign --to c prints one line and exits
// 0; status shows the request; a's CMD stops, then c's starts, in a larger term, and b's never does.
func TestResignHandsOver(t *testing.T) {
	w := newWorld(t)
	env := []string{"LEASEHOLD_TEST_CMD=record"}
	a := w.start("a", env, runArgs(w, "a")...)
	first, _ := w.waitCmd(30*time.Second, "CMD-START", func(ev cmdEvent) bool { return ev.id == "a" })
	for _, id := range []string{"b", "c"} {
		p := w.start(id, env, runArgs(w, id)...)
		w.waitLine(30*time.Second, id+" observing a", func(l line) bool {
			m, ok := jsonLog(l.text)
			return ok && l.proc == p && m["msg"] == "leasehold: observed leader" && m["holder"] == "a"
		})
	}
	r := w.start("resign", nil, resignArgs(w, "--to", "c")...)
	if code := w.waitExit(r, 30*time.Second); code != 0 {
		t.Fatalf("resign exited %d; output %q", code, r.output)
	}
	if want := fmt.Sprintf("lease jobs: asked a (term %d) to step down and hand over to c", first.term); len(r.output) != 1 || r.output[0] != want {
		t.Fatalf("resign printed %q; want one line %q", r.output, want)
	}
	stop, _ := w.waitCmd(30*time.Second, "CMD-STOP", nil)
	if stop.id != "a" {
		t.Fatalf("CMD-STOP of %s; want a's", stop.id)
	}
	// c's CMD starts, and a logs its release, then sees c lead (in whichever order the lines
	// of the two processes arrive).
	var start cmdEvent
	var started, released, observed bool
	w.waitLine(30*time.Second, "c's CMD-START, a's release and a observing c", func(l line) bool {
		if e, ok := parseCmdEvent(l.text); ok && e.kind == "CMD-START" && !started {
			start, started = e, true
		}
		if m, ok := jsonLog(l.text); ok && l.proc == a {
			released = released || m["msg"] == "leasehold: resigned: released the lease to the next holder"
			observed = observed || released && m["msg"] == "leasehold: observed leader" && m["holder"] == "c"
		}
		return started && observed
	})
	if start.id != "c" || start.term <= first.term {
		t.Fatalf("next CMD-START: %+v; want c's, in a term above %d", start, first.term)
	}
	if !start.at.After(stop.at) {
		t.Fatalf("c's CMD started at %v, before a's stopped at %v", start.at, stop.at)
	}
	// The step-down is no failure of the store: a logs no recovery from it.
	for _, m := range a.jsonLines() {
		if m["msg"] == "leasehold: attempts succeed again" {
			t.Errorf("a logged %s after stepping down: a resign is not a failed attempt of the store", mustJSON(m))
		}
	}
}

// R1 through the command: a lease nobody holds exits 3 and writes nothing; --to the holder
// itself exits 1; bad input exits 2; status shows a pending request and a reserved release.
func TestResignRefusalsAndStatus(t *testing.T) {
	w := newWorld(t)
	r := w.start("resign-missing", nil, resignArgs(w)...)
	if code := w.waitExit(r, 30*time.Second); code != exitNoLease || !strings.Contains(strings.Join(r.output, "\n"), "nobody holds it") {
		t.Fatalf("resign of a missing lease: exit %d, %q; want 3, nobody holds it", code, r.output)
	}
	bad := w.start("resign-bad", nil, resignArgs(w, "extra")...)
	if code := w.waitExit(bad, 30*time.Second); code != exitUsage {
		t.Fatalf("resign with an argument: exit %d; want 2", code)
	}
	w.start("a", []string{"LEASEHOLD_TEST_CMD=record"}, runArgs(w, "a", "--lease-duration", "30s", "--renew-interval", "10s")...)
	w.waitCmd(30*time.Second, "CMD-START", nil)
	self := w.start("resign-self", nil, resignArgs(w, "--to", "a")...)
	if code := w.waitExit(self, 30*time.Second); code != exitFailure || !strings.Contains(strings.Join(self.output, "\n"), "already holds") {
		t.Fatalf("resign --to the holder: exit %d, %q; want 1, already holds", code, self.output)
	}
	// The leader renews every 10s: the request is still pending when status reads it.
	ok := w.start("resign", nil, resignArgs(w, "--to", "ghost")...)
	if code := w.waitExit(ok, 30*time.Second); code != 0 {
		t.Fatalf("resign: exit %d, %q", code, ok.output)
	}
	st := w.start("status", nil, "status", "--store", w.storeURL(), "--lease", "jobs")
	w.waitExit(st, 30*time.Second)
	out := strings.Join(st.output, "\n")
	if !strings.Contains(out, "resign:") || !strings.Contains(out, "to hand over to ghost") {
		t.Fatalf("status with a pending resign:\n%s", out)
	}
}
