//go:build unix

package main

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// startAdvertising starts leasehold run on the test's store and lease with args, and waits
// until its CMD runs: it leads.
func startAdvertising(t *testing.T, w *world, id, lease string, args ...string) *proc {
	t.Helper()
	all := append([]string{"run", "--store", w.storeURL(), "--lease", lease, "--lease-duration", testLs,
		"--renew-interval", testRs, "--instance-id", id}, args...)
	p := w.start(id, []string{"LEASEHOLD_TEST_CMD=record"}, append(all, "--", os.Args[0])...)
	w.waitCmd(30*time.Second, "CMD-START", func(e cmdEvent) bool { return e.id == id })
	return p
}

// V3: leader prints the value alone and exits 0; status, status --json and status --watch
// show it. Once the leader has released the lease, leader exits 3.
func TestLeaderPrintsValue(t *testing.T) {
	w := newWorld(t)
	const value = "http://10.0.0.7:8080"
	if out, errOut, code := runLeasehold(t, "leader", "--store", w.storeURL(), "--lease", "api"); code != exitNoLease || out != "" || !strings.Contains(errOut, "nobody leads") {
		t.Fatalf("leader of a missing lease: exit %d, stdout %q, stderr %q; want 3, nothing, \"nobody leads\"", code, out, errOut)
	}
	p := startAdvertising(t, w, "api-1", "api", "--advertise", value)
	out, errOut, code := runLeasehold(t, "leader", "--store", w.storeURL(), "--lease", "api")
	if code != exitOK || out != value+"\n" {
		t.Fatalf("leader: exit %d, stdout %q, stderr %q; want 0 and the value alone", code, out, errOut)
	}
	if st := statusJSON(t, w.storeURL(), "api"); st.Value != value || st.Holder != "api-1" {
		t.Errorf("status --json: %+v; want api-1 publishing %q", st, value)
	}
	if out, _, _ := runLeasehold(t, "status", "--store", w.storeURL(), "--lease", "api"); !regexp.MustCompile(`\nvalue: +` + regexp.QuoteMeta(value) + `\n`).MatchString(out) {
		t.Errorf("status does not show the value:\n%s", out)
	}
	watch := w.start("watch", nil, "status", "--watch", "--interval", "100ms", "--store", w.storeURL(), "--lease", "api")
	w.waitLine(10*time.Second, "status --watch line with the value", func(l line) bool {
		return l.proc == watch && strings.Contains(l.text, " held holder=api-1 term=") && strings.HasSuffix(l.text, " value="+value)
	})
	_ = watch.cmd.Process.Signal(syscall.SIGTERM)
	w.waitExit(watch, 10*time.Second)
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	w.waitExit(p, 10*time.Second)
	if out, _, code := runLeasehold(t, "leader", "--store", w.storeURL(), "--lease", "api"); code != exitNoLease || out != "" {
		t.Errorf("leader after the release: exit %d, stdout %q; want 3 and nothing", code, out)
	}
	if st := statusJSON(t, w.storeURL(), "api"); st.Value != "" {
		t.Errorf("status --json after the release shows value %q; want none", st.Value)
	}
}

// V3: a leader that publishes nothing: leader exits 4, prints nothing, and says so on stderr.
func TestLeaderNoValue(t *testing.T) {
	w := newWorld(t)
	p := startAdvertising(t, w, "quiet-1", "api")
	out, errOut, code := runLeasehold(t, "leader", "--store", w.storeURL(), "--lease", "api")
	if code != exitNoValue || out != "" || !strings.Contains(errOut, "quiet-1 publishes no value") {
		t.Errorf("leader of a leader without --advertise: exit %d, stdout %q, stderr %q; want 4", code, out, errOut)
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	w.waitExit(p, 10*time.Second)
}

// V1: a value of more than 1024 bytes or more than one line is bad input naming --advertise,
// refused before joining the election; leader refuses arguments and a bad --timeout.
func TestLeaderBadInput(t *testing.T) {
	w := newWorld(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "--store", w.storeURL(), "--advertise", "a\nb", "--", "true"}, "--advertise: the value must be one line"},
		{[]string{"run", "--store", w.storeURL(), "--advertise", strings.Repeat("x", 1025), "--", "true"}, "--advertise: the value is 1025 bytes, at most 1024"},
		{[]string{"leader", "--store", w.storeURL(), "extra"}, `leader takes no arguments, got "extra"`},
		{[]string{"leader", "--store", w.storeURL(), "--timeout", "0s"}, "--timeout 0s must be positive"},
	} {
		out, errOut, code := runLeasehold(t, tc.args...)
		lines := strings.Split(strings.TrimSpace(errOut), "\n")
		if code != exitUsage || out != "" || !strings.Contains(lines[0], tc.want) || strings.Contains(errOut, "panic") {
			t.Errorf("leasehold %.60q: exit %d, stdout %q, stderr %q; want exit 2 and %q", tc.args, code, out, errOut, tc.want)
		}
	}
	if _, err := os.Stat(w.dir + "/registry.json"); err == nil {
		t.Error("a refused run wrote the store")
	}
	out, _, code := runLeasehold(t, "leader", "--help")
	if code != exitOK || !strings.Contains(out, "3    nobody leads") || !strings.Contains(out, "4    the leader publishes no value") {
		t.Errorf("leader --help: exit %d, without the exit codes:\n%s", code, out)
	}
}

// TestREADMELeader runs the "Reaching the leader" commands of docs/command.md as written,
// over the test's store (LEASEHOLD_STORE) and with the built leasehold first in PATH, and
// compares their output with the block that follows them.
func TestREADMELeader(t *testing.T) {
	for _, tool := range []string{"python3", "curl"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("no %s here", tool)
		}
	}
	sec := docSection(t, "docs/command.md", "## Reaching the leader: ")
	m := regexp.MustCompile("(?s)\n```sh\n(.*?)\n```\n\n```text\n(.*?\n)```\n").FindStringSubmatch(sec)
	if m == nil {
		t.Fatal("the section has no sh block followed by its output")
	}
	lines := strings.Split(m[1], "\n")
	if !strings.HasPrefix(lines[0], "leasehold run ") || !strings.HasSuffix(lines[0], " &") {
		t.Fatalf("the block's first line %q is not a leasehold run in the background", lines[0])
	}
	w := newWorld(t)
	env := []string{"LEASEHOLD_STORE=" + w.storeURL(), "PATH=" + filepath.Dir(bin) + ":" + os.Getenv("PATH")}
	args := strings.Fields(strings.TrimSuffix(lines[0], " &"))[1:]
	p := w.start("readme-run", env, args...)
	defer func() {
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		w.waitExit(p, 10*time.Second)
	}()
	w.waitLine(30*time.Second, "became leader", func(l line) bool { return l.proc == p && strings.Contains(l.text, "became leader") })
	// The HTTP server CMD starts listens a moment after it starts.
	deadline := time.Now().Add(20 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", "127.0.0.1:8080", time.Second)
		if err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("CMD does not listen on 127.0.0.1:8080: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	sh := exec.Command("/bin/sh", "-c", strings.Join(lines[1:], "\n"))
	sh.Env = append(os.Environ(), env...)
	out, err := sh.CombinedOutput()
	if err != nil || string(out) != m[2] {
		t.Fatalf("the documented commands:\n%s\nprinted (%v):\n%s\ndocs/command.md shows:\n%s", strings.Join(lines[1:], "\n"), err, out, m[2])
	}
}

// V1 with --config: the cluster service's parameter advertise is published, and
// run --advertise overrides it, as the command line overrides the service's parameters.
func TestLeaderConfigAdvertise(t *testing.T) {
	w := newWorld(t)
	registry := filepath.Join(w.dir, "app-registry.json")
	cfg := writeConfig(t, w.dir, "app.json", `
		"Registry": {"type": "Webda/FileStore", "path": "`+registry+`"},
		"cluster": {"type": "Webda/StoreClusterService", "leaseName": "api", "leaseDuration": 2000, "renewInterval": 500, "advertise": "http://from-config:80"}`)
	for _, tc := range []struct {
		flags []string
		want  string
	}{
		{nil, "http://from-config:80"},
		{[]string{"--advertise", "http://from-flag:80"}, "http://from-flag:80"},
	} {
		id := "app-" + strings.TrimPrefix(strings.TrimSuffix(tc.want, ":80"), "http://")
		args := append(append([]string{"run", "--config", cfg, "--instance-id", id}, tc.flags...), append([]string{"--"}, helperCmd()...)...)
		p := w.start(id, []string{"LEASEHOLD_TEST_CMD=record"}, args...)
		w.waitCmd(30*time.Second, "CMD-START", func(e cmdEvent) bool { return e.id == id })
		out, errOut, code := runLeasehold(t, "leader", "--config", cfg)
		if code != exitOK || out != tc.want+"\n" {
			t.Errorf("leader --config with run %q: exit %d, stdout %q, stderr %q; want %q", tc.flags, code, out, errOut, tc.want)
		}
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		w.waitExit(p, 10*time.Second)
	}
}
