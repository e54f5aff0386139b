//go:build unix

package main

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/leasehold/leasehold/internal/cloudemu"
	"github.com/leasehold/leasehold/internal/fencing"
)

// cloudStore is a cloud store under test: the emulator it runs on, and setup, which prepares
// a bucket, table or container on it and returns the store's URL, the environment the command
// needs (the emulator's credentials, never in the URL), and put, which writes raw bytes as the
// record of a key, bypassing the store.
type cloudStore struct {
	name         string
	kind         cloudemu.Kind
	lease, renew string // L and R, when the store needs others than the tests' (testLs, testRs)
	setup        func(t *testing.T, e *cloudemu.Emulator) (url string, env map[string]string, put func(t *testing.T, key string, raw []byte))
}

// cloudStores are filled by the files of the cloud backends' tests (cloud_NAME_test.go).
var cloudStores []cloudStore

// Over each cloud store, on its emulator: run elects a leader, leader and status show it,
// resign hands over to the follower named, and repair replaces a record that is not a JSON
// object, after which run leads again in a larger term.
func TestCloudStores(t *testing.T) {
	for _, cs := range cloudStores {
		t.Run(cs.name, func(t *testing.T) {
			e := cloudemu.StartT(t, cs.kind)
			url, env, put := cs.setup(t, e)
			for k, v := range env {
				t.Setenv(k, v)
			}
			ls, rs := testLs, testRs
			if cs.lease != "" {
				ls, rs = cs.lease, cs.renew
			}
			storeCommands(t, url, ls, rs, put)
		})
	}
}

// storeCommands runs the command over a store at url with L = ls and R = rs: run elects a
// leader, leader and status show it, resign hands over to the follower named, and repair
// replaces a record that is not a JSON object (written by put, bypassing the store), after
// which run leads again in a larger term.
func storeCommands(t *testing.T, url, ls, rs string, put func(t *testing.T, key string, raw []byte)) {
	w := newWorld(t)
	run := func(id string, extra ...string) *proc {
		args := append([]string{"run", "--store", url, "--lease", "jobs", "--lease-duration", ls,
			"--renew-interval", rs, "--instance-id", id, "--log-format", "json"}, extra...)
		return w.start(id, []string{"LEASEHOLD_TEST_CMD=record"}, append(append(args, "--"), helperCmd()...)...)
	}
	a := run("a", "--advertise", "http://a:8080")
	first, _ := w.waitCmd(60*time.Second, "CMD-START", func(ev cmdEvent) bool { return ev.id == "a" })

	out, errOut, code := runLeasehold(t, "leader", "--store", url, "--lease", "jobs")
	if code != exitOK || out != "http://a:8080\n" {
		t.Fatalf("leader: exit %d, stdout %q, stderr %q; want 0 and a's value", code, out, errOut)
	}
	out, errOut, code = runLeasehold(t, "status", "--store", url, "--lease", "jobs")
	if code != exitOK || !strings.Contains(out, "a") {
		t.Fatalf("status: exit %d, stdout %q, stderr %q; want 0 naming a", code, out, errOut)
	}

	b := run("b")
	w.waitLine(60*time.Second, "b observing a", func(l line) bool {
		m, ok := jsonLog(l.text)
		return ok && l.proc == b && m["msg"] == "leasehold: observed leader" && m["holder"] == "a"
	})
	if out, errOut, code := runLeasehold(t, "resign", "--store", url, "--lease", "jobs", "--to", "b"); code != exitOK {
		t.Fatalf("resign --to b: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	next, _ := w.waitCmd(60*time.Second, "CMD-START", func(ev cmdEvent) bool { return ev.id == "b" })
	if next.term <= first.term {
		t.Fatalf("b leads in term %d, not above a's %d", next.term, first.term)
	}
	for _, p := range []*proc{a, b} {
		_ = p.cmd.Process.Signal(os.Interrupt)
		if code := w.waitExit(p, 30*time.Second); code != 0 {
			t.Fatalf("%s exited %d after SIGINT, want 0", p.name, code)
		}
	}

	// Bytes that are not JSON hold no term: repair writes the clock floor (C4), whole seconds,
	// which is above b's term only once the second that term was given in has passed (E11's
	// limit: handovers faster than one a second just before the loss). Over a fast store,
	// a, b and the resign can all come within one second.
	if floor := fencing.Floor(time.Now()); next.term > floor+2 {
		t.Fatalf("b's term %d is above the clock floor %d by more than the handovers so far", next.term, floor)
	}
	for fencing.Floor(time.Now()) <= next.term {
		time.Sleep(50 * time.Millisecond)
	}
	put(t, storeDocs.Key("jobs"), []byte("garbage{{{"))
	out, errOut, code = runLeasehold(t, "repair", "--store", url, "--lease", "jobs", "--force")
	if code != exitOK || newTermLine.FindStringSubmatch(out) == nil {
		t.Fatalf("repair of a record that is not JSON: exit %d, stdout %q, stderr %q; want 0 and a new term", code, out, errOut)
	}
	run("c")
	third, _ := w.waitCmd(60*time.Second, "CMD-START", func(ev cmdEvent) bool { return ev.id == "c" })
	if third.term <= next.term {
		t.Fatalf("after repair, c leads in term %d, not above %d", third.term, next.term)
	}
}
