//go:build unix

package main

import (
	"strings"
	"syscall"
	"testing"
	"time"
)

// Every duration flag takes a bare number of milliseconds, as the JSON configuration does, and
// a Go duration: run's timings and grace, status's and repair's timeout, demo's timings.
func TestDurationFlagsTakeMilliseconds(t *testing.T) {
	w := newWorld(t)
	p := w.start("a", []string{"LEASEHOLD_TEST_CMD=record"}, append([]string{"run", "--store", w.storeURL(), "--lease", "jobs",
		"--lease-duration", "2000", "--renew-interval", "500", "--grace", "300", "--log-format", "text", "--"}, helperCmd()...)...)
	l := w.waitLine(30*time.Second, "the line of joining the election", func(l line) bool { return strings.Contains(l.text, "joined the election") })
	if !strings.Contains(l.text, "leaseDuration=2s renewInterval=500ms grace=300ms") {
		t.Errorf("run --lease-duration 2000 --renew-interval 500 --grace 300: %s\nwant leaseDuration=2s renewInterval=500ms grace=300ms", l.text)
	}
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	w.waitExit(p, 10*time.Second)

	for _, args := range [][]string{
		{"status", "--store", w.storeURL(), "--lease-duration", "5000", "--renew-interval", "1000", "--timeout", "3000"},
		{"status", "--store", w.storeURL(), "--lease-duration", "5s", "--renew-interval", "1s", "--timeout", "3s"},
		{"repair", "--store", w.storeURL(), "--lease-duration", "2000", "--timeout", "5000"},
		{"demo", "--duration", "600", "--lease-duration", "200", "--renew-interval", "50", "--every", "250"},
	} {
		stdout, stderr, code := runLeasehold(t, args...)
		if code == 2 || stderr != "" && args[0] != "status" {
			t.Errorf("%v: exit %d\nstdout:\n%s\nstderr:\n%s", args, code, stdout, stderr)
		}
	}
}
