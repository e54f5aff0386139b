// Package gocronlock runs the jobs of a gocron v2 scheduler (github.com/go-co-op/gocron/v2)
// on one replica of a fleet at a time, over a leasehold lease: an [Elector] for
// gocron.WithDistributedElector, or a [Locker] for gocron.WithDistributedLocker and
// gocron.WithDistributedJobLocker.
//
// # Which one
//
// An [Elector] makes every job run on the leader only: one lease, renewed every R by the
// leader, whatever the number of jobs. gocron asks it once per run, and a run whose answer
// is an error is skipped. After the leader crashes, its lease is taken over within L + R of
// its last renewal (E6 in docs/design.md) and the jobs run on the new leader from its first
// tick on; the ticks in between are skipped.
//
// A [Locker] spreads the runs over the fleet: each run takes its job's key with a try-lock
// (locker.Locker.TryAcquire), and the replica that gets it runs the tick while the others
// skip it. Keys cost nothing while no job runs, and a replica that is slow or stuck holds
// only the jobs it runs. It needs one more setting, [LockerConfig.Hold], and the jobs'
// schedules aligned across replicas: cron jobs (gocron.CronJob), or duration jobs started at
// a common instant (gocron.WithStartAt). Choose the Elector unless the jobs must be spread,
// or are few and rare enough that no lease should be renewed between their runs.
//
// # One run per tick
//
// Every replica's scheduler fires each tick. Under the Elector, the one replica that leads
// when it fires runs it: at most one instance leads at any instant (IsLeader turns false at
// the leadership's deadline, before any other instance can take the lease over). A tick can
// run twice only if leadership passes from one replica to another between the instants two
// replicas fire that same tick: a clean handover (Stop, which releases the lease) is that
// fast, a crash takes L + R.
//
// Under a Locker, a lock released as soon as its run ends would let a replica whose tick
// fires a little later take the key and run the same tick again: the classic flaw of a
// distributed lock around scheduled jobs. So a run's key is kept for Hold after it was taken,
// even when the job returns sooner: Unlock returns at once, and the key is released at the
// later of Unlock and the instant it was taken plus Hold. Another replica's try-lock gives up
// on a live holder once it sees the holder renew its record, within R of its first read;
// with the key held for Hold, it cannot see the key released first. Each tick then runs at
// most once when
//
//	skew + R + δ < Hold < period − skew − δ
//
// where period is the shortest interval between two ticks of a job, skew the largest gap
// between the instants two replicas fire one tick (their clocks' offset plus the
// scheduling delay), and δ the store's latency. Below the lower bound a late replica may run
// a tick again; above the upper one the holder's next tick finds the key still its own and is
// skipped there, or taken by another replica once released. NewLocker refuses a Hold
// not above R.
//
// A crashed holder's key is not released. A try-lock that read its record waits for its
// expiry, L after that first read (E6), and takes it; but the crashed holder may have run
// that very tick, and a Lock that took its key more than (L+R)/2 after it was called (only a
// wait for an expiry takes that long) gives the key back at once and skips the run
// ([ErrLate]). The ticks meanwhile are skipped (a replica skips a tick while it is still
// trying to take that key), and the first tick after that takeover runs, on one replica:
// within about L + 2 periods of the crash. No tick runs twice, and none runs late.
//
// In both cases, gocron checks before a run starts and never stops a run once started: a
// run that outlasts the lease or the leadership it started under is not cancelled.
package gocronlock
