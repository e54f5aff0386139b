package campaign

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRaceReportQuoted: a worker's race report, written where raceEnv sends it, is quoted in
// full for a failure message, and a worker without one adds nothing; the caller's GORACE
// options are kept.
func TestRaceReportQuoted(t *testing.T) {
	t.Setenv("GORACE", "halt_on_error=1")
	dir := t.TempDir()
	env := raceEnv(dir)
	if want := "GORACE=halt_on_error=1 log_path=" + filepath.Join(dir, "race"); env != want {
		t.Errorf("raceEnv = %q, want %q", env, want)
	}
	report := "==================\nWARNING: DATA RACE\nWrite at 0x00c000 by goroutine 7:\n"
	if err := os.WriteFile(filepath.Join(dir, "race.4242"), []byte(report), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := raceReport(dir, 4242); !strings.Contains(got, "pid 4242") || !strings.Contains(got, report) {
		t.Errorf("raceReport = %q, want the report of pid 4242", got)
	}
	if got := raceReport(dir, 4243); got != "" {
		t.Errorf("raceReport of a worker without a report = %q, want nothing", got)
	}
	if got := procRace(dir, &proc{}); got != "" {
		t.Errorf("procRace of a worker never started = %q", got)
	}
}
