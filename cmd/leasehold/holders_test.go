//go:build unix

package main

import (
	"path/filepath"
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
	slots := waitSlots(t, w, 2, "jobs")
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

// waitSlots waits for n CMDs of lease to start, each on a slot of its own and each of its own
// instance, and returns the slot of each instance.
func waitSlots(t *testing.T, w *world, n int, lease string) map[string]string {
	t.Helper()
	slots := map[string]string{} // instance -> slot
	for len(slots) < n {
		ev, _ := w.waitCmd(30*time.Second, "CMD-START", nil)
		slot := slotOf(t, ev)
		if ev.lease != lease {
			t.Fatalf("CMD of %s runs under lease %q; want %q", ev.id, ev.lease, lease)
		}
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
	return slots
}

// H1 with --config: the slots are the configured cluster service's lease (its name, L and R)
// over its Registry: two of three instances run CMD, one per slot, and the records pool/0 and
// pool/1 of the Registry name them.
func TestRunHoldersWithConfig(t *testing.T) {
	w := newWorld(t)
	registry := filepath.Join(w.dir, "app-registry.json")
	cfg := writeConfig(t, w.dir, "app.json", `
		"Registry": {"type": "Webda/FileStore", "path": "`+registry+`"},
		"cluster": {"type": "Webda/StoreClusterService", "leaseName": "pool", "leaseDuration": 2000, "renewInterval": 500}`)
	env := []string{"LEASEHOLD_TEST_CMD=record-slot"}
	for _, id := range []string{"a", "b", "c"} {
		w.start(id, env, append([]string{"run", "--config", cfg, "--instance-id", id, "--holders", "2", "--log-format", "json", "--"}, helperCmd()...)...)
	}
	slots := waitSlots(t, w, 2, "pool")
	st := slotsStatus(t, "file://"+registry, 0, "--lease", "pool")
	if len(st.Slots) != 2 {
		t.Fatalf("status of the lease pool: %+v; want its 2 slots", st)
	}
	for i, slot := range []string{"0", "1"} {
		s := st.Slots[i]
		if got, ok := slots[s.Holder]; !ok || got != slot || s.Lease != "pool/"+slot {
			t.Errorf("record %s of the Registry: holder %q; want pool/%s, held by the instance running CMD on slot %s (%v)", s.Lease, s.Holder, slot, slot, slots)
		}
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
