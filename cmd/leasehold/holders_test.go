//go:build unix

package main

import (
	"strings"
	"syscall"
	"testing"
	"time"
)

// H1-H3 through the command: three leasehold run --holders 2: two CMDs run, one per slot
// (LEASEHOLD_SLOT 0 and 1, each flocking its slot's file: two CMDs of one slot would
// overlap), the third instance runs none; SIGTERM to one of the two leaders hands its slot to
// the third, whose CMD starts with that slot.
func TestRunHolders(t *testing.T) {
	w := newWorld(t)
	env := []string{"LEASEHOLD_TEST_CMD=record-slot"}
	procs := map[string]*proc{}
	for _, id := range []string{"a", "b", "c"} {
		procs[id] = w.start(id, env, runArgs(w, id, "--holders", "2")...)
	}
	slots := map[string]string{} // instance -> slot
	for len(slots) < 2 {
		ev, _ := w.waitCmd(30*time.Second, "CMD-START", nil)
		slot := slotOf(t, ev)
		for id, s := range slots {
			if s == slot {
				t.Fatalf("%s and %s both run CMD for slot %s", id, ev.id, slot)
			}
		}
		if _, dup := slots[ev.id]; dup {
			t.Fatalf("%s runs two CMDs", ev.id)
		}
		slots[ev.id] = slot
	}
	var leader, idle string
	for _, id := range []string{"a", "b", "c"} {
		if _, ok := slots[id]; !ok {
			idle = id
		} else if leader == "" {
			leader = id
		}
	}
	if err := procs[leader].cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	ev, _ := w.waitCmd(30*time.Second, "CMD-START", nil)
	if ev.id != idle || slotOf(t, ev) != slots[leader] {
		t.Fatalf("after %s stopped: CMD-START of %s slot %s; want %s on slot %s", leader, ev.id, slotOf(t, ev), idle, slots[leader])
	}
	if code := w.waitExit(procs[leader], 30*time.Second); code != 0 {
		t.Fatalf("%s exited %d after SIGTERM", leader, code)
	}
}

func slotOf(t *testing.T, ev cmdEvent) string {
	t.Helper()
	// The helper's line is "CMD-START slot=N id=...": parseCmdEvent leaves slot out.
	return ev.slot
}

// --holders refusals: 0, with --try.
func TestRunHoldersBadInput(t *testing.T) {
	w := newWorld(t)
	for _, extra := range [][]string{{"--holders", "0"}, {"--holders", "2", "--try"}} {
		p := w.start("bad", nil, runArgs(w, "a", extra...)...)
		if code := w.waitExit(p, 30*time.Second); code != exitUsage || !strings.Contains(strings.Join(p.output, "\n"), "--holders") {
			t.Errorf("run %v: exit %d, %q; want 2 naming --holders", extra, code, p.output)
		}
	}
}
