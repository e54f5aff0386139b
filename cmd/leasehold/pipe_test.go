//go:build unix

package main

import (
	"bufio"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// startPiped starts leasehold with its stdout and stderr on one pipe, as in
// `leasehold run ... 2>&1 | head -1`: it returns once the test has read one line and closed
// the pipe's read end.
func startPiped(t *testing.T, args ...string) *exec.Cmd {
	t.Helper()
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "GORACE=atexit_sleep_ms=0")
	cmd.Stdout, cmd.Stderr = pw, pw
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pw.Close()
	first, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil {
		t.Fatalf("first line of leasehold: %v", err)
	}
	pr.Close()
	t.Logf("read %q, then closed the pipe", strings.TrimSpace(first))
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	})
	return cmd
}

// waitState waits for cmd to exit; it fails the test if a signal killed it.
func waitState(t *testing.T, cmd *exec.Cmd, timeout time.Duration) *os.ProcessState {
	t.Helper()
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(timeout):
		t.Fatalf("leasehold has not exited within %v", timeout)
	}
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		t.Errorf("leasehold was killed by %v, want it to exit", ws.Signal())
	}
	return cmd.ProcessState
}

// Output to a pipe closed early (`leasehold run ... 2>&1 | head -1`) does not kill leasehold:
// stopped by SIGTERM, it still stops CMD, releases the lease and exits 0.
func TestRunBrokenOutputPipe(t *testing.T) {
	w := newWorld(t)
	cmd := startPiped(t, "run", "--store", w.storeURL(), "--lease", "jobs", "--lease-duration", testLs,
		"--renew-interval", testRs, "--log-format", "json", "--", "sleep", "60")
	deadline := time.Now().Add(30 * time.Second)
	for statusJSON(t, w.storeURL(), "jobs").State != "held" {
		if time.Now().After(deadline) {
			t.Fatal("leasehold did not lead within 30s")
		}
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(100 * time.Millisecond) // it logs that CMD started, into the broken pipe
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if ps := waitState(t, cmd, 10*time.Second); ps.ExitCode() != 0 {
		t.Errorf("leasehold exited %d, want 0", ps.ExitCode())
	}
	if st := statusJSON(t, w.storeURL(), "jobs"); st.State != "released" {
		t.Errorf("lease state after leasehold exited = %q, want released", st.State)
	}
}

// CMD keeps the default action of SIGPIPE (leasehold handles SIGPIPE without ignoring it, and
// an ignored signal would be inherited): `leasehold run -- yes | head -1` ends with yes killed
// by SIGPIPE, the lease released, and leasehold exiting 141 (128+13) by itself.
func TestRunCMDBrokenPipe(t *testing.T) {
	yes, err := exec.LookPath("yes")
	if err != nil {
		t.Skip("no yes command")
	}
	w := newWorld(t)
	cmd := startPiped(t, "run", "--store", w.storeURL(), "--lease", "jobs", "--lease-duration", testLs,
		"--renew-interval", testRs, "--log-format", "json", "--", yes)
	if ps := waitState(t, cmd, 30*time.Second); ps.ExitCode() != 128+int(syscall.SIGPIPE) {
		t.Errorf("leasehold exited %d, want %d (CMD killed by SIGPIPE)", ps.ExitCode(), 128+int(syscall.SIGPIPE))
	}
	if st := statusJSON(t, w.storeURL(), "jobs"); st.State != "released" {
		t.Errorf("lease state after leasehold exited = %q, want released", st.State)
	}
}
