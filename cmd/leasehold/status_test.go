//go:build unix

package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// runLeasehold runs the binary to completion and returns its output and exit status.
func runLeasehold(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		code = ee.ExitCode()
	case err != nil:
		t.Fatal(err)
	}
	return out.String(), errb.String(), code
}

func statusJSON(t *testing.T, storeURL, lease string) leaseStatus {
	t.Helper()
	out, errOut, code := runLeasehold(t, "status", "--store", storeURL, "--lease", lease, "--json")
	var st leaseStatus
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		t.Fatalf("status --json: %v\nstdout: %s\nstderr: %s", err, out, errOut)
	}
	want := 3
	if st.Held {
		want = 0
	}
	if code != want {
		t.Errorf("status exited %d with held=%v, want %d", code, st.Held, want)
	}
	return st
}

// status of a lease that does not exist, that is held, and that was released: exit 0 only
// while held (S1 record fields: holder, term, times), --json parses.
func TestStatus(t *testing.T) {
	w := newWorld(t)
	out, _, code := runLeasehold(t, "status", "--store", w.storeURL(), "--lease", "jobs")
	if code != 3 || !strings.Contains(out, "missing") {
		t.Errorf("status of a missing lease: exit %d, output:\n%s\nwant exit 3 and \"missing\"", code, out)
	}
	if st := statusJSON(t, w.storeURL(), "jobs"); st.Exists || st.State != "missing" {
		t.Errorf("status --json of a missing lease: %+v", st)
	}

	p := w.start("a", []string{"LEASEHOLD_TEST_CMD=record"}, runArgs(w, "holder-1")...)
	w.waitCmd(30*time.Second, "CMD-START", nil)
	out, _, code = runLeasehold(t, "status", "--store", w.storeURL(), "--lease", "jobs")
	if code != 0 {
		t.Errorf("status of a held lease exited %d, want 0; output:\n%s", code, out)
	}
	for _, want := range []string{"state:", "held", "holder:", "holder-1", "term:", "acquired:", "renewed:", "ago)", "duration:", "2s"} {
		if !strings.Contains(out, want) {
			t.Errorf("status output lacks %q:\n%s", want, out)
		}
	}
	t.Logf("status of a held lease:\n%s", out)
	st := statusJSON(t, w.storeURL(), "jobs")
	if !st.Held || st.Holder != "holder-1" || st.Term == 0 || st.AcquiredAt == nil || st.RenewedAt == nil ||
		st.LeaseDuration != testL.Seconds() || st.Expired || st.State != "held" {
		t.Errorf("status --json of a held lease: %+v", st)
	}
	if st.RenewedAgo < 0 || st.RenewedAgo > (testR+slack).Seconds() {
		t.Errorf("status --json: renewedAgoSeconds = %v, want within R (+slack) of now", st.RenewedAgo)
	}

	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	w.waitExit(p, 10*time.Second)
	out, _, code = runLeasehold(t, "status", "--store", w.storeURL(), "--lease", "jobs")
	if code != 3 || !strings.Contains(out, "released") {
		t.Errorf("status of a released lease: exit %d, output:\n%s\nwant exit 3 and \"released\"", code, out)
	}
	if rel := statusJSON(t, w.storeURL(), "jobs"); rel.Held || rel.State != "released" || rel.Holder != "" || rel.Term != st.Term {
		t.Errorf("status --json of a released lease: %+v; want the term it was held in, %d", rel, st.Term)
	}
}

// A lease whose holder was SIGKILLed looks expired to status once L has passed (exit 3).
func TestStatusExpired(t *testing.T) {
	w := newWorld(t)
	p := w.start("a", []string{"LEASEHOLD_TEST_CMD=record"}, runArgs(w, "a")...)
	w.waitCmd(30*time.Second, "CMD-START", nil)
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	w.waitExit(p, 10*time.Second)
	// The lease expires L after its last renewal: wait for that moment (nothing to observe).
	time.Sleep(testL + 100*time.Millisecond)
	st := statusJSON(t, w.storeURL(), "jobs")
	if st.Held || !st.Expired || st.State != "expired" || st.Holder != "a" {
		t.Errorf("status --json of a lease whose holder was killed, L later: %+v", st)
	}
}

// --config: run and status use the configuration's Registry and cluster service (A1, S1);
// its leaseName is CMD's LEASEHOLD_LEASE and the lease status reads.
func TestConfig(t *testing.T) {
	w := newWorld(t)
	cfg := filepath.Join(w.dir, "app.json")
	registry := filepath.Join(w.dir, "app-registry.json")
	if err := os.WriteFile(cfg, []byte(`{"services": {
		"Registry": {"type": "Webda/FileStore", "path": "`+registry+`"},
		"cluster": {"type": "StoreClusterService", "leaseName": "cfg-lease", "leaseDuration": 2000, "renewInterval": "500ms"}
	}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	p := w.start("a", []string{"LEASEHOLD_TEST_CMD=record"},
		append([]string{"run", "--config", cfg, "--instance-id", "from-flag", "--log-format", "json", "--"}, helperCmd()...)...)
	ev, _ := w.waitCmd(30*time.Second, "CMD-START", nil)
	if ev.lease != "cfg-lease" || ev.id != "from-flag" {
		t.Errorf("CMD environment with --config: lease %q instance %q, want cfg-lease and from-flag", ev.lease, ev.id)
	}
	out, _, code := runLeasehold(t, "status", "--config", cfg)
	if code != 0 || !strings.Contains(out, "from-flag") {
		t.Errorf("status --config: exit %d, output:\n%s\nwant exit 0 and the holder from-flag", code, out)
	}
	// The same lease, read through the store directly.
	if st := statusJSON(t, "file://"+registry, "cfg-lease"); st.Holder != "from-flag" {
		t.Errorf("status --store of the config's registry: holder %q, want from-flag", st.Holder)
	}
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := w.waitExit(p, 10*time.Second); code != 0 {
		t.Errorf("leasehold run --config exited %d after SIGTERM, want 0", code)
	}
}

// status only reads: over a file store nobody has written yet, it creates neither the data
// file, nor its lock file, nor (for the default store) the state directory.
func TestStatusCreatesNothing(t *testing.T) {
	dir := t.TempDir()
	out, errOut, code := runLeasehold(t, "status", "--store", "file://"+filepath.Join(dir, "r.json"), "--lease", "jobs")
	if code != 3 || !strings.Contains(out, "missing") {
		t.Errorf("status of a store nobody wrote: exit %d, want 3 (missing)\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	if names := dirNames(t, dir); len(names) != 0 {
		t.Errorf("status created %v in the store's directory", names)
	}

	state := filepath.Join(dir, "state")
	cmd := exec.Command(bin, "status", "--lease", "jobs")
	cmd.Env = append(os.Environ(), "XDG_STATE_HOME="+state)
	outb, err := cmd.CombinedOutput()
	if cmd.ProcessState.ExitCode() != 3 || !strings.Contains(string(outb), "missing") {
		t.Errorf("status of the default store, never used: %v, want exit 3 (missing)\n%s", err, outb)
	}
	if _, err := os.Stat(state); !os.IsNotExist(err) {
		t.Errorf("status created the state directory (%v): %v", state, dirNames(t, dir))
	}

	// A store in a directory that does not exist is more likely a mistyped path: an error.
	_, errOut, code = runLeasehold(t, "status", "--store", "file://"+filepath.Join(dir, "nowhere", "r.json"))
	if code != 1 || !strings.Contains(errOut, "nowhere") {
		t.Errorf("status of a store in a missing directory: exit %d, want 1 naming it\n%s", code, errOut)
	}
}

func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}
