package campaign

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"

	"github.com/leasehold/leasehold/cluster"
	"github.com/leasehold/leasehold/cluster/holders"
	"github.com/leasehold/leasehold/cluster/partition"
	"github.com/leasehold/leasehold/internal/proctest"
)

// The partitions mode's worker settings (Options.Partitions): the number of partitions, and the
// directory of the partitions' logs.
const (
	envPartitions = "LEASEHOLD_FAULTS_PARTITIONS"
	envPartsDir   = "LEASEHOLD_FAULTS_PARTITIONS_DIR"
)

// partitionLog is the log of partition p's leadership lines in dir.
func partitionLog(dir string, p int) string {
	return filepath.Join(dir, fmt.Sprintf("partition-%d.log", p))
}

// partsLock is the worker's Lock for a partitioned election: Get, Create and Update through the
// watch faults (withWatchFaults), as the Elector worker's, the watch too when the store has
// one, and the store's roster, which the watch faults' wrapper does not carry.
type partsLock struct {
	cluster.Lock
	cluster.Roster
	w cluster.Watcher // nil: the store cannot watch
}

var _ cluster.Watcher = partsLock{}

func (l partsLock) Watch(ctx context.Context, name string, fn func(cluster.Record, error)) error {
	if l.w == nil {
		return fmt.Errorf("faults worker: %w", cluster.ErrWatchUnsupported)
	}
	return l.w.Watch(ctx, name, fn)
}

// runPartitionsWorker runs a partition.Partitions of K partitions of the lease's name. Partition 0
// stands for the lease in the runner: its lines go to the shared log and stdout (the runner
// finds its owner, kills or pauses it, and times its takeovers), and its owner acts on the
// fenced resource with the partition's term while it owns it. Every partition's lines, 0's
// included, go to a log of their own (partitionLog), which the runner follows to settle with
// every partition owned (partitionOwners) and checks afterwards for two owners at once, terms
// that do not grow (checkPartitions) and the takeover bounds (checkPartitionTakeovers). On
// SIGTERM it stops, handing its partitions over, and writes the stopped line.
func runPartitionsWorker(w *proctest.Worker, faulty, store cluster.Lock) int {
	k, err := strconv.Atoi(os.Getenv(envPartitions))
	if err != nil || k < 1 {
		return w.Fail("%s=%q: want a number of partitions", envPartitions, os.Getenv(envPartitions))
	}
	roster, ok := store.(cluster.Roster)
	if !ok {
		return w.Fail("the store's Lock keeps no roster: partitions need one")
	}
	lock := partsLock{Lock: faulty, Roster: roster}
	lock.w, _ = faulty.(cluster.Watcher)

	dir := os.Getenv(envPartsDir)
	observers := make(map[string]func(cluster.Event), k)
	for p := range k {
		f, err := os.OpenFile(partitionLog(dir, p), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
		if err != nil {
			return w.Fail("%s: %v", envPartsDir, err)
		}
		defer f.Close()
		obs := proctest.LogObserver(w.ID, w.LeaseDuration, w.RenewInterval, f)
		if p == 0 {
			obs = cluster.Observers(obs, w.Observer())
		}
		// The Observer is called one event at a time: the map is only read once built.
		observers[holders.SlotName(lock, w.Lease, p, k)] = obs
	}
	// The attempts that say whether this worker is in touch with the store are its member
	// lease's, whose events name that lease rather than a partition: it renews every
	// partition this worker owns, and runs whether or not it owns any.
	attempts := attemptsObserver(w)
	parts, err := partition.New(partition.Config{
		Lock: lock, LeaseName: w.Lease, Partitions: k,
		LeaseDuration: w.LeaseDuration, RenewInterval: w.RenewInterval, InstanceID: w.ID,
		Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
		Observer: func(ev cluster.Event) {
			if obs := observers[ev.Lease]; obs != nil {
				obs(ev)
			} else {
				attempts(ev)
			}
		},
	})
	if err != nil {
		return w.Fail("%v", err)
	}
	act := newActor(w.ID, os.Getenv(envResource))
	parts.WhenOwner(func(ctx context.Context, p int) error {
		if p != 0 {
			<-ctx.Done()
			return nil
		}
		// Owned checks each partition's deadline as IsLeader does (W7).
		return act.lead(ctx, func() bool { return slices.Contains(parts.Owned(), 0) })
	}, nil)
	ctx := context.Background()
	if err := parts.Start(ctx); err != nil {
		return w.Fail("%v", err)
	}
	w.Ready()
	<-w.Term()
	stopCtx, cancel := context.WithTimeout(ctx, w.LeaseDuration)
	defer cancel()
	return w.Stopped(parts.Stop(stopCtx))
}
