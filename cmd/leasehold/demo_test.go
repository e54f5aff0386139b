//go:build unix

package main

import (
	"regexp"
	"strconv"
	"testing"
	"time"
)

// demo --duration 5s exits 0; its summary reports takeovers after a crash (within L+R, E6)
// and after a clean stop (within R, E7), and 0 moments with two leaders (E2, E5).
func TestDemo(t *testing.T) {
	out, errOut, code := runLeasehold(t, "demo", "--duration", "5s")
	t.Logf("demo output:\n%s", out)
	if code != 0 {
		t.Fatalf("demo exited %d; stderr:\n%s", code, errOut)
	}
	count := func(re string) int {
		m := regexp.MustCompile(re).FindStringSubmatch(out)
		if m == nil {
			t.Fatalf("no match for %q in the demo's output", re)
		}
		n, _ := strconv.Atoi(m[1])
		return n
	}
	if n := count(`moments with two leaders: +(\d+)`); n != 0 {
		t.Errorf("demo counted %d moments with two leaders, want 0", n)
	}
	if n := count(`takeovers after a crash: +(\d+)`); n < 1 {
		t.Errorf("demo: %d takeovers after a crash, want at least 1", n)
	}
	if n := count(`takeovers after a clean stop: +(\d+)`); n < 1 {
		t.Errorf("demo: %d takeovers after a clean stop, want at least 1", n)
	}
	// The longest gaps against their bounds, with a slack for scheduling (-race, two shared
	// cores): the demo's own timeline is in real time.
	const demoSlack = 200 * time.Millisecond
	for _, m := range regexp.MustCompile(`longest time without a leader (\S+) \(bound (\S+) = (\S+):`).FindAllStringSubmatch(out, -1) {
		gap, err1 := time.ParseDuration(m[1])
		bound, err2 := time.ParseDuration(m[3])
		if err1 != nil || err2 != nil {
			t.Fatalf("cannot parse %q", m[0])
		}
		if gap > bound+demoSlack {
			t.Errorf("demo: longest time without a leader %v, over its bound %s = %v (+%v slack)", gap, m[2], bound, demoSlack)
		}
	}
}
