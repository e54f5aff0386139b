package campaign

import (
	"errors"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"
)

// lockerBackends are the backends of the Locker mode's CI run: a store without a network and
// the two the bench holds many keys over.
var lockerBackends = []string{"file", "postgres", "redis"}

// TestCampaignLockerCI is the CI mode of the campaign with every worker holding the lease
// through a cluster.Locker (Options.Locker): the same faults, bounds and checks as
// TestCampaignCI, over lockerBackends, about LEASEHOLD_FAULTS_LOCKER_DURATION each (default
// 30s, beside TestCampaignCI's budget; at least 30 faults). A key lost while its holder acts,
// a Done that closes late (an action outside the holding), a holding whose term does not grow
// or a release that does not hand the key over within R fails it (P1, P2, E6, E7, W7, W8).
// LEASEHOLD_FAULTS_BACKENDS selects a subset, as for TestCampaignCI.
func TestCampaignLockerCI(t *testing.T) {
	if testing.Short() {
		t.Skip("runs worker processes for minutes")
	}
	if runtime.GOOS != "linux" {
		t.Skip("the campaign signals process groups and reads CLOCK_MONOTONIC on Linux")
	}
	duration := 30 * time.Second
	if v := os.Getenv("LEASEHOLD_FAULTS_LOCKER_DURATION"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			t.Fatalf("LEASEHOLD_FAULTS_LOCKER_DURATION: %v", err)
		}
		duration = d
	}
	const minFaults = 30
	only := os.Getenv("LEASEHOLD_FAULTS_BACKENDS")
	var reps []*Report
	for _, name := range lockerBackends {
		if only != "" && !strings.Contains(","+only+",", ","+name+",") {
			continue
		}
		t.Run(name, func(t *testing.T) {
			rep, err := Run(t.Context(), Options{
				Backend: name, Locker: true, Duration: duration, MinFaults: minFaults, Instances: 3,
				LeaseDuration: time.Second, RenewInterval: 250 * time.Millisecond, Slack: DefaultSlack,
				WorkerArgs: []string{"-test.run=^$"},
				Logf:       t.Logf,
			})
			switch {
			case errors.Is(err, ErrUnavailable) && !Required(name):
				t.Skip(err)
			case err != nil:
				t.Fatal(err)
			}
			reps = append(reps, rep)
			if !rep.Locker || rep.Name() != name+"-locker" {
				t.Errorf("report %q (Locker %v): want the Locker mode's", rep.Name(), rep.Locker)
			}
			if len(rep.Faults) < minFaults {
				t.Errorf("%d faults injected, want at least %d", len(rep.Faults), minFaults)
			}
			if rep.Actions.Accepted == 0 {
				t.Errorf("no action reached the fenced resource: the holders did not act")
			}
			for _, v := range rep.Violations {
				t.Errorf("VIOLATION: %s", v)
			}
			var md strings.Builder
			if err := WriteMarkdown(&md, "", []*Report{rep}, nil); err != nil {
				t.Fatal(err)
			}
			t.Logf("\n%s", md.String())
		})
	}
	if dir := os.Getenv("LEASEHOLD_FAULTS_OUT"); dir != "" && len(reps) > 0 {
		if err := WriteFiles(dir, "LEASEHOLD_FAULTS_LOCKER_DURATION="+duration.String()+" go test -run TestCampaignLockerCI ./faults/...", reps); err != nil {
			t.Error(err)
		}
	}
}
