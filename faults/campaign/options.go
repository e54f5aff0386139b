package campaign

import (
	"fmt"
	"time"
)

// Options configure one campaign over one backend. Zero values take the defaults: 3
// instances, L = 1s, R = 250ms, a slack of 100ms, 60s of faults, every kind once.
type Options struct {
	Backend string // a name of Backends(), e.g. "file", "postgres"
	// Duration is how long faults are injected; the run goes on until MinFaults faults, and
	// until every kind of the schedule was injected once (its first round), even past it.
	Duration  time.Duration
	MinFaults int // faults to inject at least, even past Duration
	// MaxDuration, when not 0, ends the faults after this long even short of MinFaults: a long
	// run then still gives its report (Report.Stopped says so).
	MaxDuration   time.Duration
	Instances     int           // worker processes alive at any time
	Seed          uint64        // of the fault schedule; 0 picks one (reported)
	LeaseDuration time.Duration // L
	RenewInterval time.Duration // R
	// Locker makes every worker hold the lease through a locker.Locker, acquiring it again
	// each time it is lost, instead of running an Elector (runLockerWorker).
	Locker bool
	// Partitions, when not 0, makes every worker run a partition.Partitions of that many
	// partitions of the lease (runPartitionsWorker): partition 0 stands for the lease in the
	// faults and their bounds, and every partition is checked for two owners at once and
	// terms that do not grow (checkPartitions), and for the takeover bounds after a fault of
	// the worker that held it (checkPartitionTakeovers); the runner settles only once every
	// partition has an owner.
	Partitions int
	// Ranked gives every worker a priority of its own, its slot's number (the highest slot
	// ranks first), a stability window and a health check the runner makes fail or pass
	// (Q1-Q4, U1-U3), and adds the ranked kinds of fault (HealthLeader, Preempt,
	// HealthFollower) to the schedule, each held to the bound its rules give (ranked.go).
	Ranked bool
	// StabilityWindow is the workers' ElectorConfig.StabilityWindow in the Ranked mode:
	// RankedWindowFactor × LeaseDuration by default.
	StabilityWindow time.Duration
	// HealthFailures is the workers' ElectorConfig.HealthFailures in the Ranked mode:
	// RankedHealthFailures by default.
	HealthFailures int
	// Slack is added to every takeover bound: process scheduling on a loaded host and the new
	// leader's own read and write. DefaultSlack by default.
	Slack time.Duration
	// Executable is the worker program: a binary that calls MaybeWorker first. Default: this
	// process's own executable (os.Executable). WorkerArgs are passed to it (a test binary
	// re-executing itself passes -test.run=^$).
	Executable string
	WorkerArgs []string
	// KeepLogs, when set, is a directory where a campaign that broke a rule (a bound among
	// them) leaves its logs before its working directory is removed: every *.log file under it
	// (the leadership log, the logs of the server processes a cluster backend started, by
	// their paths there) and the end of each worker's stderr (workers.log). The servers the
	// machine runs keep their logs where the system puts them.
	KeepLogs string

	// gate, when set, is shared with campaigns run beside this one in the same process (the
	// CI tests'): see gate.
	gate *gate
	// Logf, when set, receives one line per fault and per notable event while the campaign runs.
	Logf func(format string, args ...any)
}

// DefaultSlack is the slack of the CI mode: 100ms covers the scheduling of a new
// leader's process and its read and compare-and-swap on a local server, on a loaded two-core
// machine. It is added to the bounds L + R (crash, pause, partition) and R (clean stop).
const DefaultSlack = 100 * time.Millisecond

func (o *Options) defaults() error {
	if o.Instances == 0 {
		o.Instances = 3
	}
	if o.LeaseDuration == 0 {
		o.LeaseDuration = time.Second
	}
	if o.RenewInterval == 0 {
		o.RenewInterval = 250 * time.Millisecond
	}
	// A store that takes no shorter R than the one asked for gets its own, and L as much
	// longer (Timing): the gcs backend's campaigns run with R = 1s.
	o.LeaseDuration, o.RenewInterval = Timing(o.Backend, o.LeaseDuration, o.RenewInterval)
	if o.Slack == 0 {
		o.Slack = DefaultSlack
	}
	if o.Ranked && o.StabilityWindow == 0 {
		o.StabilityWindow = RankedWindowFactor * o.LeaseDuration
	}
	if o.Ranked && o.HealthFailures == 0 {
		o.HealthFailures = RankedHealthFailures
	}
	if o.Duration == 0 {
		o.Duration = 60 * time.Second
	}
	if o.Logf == nil {
		o.Logf = func(string, ...any) {}
	}
	switch {
	case o.Instances < 2:
		return fmt.Errorf("campaign: Instances %d: at least 2 are needed for a takeover", o.Instances)
	case o.LeaseDuration <= 0 || o.RenewInterval <= 0 || o.RenewInterval >= o.LeaseDuration:
		return fmt.Errorf("campaign: LeaseDuration %v and RenewInterval %v: want 0 < R < L", o.LeaseDuration, o.RenewInterval)
	case o.Partitions < 0 || (o.Partitions > 0 && o.Locker):
		return fmt.Errorf("campaign: Partitions %d (Locker %v): want 0, or a number of partitions without the Locker mode", o.Partitions, o.Locker)
	case o.Ranked && (o.Locker || o.Partitions > 0):
		return fmt.Errorf("campaign: Ranked with Locker %v or Partitions %d: the ranked mode runs an Elector per worker, without the Locker or partitions modes", o.Locker, o.Partitions)
	case !o.Ranked && (o.StabilityWindow != 0 || o.HealthFailures != 0):
		return fmt.Errorf("campaign: StabilityWindow %v and HealthFailures %d apply to the Ranked mode only", o.StabilityWindow, o.HealthFailures)
	case o.StabilityWindow < 0 || o.HealthFailures < 0:
		return fmt.Errorf("campaign: StabilityWindow %v and HealthFailures %d must not be negative", o.StabilityWindow, o.HealthFailures)
	case o.Duration < 0 || o.MinFaults < 0 || o.Slack < 0 || o.MaxDuration < 0:
		return fmt.Errorf("campaign: Duration %v, MinFaults %d, MaxDuration %v and Slack %v must not be negative", o.Duration, o.MinFaults, o.MaxDuration, o.Slack)
	}
	if _, ok := backends[o.Backend]; !ok {
		return fmt.Errorf("campaign: unknown backend %q (known: %v)", o.Backend, Backends())
	}
	return nil
}
