//go:build unix

package main

import (
	"encoding/json"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// H1, O1: status of a lease run with --holders N shows its slots and their holders, and exits
// 0 while any slot is held (a monitoring check must not read "nobody holds"); --holders N
// reads the N slots, a slot never taken showing as missing. Once every slot is released, it
// exits 3.
func TestStatusHolders(t *testing.T) {
	w := newWorld(t)
	env := []string{"LEASEHOLD_TEST_CMD=record-slot"}
	a := w.start("a", env, runArgs(w, "a", "--holders", "2")...)
	b := w.start("b", env, runArgs(w, "b", "--holders", "2")...)
	waitSlots(t, w, 2, "jobs")

	out, _, code := runLeasehold(t, "status", "--store", w.storeURL(), "--lease", "jobs")
	if code != 0 {
		t.Errorf("status of a lease of 2 holders, both slots held: exit %d, want 0; output:\n%s", code, out)
	}
	for _, want := range []string{"held (2 of 2 slots held)", "slot 0:", "slot 1:", "held by a", "held by b", "jobs/0", "jobs/1"} {
		if !strings.Contains(out, want) {
			t.Errorf("status output lacks %q:\n%s", want, out)
		}
	}
	t.Logf("status of a lease of 2 holders:\n%s", out)

	st := slotsStatus(t, w.storeURL(), 0, "--lease", "jobs")
	var holders []string
	for i, s := range st.Slots {
		if s.Slot == nil || *s.Slot != i || !s.Held || s.State != "held" || s.Lease != "jobs/"+string(rune('0'+i)) {
			t.Errorf("status --json: slot %d: %+v", i, s)
		}
		holders = append(holders, s.Holder)
	}
	slices.Sort(holders)
	if !st.Held || st.State != "held" || len(st.Slots) != 2 || !slices.Equal(holders, []string{"a", "b"}) {
		t.Errorf("status --json of a lease of 2 holders: %+v; want held, 2 slots held by a and b", st)
	}

	st = slotsStatus(t, w.storeURL(), 0, "--lease", "jobs", "--holders", "3")
	if !st.Held || len(st.Slots) != 3 || st.Slots[2].State != "missing" || !st.Slots[0].Held || !st.Slots[1].Held {
		t.Errorf("status --holders 3 --json: %+v; want slots 0 and 1 held, 2 missing", st)
	}

	for _, p := range []*proc{a, b} {
		if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		w.waitExit(p, 10*time.Second)
	}
	st = slotsStatus(t, w.storeURL(), exitNoLease, "--lease", "jobs")
	if st.Held || st.State != "released" || len(st.Slots) != 2 {
		t.Errorf("status --json once both slots are released: %+v; want released, 2 slots", st)
	}
}

// slotsStatus runs status --json with args over storeURL and checks its exit status.
func slotsStatus(t *testing.T, storeURL string, wantCode int, args ...string) leaseStatus {
	t.Helper()
	out, errOut, code := runLeasehold(t, append([]string{"status", "--store", storeURL, "--json"}, args...)...)
	var st leaseStatus
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		t.Fatalf("status --json %v: %v\nstdout: %s\nstderr: %s", args, err, out, errOut)
	}
	if code != wantCode {
		t.Errorf("status --json %v exited %d, want %d; stdout:\n%s", args, code, wantCode, out)
	}
	return st
}

// H1: a lease name of the form of a slot's record (NAME/<digits>) is refused by run, status and
// resign: a single-leader lease by that name would share the record of slot i of NAME.
func TestSlotLikeLeaseRefused(t *testing.T) {
	store := "file://" + t.TempDir() + "/r.json"
	for _, args := range [][]string{
		{"run", "--store", store, "--lease", "jobs/0", "--", "true"},
		{"status", "--store", store, "--lease", "jobs/0"},
		{"resign", "--store", store, "--lease", "jobs/12"},
	} {
		stdout, stderr, code := runLeasehold(t, args...)
		first, _, _ := strings.Cut(stderr, "\n")
		if code != exitUsage || !strings.Contains(first, `--lease "jobs/`) || !strings.Contains(first, "slot") || !isUsageError(stderr, "leasehold "+args[0]) || stdout != "" {
			t.Errorf("%v: exit %d, stderr:\n%s\nwant exit 2, one line naming --lease and the slot", args, code, stderr)
		}
	}
	// The same name from a configuration.
	dir := t.TempDir()
	cfg := writeConfig(t, dir, "slot.json", `"Registry": {"type": "Webda/FileStore", "path": "`+dir+`/r.json"},
		"cluster": {"type": "StoreClusterService", "leaseName": "jobs/1"}`)
	for _, args := range [][]string{
		{"run", "--config", cfg, "--", "true"},
		{"status", "--config", cfg},
		{"resign", "--config", cfg},
	} {
		stdout, stderr, code := runLeasehold(t, args...)
		first, _, _ := strings.Cut(stderr, "\n")
		if code != exitUsage || !strings.Contains(first, `parameter "leaseName" "jobs/1"`) || !isUsageError(stderr, "leasehold "+args[0]) || stdout != "" {
			t.Errorf("%v: exit %d, stderr:\n%s\nwant exit 2, one line naming the parameter leaseName", args, code, stderr)
		}
	}
	// A name with a slash and no number after it is a name like any other.
	if _, stderr, code := runLeasehold(t, "status", "--store", store, "--lease", "jobs/nightly"); code != exitNoLease {
		t.Errorf("status --lease jobs/nightly: exit %d, want 3 (missing); stderr:\n%s", code, stderr)
	}
}
