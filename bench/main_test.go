package main

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"errors"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestMain(m *testing.M) {
	maybeWorker() // the CI test's workers are this test binary
	os.Exit(m.Run())
}

// ciSlack is added to leasehold's bounds in the CI run: the workers are race-instrumented
// test binaries on a shared 2-core machine (process scheduling, the new leader's own read and
// write), as proctest.DefaultSlack.
const ciSlack = 100 * time.Millisecond

// TestCI runs the command's CI mode: every system reachable here (a server that is
// not is skipped, or fails the test under LEASEHOLD_REQUIRE_SERVERS=1 / LEASEHOLD_REQUIRE_KUBE=1),
// 2 crash and 2 handover trials each, 3 instances, 100 lease names over PostgreSQL and Redis.
// It checks that the command measured every figure and wrote its files, and, on the way,
// leasehold's bounds: crash takeover within L + R of the last renewal (E6), handover within R
// of the unlead (E7), each plus ciSlack, and no two leaders at once (E2, E5, W7). Speed is not
// asserted: the figures are the command's output.
func TestCI(t *testing.T) {
	if testing.Short() {
		t.Skip("runs worker processes and servers for a minute or two")
	}
	if runtime.GOOS != "linux" {
		t.Skip("the bench signals processes and reads /proc and CLOCK_MONOTONIC on Linux")
	}
	dir, traces := t.TempDir(), t.TempDir()
	var stdout bytes.Buffer
	stderr := &testWriter{t: t}
	if code := run(t.Context(), []string{"--ci", "--out", dir, "--trace", traces}, []string{"-test.run=^$"}, &stdout, stderr); code != 0 {
		t.Fatalf("bench --ci exited %d", code)
	}
	js, err := os.ReadFile(filepath.Join(dir, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	var rep report
	if err := json.Unmarshal(js, &rep); err != nil {
		t.Fatalf("results.json: %v", err)
	}
	o := rep.Options
	if len(rep.Systems) == 0 {
		t.Fatal("no system measured")
	}
	for _, name := range allBackends {
		measured := slices.ContainsFunc(rep.Systems, func(s sysResult) bool { return s.System.Backend == name })
		skipped := slices.ContainsFunc(rep.Skipped, func(s string) bool { return strings.HasPrefix(s, name+":") })
		if measured == skipped {
			t.Errorf("%s: measured %v, skipped %v: want exactly one", name, measured, skipped)
		}
	}
	for _, s := range rep.Systems {
		name := s.System.Name
		if !s.System.Anchor {
			checkTraces(t, traces, s.System.Backend)
		}
		if s.Crash.N != o.Trials || s.Handover.N != o.Trials {
			t.Errorf("%s: %d crash and %d handover trials, want %d each", name, s.Crash.N, s.Handover.N, o.Trials)
		}
		if len(s.Steady) != len(o.Instances) {
			t.Fatalf("%s: %d steady-state figures, want %d", name, len(s.Steady), len(o.Instances))
		}
		for _, st := range s.Steady {
			if st.ReqPerSec <= 0 || st.CPUHour <= 0 || st.RSS <= 0 {
				t.Errorf("%s, %d instances: requests/s %v, CPU s per instance-hour %v, RSS %d: want each positive", name, st.Instances, st.ReqPerSec, st.CPUHour, st.RSS)
			}
		}
		if s.System.Anchor {
			continue
		}
		if s.CrashSinceRenewal.N != o.Trials || s.CrashSinceRenewal.Max > o.L+o.R+ciSlack {
			t.Errorf("%s: E6: crash takeover since the last renewal %v (max of %d), want within L+R+slack = %v", name, s.CrashSinceRenewal.Max, s.CrashSinceRenewal.N, o.L+o.R+ciSlack)
		}
		if s.HandoverSinceUnlead.N != o.Trials || s.HandoverSinceUnlead.Max > o.R+ciSlack {
			t.Errorf("%s: E7: handover since the unlead %v (max of %d), want within R+slack = %v", name, s.HandoverSinceUnlead.Max, s.HandoverSinceUnlead.N, o.R+ciSlack)
		}
	}
	for _, a := range rep.Anomalies {
		t.Errorf("E2/W7: %s", a)
	}
	if rep.IsLeader <= 0 {
		t.Errorf("IsLeader cost %v ns: not measured", rep.IsLeader)
	}
	for _, m := range rep.Many {
		if m.Leases != 100 || m.Leading != 100 || m.Requests == 0 {
			t.Errorf("many elections over %s: %d of %d leases led, %d requests: want all 100 led and requests counted", m.Backend, m.Leading, m.Leases, m.Requests)
		}
	}

	checkParts(t, &rep)

	md, err := os.ReadFile(filepath.Join(dir, "results.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(md[:stdout.Len()], stdout.Bytes()) {
		t.Errorf("results.md does not start with the table printed on stdout")
	}
	for _, s := range rep.Systems {
		if !bytes.Contains(md, []byte("| "+s.System.Name+" |")) {
			t.Errorf("results.md has no row for %s", s.System.Name)
		}
	}
	if len(rep.Systems) > 1 && rep.Systems[len(rep.Systems)-1].System.Anchor && !bytes.Contains(md, []byte("### Ratios")) {
		t.Errorf("results.md has no ratios")
	}
	checkSVG(t, filepath.Join(dir, "latency.svg"), &rep)
}

// checkParts checks the partitions scenario of the CI run (64 partitions, 3 members, then a
// fourth, then a crash of one): a row per store measured (or its skip); each reached an even
// spread at every step (an anomaly otherwise, which TestCI fails on, as two owners of one
// partition at once); a join moved partitions, at most ⌈K/(N+1)⌉ + 1 (D6); a crashed member's
// partitions were each owned again within L + R of the crash, plus ciSlack (D2).
func checkParts(t *testing.T, rep *report) {
	t.Helper()
	o := rep.Options
	for _, name := range o.PartitionsBackends {
		n := 0
		for _, r := range rep.Parts {
			if r.Backend == name {
				n++
			}
		}
		skipped := slices.ContainsFunc(rep.Skipped, func(s string) bool { return strings.HasPrefix(s, "partitions over "+name+":") })
		if n != len(o.Partitions)*len(o.PartitionsMembers) && !skipped {
			t.Errorf("partitions over %s: %d rows, want %d", name, n, len(o.Partitions)*len(o.PartitionsMembers))
		}
	}
	for _, r := range rep.Parts {
		joinBound := (r.Partitions+r.Members)/(r.Members+1) + 1
		if r.Join.Moved < 1 || r.Join.Moved > joinBound {
			t.Errorf("partitions over %s: a join moved %d partitions, want 1 to %d", r.Backend, r.Join.Moved, joinBound)
		}
		if r.Crash.Moved < 1 || r.Crash.Ownerless < 1 || r.Crash.GapMax > o.L+o.R+ciSlack {
			t.Errorf("partitions over %s: after a crash %d moved, %d without an owner for at most %v: want some, each owned again within L + R + slack = %v",
				r.Backend, r.Crash.Moved, r.Crash.Ownerless, r.Crash.GapMax, o.L+o.R+ciSlack)
		}
		if r.PerMemberPerR <= 0 || r.Baseline.PerMemberPerR <= 0 || !r.Baseline.AllHeld {
			t.Errorf("partitions over %s: %.1f requests per member per R, baseline %.1f, baseline all held %v: want requests counted and every lease held",
				r.Backend, r.PerMemberPerR, r.Baseline.PerMemberPerR, r.Baseline.AllHeld)
		}
	}
}

// checkSVG checks that the plot is well-formed XML with a dot per trial.
func checkSVG(t *testing.T, path string, rep *report) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	dec := xml.NewDecoder(bytes.NewReader(b))
	circles := 0
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("latency.svg: %v", err)
		}
		if se, ok := tok.(xml.StartElement); ok && se.Name.Local == "circle" {
			circles++
		}
	}
	want := 0
	for _, s := range rep.Systems {
		want += s.Crash.N + s.Handover.N
	}
	if circles != want {
		t.Errorf("latency.svg has %d dots, want one per trial: %d", circles, want)
	}
}

// testWriter sends the command's progress lines to the test log.
type testWriter struct{ t *testing.T }

func (w *testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSuffix(string(p), "\n"))
	return len(p), nil
}

// checkTraces checks that the takeover trials' workers of backend traced (--trace) their lock
// calls and the Elector's events, among them a leadership.
func checkTraces(t *testing.T, dir, backend string) {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(dir, "*-"+backend+"-lat-*.log"))
	var all strings.Builder
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		all.Write(b)
	}
	for _, want := range []string{" update holder=", " update: holder=", " event became_leader "} {
		if !strings.Contains(all.String(), want) {
			t.Errorf("%s: the traces of %d workers hold no %q line", backend, len(files), strings.TrimSpace(want))
		}
	}
}
