package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/leasehold/leasehold/faults/campaign"
)

// fakeRuns stands for campaign.Run in the soak's tests: it returns a report of o.MinFaults
// faults (the ones in violating broken), and records the backends it ran.
type fakeRuns struct {
	ran       []string
	violating map[string]bool
	cancel    map[string]context.CancelFunc // interrupts the soak during that backend
}

func (f *fakeRuns) run(ctx context.Context, o campaign.Options) (*campaign.Report, error) {
	f.ran = append(f.ran, o.Backend)
	if c := f.cancel[o.Backend]; c != nil {
		c()
		return nil, ctx.Err()
	}
	if o.Backend == "nats" {
		return nil, fmt.Errorf("%w: nats-server is not running", campaign.ErrUnavailable)
	}
	rep := &campaign.Report{Backend: o.Backend, Locker: o.Locker, Instances: o.Instances, Faults: make([]campaign.Fault, o.MinFaults)}
	for i := range rep.Faults {
		rep.Faults[i] = campaign.Fault{N: i + 1, Kind: campaign.KillLeader}
	}
	if f.violating[o.Backend] {
		rep.Violations = []string{"a takeover beyond its bound"}
		if err := os.MkdirAll(o.KeepLogs, 0o755); err != nil {
			return nil, err
		}
		if err := os.WriteFile(filepath.Join(o.KeepLogs, "leadership.log"), nil, 0o644); err != nil {
			return nil, err
		}
	}
	return rep, nil
}

func newTestSoak(t *testing.T, out string, f *fakeRuns, minFaults int, names ...string) *soak {
	return &soak{
		out: out, names: names, run: f.run, stderr: testWriter{t},
		required: func(string) bool { return false },
		o:        campaign.Options{MinFaults: minFaults, Instances: 3},
	}
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(b []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(b)))
	return len(b), nil
}

// A soak keeps one report per backend, resumes where an interruption left it (the backend
// under way has no report, those before it are skipped), runs again a backend whose report
// is shorter than now asked or all of them with redo, and keeps a report that broke a rule,
// with its logs, until redo.
func TestSoakResumes(t *testing.T) {
	out := t.TempDir()
	ctx, cancel := context.WithCancel(t.Context())
	f := &fakeRuns{cancel: map[string]context.CancelFunc{"postgres": cancel}, violating: map[string]bool{"sqlite": true}}
	s := newTestSoak(t, out, f, 20, "file", "sqlite", "postgres", "redis")
	reps, status := s.do(ctx)
	if status != 130 || len(reps) != 2 || !slices.Equal(f.ran, []string{"file", "sqlite", "postgres"}) {
		t.Fatalf("interrupted soak: status %d, %d reports, ran %v", status, len(reps), f.ran)
	}
	for _, name := range []string{"file", "sqlite"} {
		for _, file := range []string{"report.md", "report.json", "timeline-" + name + ".svg"} {
			if _, err := os.Stat(filepath.Join(out, name, file)); err != nil {
				t.Errorf("%s: %v", name, err)
			}
		}
	}
	if _, err := os.Stat(filepath.Join(out, "sqlite", "logs", "leadership.log")); err != nil {
		t.Errorf("the logs of the run that broke a rule: %v", err)
	}
	if _, err := os.Stat(filepath.Join(out, "file", "logs")); err == nil {
		t.Errorf("logs kept for a run that broke no rule")
	}
	for _, name := range []string{"postgres", "postgres.next", "redis"} {
		if _, err := os.Stat(filepath.Join(out, name)); err == nil {
			t.Errorf("%s is there after the interruption during postgres", name)
		}
	}
	md, err := os.ReadFile(filepath.Join(out, "file", "report.md"))
	if err != nil || !strings.Contains(string(md), "go run ./faults --soak --backend file --min-faults 20") {
		t.Errorf("file's report.md does not give its command (%v):\n%s", err, md)
	}

	// Resumed: postgres and redis only; nats, unavailable, is skipped.
	f = &fakeRuns{}
	s = newTestSoak(t, out, f, 20, "file", "sqlite", "postgres", "nats", "redis")
	if reps, status = s.do(t.Context()); status != 0 || len(reps) != 2 || !slices.Equal(f.ran, []string{"postgres", "nats", "redis"}) {
		t.Fatalf("resumed soak: status %d, %d reports, ran %v", status, len(reps), f.ran)
	}

	// More faults asked: every report that broke no rule is short of them.
	f = &fakeRuns{}
	s = newTestSoak(t, out, f, 30, "file", "sqlite", "redis")
	if _, status = s.do(t.Context()); status != 0 || !slices.Equal(f.ran, []string{"file", "redis"}) {
		t.Fatalf("soak of 30 faults: status %d, ran %v; want file and redis again, sqlite's violation kept", status, f.ran)
	}
	if done, err := soakFinished(filepath.Join(out, "file"), 30); !done || err != nil {
		t.Errorf("file's report of 30 faults: finished %v (%v)", done, err)
	}

	// Redo: every backend asked, even finished; sqlite's logs go with its old report.
	f = &fakeRuns{}
	s = newTestSoak(t, out, f, 20, "file", "sqlite")
	s.redo = true
	if _, status = s.do(t.Context()); status != 0 || !slices.Equal(f.ran, []string{"file", "sqlite"}) {
		t.Fatalf("redo: status %d, ran %v", status, f.ran)
	}
	if _, err := os.Stat(filepath.Join(out, "sqlite", "logs")); err == nil {
		t.Errorf("sqlite's old logs are still there after a run that broke no rule")
	}
}

// A report that does not parse is an error, not a finished report nor one to overwrite; a
// report cut short (by --max-duration) is not finished.
func TestSoakFinished(t *testing.T) {
	dir := t.TempDir()
	if done, err := soakFinished(dir, 10); done || err != nil {
		t.Errorf("no report: finished %v (%v)", done, err)
	}
	if err := os.WriteFile(filepath.Join(dir, "report.json"), []byte("{"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := soakFinished(dir, 10); err == nil {
		t.Errorf("a report that does not parse: no error")
	}
	short := &campaign.Report{Backend: "file", Faults: make([]campaign.Fault, 5), Stopped: "reached the maximum duration 1m0s after 5 faults"}
	if err := campaign.WriteFiles(dir, "", []*campaign.Report{short}); err != nil {
		t.Fatal(err)
	}
	if done, err := soakFinished(dir, 10); done || err != nil {
		t.Errorf("a report of 5 faults of 10: finished %v (%v)", done, err)
	}
	if done, err := soakFinished(dir, 5); !done || err != nil {
		t.Errorf("a report of 5 faults of 5: finished %v (%v)", done, err)
	}
}
