package campaign

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"
)

// The ranked kinds belong to the Ranked mode's schedule only, and not over a cluster; its first
// round has each of them, and a report of that mode misses them when they did not come.
func TestRankedSchedule(t *testing.T) {
	ranked := []Kind{HealthLeader, Preempt, HealthFollower, HealthAll}
	for _, c := range []struct{ network, cluster bool }{{false, false}, {true, false}, {true, true}} {
		plain, with := kindsFor(c.network, c.cluster), kindsOf(c.network, c.cluster, true)
		for _, k := range ranked {
			if slices.Contains(plain, k) {
				t.Errorf("network %v, cluster %v: %s in the schedule without the Ranked mode", c.network, c.cluster, k)
			}
			if slices.Contains(with, k) == c.cluster {
				t.Errorf("network %v, cluster %v: %s in the Ranked schedule: %v, want %v", c.network, c.cluster, k, !c.cluster, !c.cluster)
			}
		}
	}
	for _, r := range []bool{false, true} {
		d := &driver{o: Options{Ranked: r}, rng: rand.New(rand.NewPCG(1, 2)), unsupported: map[Kind]bool{}}
		var seen []Kind
		for range 300 {
			k := d.pick()
			seen = append(seen, k)
			d.record(Fault{N: len(d.faults) + 1, Kind: k})
		}
		for _, k := range ranked {
			if slices.Contains(seen, k) != r {
				t.Errorf("Ranked %v: %s picked: %v", r, k, !r)
			}
		}
	}
	rep := &Report{Ranked: true}
	for _, k := range kindsFor(false, false) {
		rep.Faults = append(rep.Faults, Fault{Kind: k})
	}
	if got := rep.MissingKinds(); !slices.Equal(got, ranked) {
		t.Errorf("MissingKinds() = %v, want %v", got, ranked)
	}
	if rep.Backend = "file"; rep.Name() != "file-ranked" {
		t.Errorf("Name() = %q, want file-ranked", rep.Name())
	}
}

// The Ranked mode's settings get their defaults, and a combination it does not run is an error
// naming the fields.
func TestRankedOptions(t *testing.T) {
	o := Options{Backend: "file", Ranked: true}
	if err := o.defaults(); err != nil || o.StabilityWindow != RankedWindowFactor*time.Second || o.HealthFailures != RankedHealthFailures {
		t.Errorf("defaults() = %v, window %v, failures %d", err, o.StabilityWindow, o.HealthFailures)
	}
	for _, c := range []struct {
		o    Options
		want string
	}{
		{Options{Backend: "file", Ranked: true, Locker: true}, "Ranked with Locker"},
		{Options{Backend: "file", Ranked: true, Partitions: 4}, "Partitions 4"},
		{Options{Backend: "file", StabilityWindow: time.Second}, "StabilityWindow 1s"},
		{Options{Backend: "file", HealthFailures: 3}, "HealthFailures 3"},
		{Options{Backend: "file", Ranked: true, HealthFailures: -1}, "HealthFailures -1"},
	} {
		if err := c.o.defaults(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: defaults() = %v, want an error naming %q", c.o, err, c.want)
		}
	}
}

// The report of a Ranked campaign says so: its name, the priorities and window, a row per
// ranked kind with its handovers and bound.
func TestRankedReport(t *testing.T) {
	o := rankedOptions()
	f := Fault{N: 1, Kind: HealthLeader, Target: "w3.1", Slot: 3, Start: 1000 * ms1, End: 3000 * ms1}
	rep := analyze(o, false, linesOf(iv("w3.1", 1, 0, 1600), iv("w2.1", 2, 1800, 4000)), nil, []Fault{f}, 0, 4000*ms1, 4000*ms1)
	rep.Faults, rep.Violations = checkRanked(o, linesOf(iv("w3.1", 1, 0, 1600), iv("w2.1", 2, 1800, 4000)), nil, rep.Faults, 4000*ms1)
	var md strings.Builder
	if err := WriteMarkdown(&md, "", []*Report{rep}, nil); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"## file-ranked", "priorities 1 to 3, a stability window of 2s", "| health-leader | 1 | 1 | 800 ms | 800 ms | 800 ms | 1350 ms | 0 |", "| preempt | 0 |", "violations: none"} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("the report lacks %q:\n%s", want, md.String())
		}
	}
}
