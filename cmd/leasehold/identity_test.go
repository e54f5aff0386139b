//go:build unix

package main

import (
	"encoding/json"
	"strings"
	"syscall"
	"testing"
	"time"
)

const twinWarning = "leasehold: another process uses this instance ID: following its leadership; give each process an ID of its own"

// Two `leasehold run --instance-id web-1` over one file store (E12): the second finds the
// lease held under its ID by another process, follows it, and says so once at WARN; only one
// CMD runs (the helpers' flock proves it). Once the first stops and releases, the second
// takes over with a larger term.
func TestRunSameInstanceID(t *testing.T) {
	w := newWorld(t)
	env := []string{"LEASEHOLD_TEST_CMD=record"}
	p1 := w.start("p1", env, runArgs(w, "web-1")...)
	first, by := w.waitCmd(30*time.Second, "CMD-START", nil)
	if by != p1 || first.id != "web-1" || first.term == 0 {
		t.Fatalf("first CMD by %s: id %q term %d; want p1's, web-1, a term", by.name, first.id, first.term)
	}
	p2 := w.start("p2", env, runArgs(w, "web-1")...)
	var warn map[string]any
	w.waitLine(10*time.Second, "p2's warning", func(l line) bool {
		var m map[string]any
		if l.proc != p2 || json.Unmarshal([]byte(l.text), &m) != nil || m["msg"] != twinWarning {
			return false
		}
		warn = m
		return true
	})
	if warn["level"] != "WARN" || warn["lease"] != "jobs" || warn["instance"] != "web-1" {
		t.Errorf("p2's warning %v; want level WARN, lease jobs, instance web-1", warn)
	}

	// For longer than a lease p2 follows: no CMD of its own (a second CMD would print
	// CMD-START, or CMD-OVERLAP on the helpers' flock).
	quiet := time.NewTimer(2 * (testL + testR))
	for waiting := true; waiting; {
		select {
		case l := <-w.lines:
			if strings.HasPrefix(l.text, "CMD-START") || strings.HasPrefix(l.text, "CMD-OVERLAP") {
				t.Fatalf("%s: a second CMD while p1 leads: %s", l.proc.name, l.text)
			}
		case <-quiet.C:
			waiting = false
		}
	}

	if err := p1.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	second, by := w.waitCmd(3*(testL+testR), "CMD-START", nil)
	if by != p2 || second.term <= first.term {
		t.Fatalf("next CMD by %s with term %d; want p2's, with a term above %d", by.name, second.term, first.term)
	}
	if code := w.waitExit(p1, 10*time.Second); code != 0 {
		t.Errorf("p1 stopped by SIGTERM exited %d, want 0", code)
	}
	if err := p2.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := w.waitExit(p2, 10*time.Second); code != 0 {
		t.Errorf("p2 stopped by SIGTERM exited %d, want 0", code)
	}
	p2.mu.Lock()
	n := 0
	for _, s := range p2.output {
		if strings.Contains(s, twinWarning) {
			n++
		}
	}
	p2.mu.Unlock()
	if n != 1 {
		t.Errorf("p2 logged the warning %d times; want once", n)
	}
}
