package campaign

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"
)

// partitionsBackends are the backends of the partitions mode's CI run: a store without a
// network and one with a network and a watch.
var partitionsBackends = []string{"file", "postgres"}

// ciPartitions is the number of partitions of the partitions mode's CI run: more than the 3
// instances, so that each owns several and a crash moves several.
const ciPartitions = 8

// TestCampaignPartitionsCI is the CI mode of the campaign with every worker running a
// partition.Partitions of ciPartitions partitions (Options.Partitions): partition 0 stands for
// the lease, with TestCampaignCI's faults, bounds and checks of actions; every partition is
// checked for two owners at once, for terms that do not grow, and for the takeover bounds of
// a crashed or stopped owner (D1, D8, W8, E6, E7), over partitionsBackends, every kind once,
// then at random up to ciMinFaults (or LEASEHOLD_FAULTS_MIN) faults and
// LEASEHOLD_FAULTS_PARTITIONS_DURATION each (default ciDefaultDuration).
// LEASEHOLD_FAULTS_BACKENDS selects a subset, as for TestCampaignCI.
func TestCampaignPartitionsCI(t *testing.T) {
	skipCI(t)
	duration := ciDefaultDuration
	if v := os.Getenv("LEASEHOLD_FAULTS_PARTITIONS_DURATION"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			t.Fatalf("LEASEHOLD_FAULTS_PARTITIONS_DURATION: %v", err)
		}
		duration = d
	}
	minFaults := ciMin(t)
	only := os.Getenv("LEASEHOLD_FAULTS_BACKENDS")
	for _, name := range partitionsBackends {
		if !selected(only, name) {
			continue
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel() // two at a time: ciRun
			rep := ciRun(t, Options{Backend: name, Partitions: ciPartitions, Duration: duration, MinFaults: minFaults}, minFaults)
			if rep.Partitions != ciPartitions || rep.Name() != name+"-partitions" {
				t.Errorf("report %q (Partitions %d): want the partitions mode's, %d partitions", rep.Name(), rep.Partitions, ciPartitions)
			}
			// Every partition is owned at least once, and each fault moves some.
			if rep.PartitionLeaderships < ciPartitions+len(rep.Faults)/2 {
				t.Errorf("%d ownerships of the %d partitions checked over %d faults: the partitions did not move", rep.PartitionLeaderships, ciPartitions, len(rep.Faults))
			}
			// The first round of faults has every kind, a kill of partition 0's owner among them.
			if len(rep.PartitionTakeovers) == 0 {
				t.Errorf("no partition's takeover was held to a bound over %d faults", len(rep.Faults))
			}
			t.Logf("%s: %d faults, %d ownerships of %d partitions checked, %d takeovers of partitions bounded (%s), %d actions accepted",
				rep.Name(), len(rep.Faults), rep.PartitionLeaderships, rep.Partitions, len(rep.PartitionTakeovers), longestTakeovers(rep.PartitionTakeovers), rep.Actions.Accepted)
		})
	}
}

// longestTakeovers describes the longest of the takeovers under each bound.
func longestTakeovers(tos []PartitionTakeover) string {
	longest := map[time.Duration]PartitionTakeover{}
	for _, to := range tos {
		if l, ok := longest[to.Bound]; !ok || to.Took > l.Took {
			longest[to.Bound] = to
		}
	}
	var out []string
	for _, to := range longest {
		out = append(out, fmt.Sprintf("longest within %v: %v, partition %d after fault %d", to.Bound, to.Took.Round(time.Millisecond), to.Partition, to.Fault))
	}
	slices.Sort(out)
	return strings.Join(out, "; ")
}
