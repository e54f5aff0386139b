package cluster

import (
	"flag"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/leasehold/leasehold/internal/bubble"
)

// The randomized fault test: 3 to 5 electors over one memory store, each through a faultStore of
// its own (latency below and above L-R, errors, hangs, hangs that ignore ctx until healed,
// write-then-hang, partitions), crashes (node.crash) and restarts under new IDs, Stops and
// cancelled Start contexts, for many fake hours per seed. At every step (and at every instant a
// bound or a crashed leader's deadline falls) it checks:
//   - safety: at most one IsLeader, crashed instances included (W7); leaderships and fn runs of
//     different instances never overlap; terms grow when the holder changes (W8); every write
//     to the record is a create, renewal, takeover or release as E2 and E7 allow;
//   - timing, from the Observer events: a leadership ends at the latest, and on a deadline
//     exactly, (L+R)/2 after the start of its last successful attempt (E5); a timeout comes
//     after exactly L-R (E3); a failed attempt ends a leadership at once (E4); a takeover
//     comes at least L after the revision it replaces was written (E6);
//   - liveness: while nobody leads, for every live instance whose store has been clean (no
//     fault, no faulty call in flight) since some time: someone leads by L after it read the
//     holder's current revision on a clean store (E6), by R after the lease was released, or is
//     absent, or its own (E7, E1), and by L+R after the later of the last write, its start and
//     its clean time otherwise;
//   - Stop (E7, W3): a release is only tried while Stop runs and after every callback returned;
//     a leader with a clean store and quick callbacks releases at once; a Stop that returns nil
//     leaves the lease unheld and every fn paired with a deregistered.
//
// The configuration marked ranked gives the instances priorities and stability windows (Q1-Q4):
// followers write preemption requests, which keep the holder and the term, and holders answer
// them with a release reserved for the asker, written once their callbacks have returned; the
// bounds hold with that reservation (2R for the others: they see the release within R and
// wait R), a holder asked to hand over being left out (its callbacks may outlast any bound).
//
// The configuration marked clocks gives each instance a clock of its own rate, up to just under
// the ratio M1 allows, and moves the instances' wall clocks by an hour forward and back (M2):
// every check above holds on each instance's own L and R (TestRandomClocksBeyondTheBound shows
// them failing once the rates are further apart).
//
// The bounds are exact in fake time: slack would hide an off-by-one in the engine.
//
// Replay one seed: go test -race -run TestRandomFaults -random.seed=N ./cluster/
// More seeds:      go test -race -run TestRandomFaults -random.seeds=200 ./cluster/
//                  (or LEASEHOLD_RANDOM_SEEDS=200); -random.hours=H changes the fake duration.
// A range:         -random.first=501 -random.seeds=100 runs seeds 501 to 600 (or
//                  LEASEHOLD_RANDOM_FIRST=501), so that a long sweep can run in chunks, one
//                  process after another; without -race a seed costs several times less.

var (
	flagRandomSeeds = flag.Int("random.seeds", 0, "TestRandomFaults: seeds per configuration (default $LEASEHOLD_RANDOM_SEEDS, else each configuration's own)")
	flagRandomSeed  = flag.Uint64("random.seed", 0, "TestRandomFaults: run this seed only")
	flagRandomFirst = flag.Uint64("random.first", 0, "TestRandomFaults: number of the first seed (default $LEASEHOLD_RANDOM_FIRST, else 1)")
	flagRandomHours = flag.Float64("random.hours", 0, "TestRandomFaults: fake hours per seed (default: each configuration's own)")
)

type randomConfig struct {
	name  string
	l, r  time.Duration
	hours float64 // fake hours per seed
	steps int     // steps are R/steps to 5R/steps long
	seeds int     // seeds in the normal run
	// ranked gives each instance a priority from -1 to 2 and a stability window from L to 3L
	// (Q1-Q4): followers then write preemption requests and leaders hand over to them.
	ranked bool
	// fastest, when set, gives each instance a clock of its own rate (M1). An instance
	// configured with l and r whose clock runs k times as fast as the fake clock behaves, in
	// fake time, as one configured with l/k and r/k on the fake clock: so each instance gets
	// an L drawn from fastest to l (whole milliseconds, the precision of the record's lease
	// duration), k = l/L, and R = r/k. The durations it writes are scaled back by k on their
	// way to the store, those it reads by 1/k, so that the record holds l as every instance
	// was configured with.
	fastest time.Duration
	// wallJumps moves the wall clock of a random live instance by an hour forward or back
	// every R to 4L (M2), whatever its rate, through the Elector's wallSkew: every wall time
	// it writes moves. No decision may change: every check above holds to the nanosecond.
	wallJumps bool
	// failed, when set, is told of the first failed check instead of the test, once every
	// instance has been ended; it must not return (a test of the checks panics).
	failed func(msg string)
}

func randomConfigs() []randomConfig {
	cs := []randomConfig{
		// Steps of 50 to 250 ms.
		{name: "L15s-R5s", l: 15 * time.Second, r: 5 * time.Second, hours: 24, steps: 100, seeds: 4},
		// The others run as many renew intervals (17,280) as 24 hours at R = 5 s, with steps
		// of R/50 to R/10: at 24 fake hours L1s-R250ms would cost 20 times more, too slow
		// for the normal run (-random.hours=24 does it). Here the timeout L-R ends after the
		// deadline (L+R)/2, so an attempt can succeed too late to lead (E5).
		{name: "L1s-R250ms", l: time.Second, r: 250 * time.Millisecond, hours: 1.2, steps: 50, seeds: 3},
		// L is no multiple of R: a follower's attempt at the expiry (E6) falls between two
		// regular ones.
		{name: "L10s-R3s", l: 10 * time.Second, r: 3 * time.Second, hours: 14.4, steps: 50, seeds: 3},
		// Priorities: preemptions beside every fault above.
		{name: "L15s-R5s-ranked", l: 15 * time.Second, r: 5 * time.Second, hours: 24, steps: 100, seeds: 3, ranked: true},
		// Clocks that run apart in rate, up to just under the bound M1 allows: a clock at
		// most 2L/(L+R) = 1.5 times another's rate, the fastest an L of (L+R)/2 + 1 ms.
		// Their wall clocks jump by an hour, and they have priorities: preemption requests
		// carry the asker's wall time.
		{name: "L15s-R5s-clocks", l: 15 * time.Second, r: 5 * time.Second, hours: 24, steps: 100, seeds: 3, ranked: true,
			fastest: 10*time.Second + time.Millisecond, wallJumps: true},
	}
	if *flagRandomHours > 0 {
		for i := range cs {
			cs[i].hours = *flagRandomHours
		}
	}
	return cs
}

// randomSeedList returns the seeds to run: n unless the flags or the environment say
// otherwise (bubble.Seeds).
func randomSeedList(t *testing.T, n int) []uint64 {
	return bubble.Seeds(t, n, *flagRandomSeed, *flagRandomSeeds, *flagRandomFirst)
}

// E1-E8, W3-W5, W7, W8 under random faults. Every seed of every configuration runs in
// parallel; each configuration logs what its seeds covered (go test -v).
func TestRandomFaults(t *testing.T) {
	for _, cfg := range randomConfigs() {
		t.Run(cfg.name, func(t *testing.T) {
			t.Parallel()
			total := newRandomStats()
			t.Cleanup(func() { t.Logf("%s: %s", cfg.name, total) }) // after the seeds' subtests
			for _, seed := range randomSeedList(t, cfg.seeds) {
				t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
					t.Parallel()
					st := newRandomStats()
					synctest.Test(t, func(t *testing.T) { runRandomSeed(t, cfg, seed, st) })
					total.add(st)
				})
			}
		})
	}
}
