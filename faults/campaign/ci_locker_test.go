package campaign

import (
	"fmt"
	"os"
	"testing"
	"time"
)

// lockerBackends are the backends of the Locker mode's CI run: a store without a network and
// the two the bench holds many keys over.
var lockerBackends = []string{"file", "postgres", "redis"}

// TestCampaignLockerCI is the CI mode of the campaign with every worker holding the lease
// through a locker.Locker (Options.Locker): the same faults, bounds and checks as
// TestCampaignCI (every kind once, then at random up to ciMinFaults or LEASEHOLD_FAULTS_MIN
// faults), over lockerBackends, for at least LEASEHOLD_FAULTS_LOCKER_DURATION each (default
// ciDefaultDuration). A key lost while its holder acts, a Done that closes late (an action
// outside the holding), a holding whose term does not grow or a release that does not hand
// the key over within R fails it (P1, P2, E6, E7, W7, W8). LEASEHOLD_FAULTS_BACKENDS selects
// a subset, as for TestCampaignCI.
func TestCampaignLockerCI(t *testing.T) {
	skipCI(t)
	duration := ciDefaultDuration
	if v := os.Getenv("LEASEHOLD_FAULTS_LOCKER_DURATION"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			t.Fatalf("LEASEHOLD_FAULTS_LOCKER_DURATION: %v", err)
		}
		duration = d
	}
	minFaults := ciMin(t)
	only := os.Getenv("LEASEHOLD_FAULTS_BACKENDS")
	reps := &ciReports{}
	for _, name := range lockerBackends {
		if !selected(only, name) {
			continue
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel() // two at a time: ciRun
			rep := ciRun(t, Options{Backend: name, Locker: true, Duration: duration, MinFaults: minFaults}, minFaults)
			reps.add(rep)
			if !rep.Locker || rep.Name() != name+"-locker" {
				t.Errorf("report %q (Locker %v): want the Locker mode's", rep.Name(), rep.Locker)
			}
		})
	}
	reps.writeWhenDone(t, fmt.Sprintf("LEASEHOLD_FAULTS_LOCKER_DURATION=%v LEASEHOLD_FAULTS_MIN=%d go test -run TestCampaignLockerCI ./faults/...", duration, minFaults))
}
