//go:build unix

package main

import (
	"fmt"
	"net"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/leasehold/leasehold/internal/testenv"
)

// freePort returns a loopback port nothing listens on (now).
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	return port
}

// C7: leasehold run started while its Redis server is not up yet stays up, says it waits for
// the store, and runs CMD once the server answers (through the election).
func TestRunWaitsForStoreNotReady(t *testing.T) {
	bin := testenv.Binary(t, "redis-server", "/usr/bin/redis-server")
	port := freePort(t)
	w := newWorld(t)
	url := fmt.Sprintf("redis://127.0.0.1:%d/0", port)
	args := []string{"run", "--store", url, "--lease", "jobs", "--lease-duration", testLs,
		"--renew-interval", testRs, "--instance-id", "a", "--log-format", "json", "--"}
	p := w.start("a", []string{"LEASEHOLD_TEST_CMD=record"}, append(args, helperCmd()...)...)
	w.logLine(20*time.Second, "leasehold: the store cannot be opened yet: following until it answers")
	// A few attempts fail; it is still there, and no CMD ran.
	time.Sleep(2 * time.Second)
	select {
	case <-p.exited:
		t.Fatalf("leasehold run exited %d while its store was not up", p.code)
	default:
	}
	srv := exec.Command(bin, "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", t.TempDir())
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Process.Kill(); srv.Wait() })
	w.logLine(20*time.Second, "leasehold: the store answers: opened it")
	w.waitCmd(20*time.Second, "CMD-START", nil)
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := w.waitExit(p, 10*time.Second); code != 0 {
		t.Errorf("exit %d after SIGTERM, want 0", code)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, o := range p.output {
		if strings.Contains(o, "CMD-OVERLAP") {
			t.Errorf("two CMDs: %s", o)
		}
	}
}

// C7: --try over a store that does not answer exits 1 within its first attempt's bound
// (L - R, and the time to stop), saying the store did not answer.
func TestRunTryStoreNotReady(t *testing.T) {
	url := fmt.Sprintf("redis://127.0.0.1:%d/0", freePort(t))
	start := time.Now()
	stdout, stderr, code := runLeasehold(t, "run", "--try", "--store", url, "--lease-duration", "2s", "--renew-interval", "500ms", "--", "true")
	took := time.Since(start)
	if code != exitFailure || !strings.Contains(stderr, "connection refused") || !strings.Contains(stderr, "giving up") || stdout != "" {
		t.Errorf("exit %d, stdout %q, stderr:\n%s\nwant exit 1 and the store's refusal", code, stdout, stderr)
	}
	if took > 2*time.Second+3*time.Second {
		t.Errorf("--try took %v, want it within L-R and the stop", took)
	}
}

// C7: --wait D over a store that does not answer gives up at D, exit 1.
func TestRunWaitStoreNotReady(t *testing.T) {
	url := fmt.Sprintf("redis://127.0.0.1:%d/0", freePort(t))
	start := time.Now()
	stdout, stderr, code := runLeasehold(t, "run", "--wait", "1500ms", "--store", url, "--lease-duration", "2s", "--renew-interval", "500ms", "--", "true")
	took := time.Since(start)
	if code != exitFailure || !strings.Contains(stderr, "connection refused") || !strings.Contains(stderr, "--wait 1.5s") || stdout != "" {
		t.Errorf("exit %d, stdout %q, stderr:\n%s\nwant exit 1 at --wait's end, with the store's refusal", code, stdout, stderr)
	}
	if took < 1500*time.Millisecond || took > 1500*time.Millisecond+3*time.Second {
		t.Errorf("--wait 1.5s gave up after %v, want at 1.5s", took)
	}
}

// C7 and A8 with --config: run over a Registry whose server does not answer joins the
// election and --try gives up (exit 1) saying why; status fails at once naming the Registry.
func TestRunConfigStoreNotReady(t *testing.T) {
	dir := t.TempDir()
	cfg := writeConfig(t, dir, "down.json", fmt.Sprintf(`
		"Registry": {"type": "Webda/RedisStore", "url": "redis://127.0.0.1:%d/0"},
		"cluster": {"type": "StoreClusterService", "leaseDuration": 2000, "renewInterval": 500}`, freePort(t)))
	stdout, stderr, code := runLeasehold(t, "run", "--try", "--config", cfg, "--", "true")
	if code != exitFailure || !strings.Contains(stderr, "the store cannot be opened yet") || !strings.Contains(stderr, "giving up") ||
		!strings.Contains(stderr, "connection refused") || stdout != "" {
		t.Errorf("run --try: exit %d, stdout %q, stderr:\n%s\nwant exit 1, waiting for the store then giving up", code, stdout, stderr)
	}
	stdout, stderr, code = runLeasehold(t, "status", "--config", cfg)
	checkFailure(t, "status", code, stdout, stderr, `"Registry"`, "connection refused")
}
