//go:build unix

package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strconv"
	"sync"
	"time"

	"github.com/leasehold/leasehold/cluster"
	"github.com/leasehold/leasehold/cluster/partition"
	"github.com/leasehold/leasehold/cmd/leasehold/internal/supervise"
	"github.com/leasehold/leasehold/internal/leaseconf"
)

// partitionsElection is the partitioned election a run --partitions K joins (D6): K
// partitions, records NAME/0 to NAME/K-1, spread over the live members of the roster
// NAME.members.
type partitionsElection struct {
	lease  string
	id     string
	l, r   time.Duration
	where  string // the store (redacted) or the configuration, for messages
	urlEnv string
	p      *partition.Partitions
	close  func(context.Context) error // closes what the Lock runs on, once the partitions have stopped
}

// newPartitionsElection prepares the partitioned election of the lease of the flags, over the
// Lock of the cluster service's lease, of --config or of the application composed for
// --store, with its parameters (its Registry is started; its own single-leader election is
// not). The Lock must keep a roster: a store's and the Kubernetes Lease Lock do.
func newPartitionsElection(ctx context.Context, f *commonFlags, k, maxMoves int, log *slog.Logger, observer func(cluster.Event), usage string) (*partitionsElection, error) {
	cfg := partition.Config{Partitions: k, MaxMoves: maxMoves, Logger: log, Observer: observer}
	pe := &partitionsElection{}
	ac, err := loadElection(ctx, f, log, usage)
	if err != nil {
		return nil, err
	}
	l, r, err := ac.timing(usage)
	if err != nil {
		_ = ac.release(context.WithoutCancel(ctx))
		return nil, err
	}
	lock, closeAll, err := ac.openLock(ctx, usage)
	if err != nil {
		_ = ac.release(context.WithoutCancel(ctx))
		return nil, err
	}
	pe.where, pe.urlEnv, pe.close = ac.where, ac.urlEnv(), func(ctx context.Context) error {
		return errors.Join(closeAll(ctx), ac.release(ctx))
	}
	if _, ok := lock.(cluster.Roster); !ok {
		_ = pe.close(context.WithoutCancel(ctx))
		return nil, badInput(usage, "--partitions needs a roster of the members, which the cluster service %q of %s (%T) does not keep: use a store or Kubernetes cluster service, or --store",
			ac.name, ac.from, ac.svc)
	}
	cfg.Lock, cfg.LeaseName, cfg.LeaseDuration, cfg.RenewInterval, cfg.InstanceID = lock, ac.lease(), l, r, ac.es.InstanceID()
	p, err := partition.New(cfg)
	if err != nil {
		_ = pe.close(context.WithoutCancel(ctx))
		return nil, badInput(usage, "--partitions %d: %v", k, err)
	}
	pe.p, pe.lease, pe.id, pe.l, pe.r = p, leaseconf.LeaseName(cfg.LeaseName), p.InstanceID(), cfg.LeaseDuration, cfg.RenewInterval
	return pe, nil
}

// stop ends the partitioned election: every partition's CMD is stopped through the end of its
// ownership, each partition is released, the roster left. The bound is stopElection's.
func (pe *partitionsElection) stop(grace time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), grace+2*time.Second+(pe.l-pe.r))
	defer cancel()
	err := pe.p.Stop(ctx)
	return errors.Join(err, pe.close(ctx))
}

// runPartitions is run --partitions K: one supervisor per partition runs CMD while this
// instance owns that partition, with LEASEHOLD_PARTITION and the partition's LEASEHOLD_TERM.
// A CMD that exits by itself (without --restart) ends leasehold as it does a leader's: every
// other partition's CMD is stopped, the partitions are released, and leasehold exits with its
// status.
func runPartitions(f *commonFlags, k, maxMoves int, grace time.Duration, graceSet, restart bool, argv []string, log *slog.Logger) (int, error) {
	ctx := context.Background()
	pe, err := newPartitionsElection(ctx, f, k, maxMoves, log, nil, runUsage)
	if err != nil {
		return 0, err
	}
	limit := maxGrace(pe.l, pe.r)
	if !graceSet {
		grace = limit
	} else if grace > limit {
		_ = pe.stop(grace)
		return 0, graceError(grace, pe.l, pe.r)
	}

	reaper := supervise.BecomeSubreaper(log)
	exited := make(chan int, k)
	sups := make([]*supervise.Supervisor, k)
	for i := range sups {
		sups[i] = supervise.New(supervise.Config{
			Argv: argv, Env: cmdEnviron(pe.urlEnv), Lease: pe.lease, ID: pe.id,
			ExtraEnv: []string{"LEASEHOLD_PARTITION=" + strconv.Itoa(i)}, Grace: grace, Restart: restart,
			Reaper: reaper, Log: log.With("partition", i), Exited: exited,
		})
	}
	pe.p.WhenOwner(func(ctx context.Context, partition int) error {
		return sups[partition].Lead(ctx)
	}, nil)

	sigs := make(chan os.Signal, 8)
	supervise.NotifySignals(sigs)
	defer signal.Stop(sigs)

	if err := pe.p.Start(ctx); err != nil {
		_ = pe.stop(grace)
		return 0, fmt.Errorf("start the election: %w", err)
	}
	log.Info("leasehold: joined the partitioned election", "lease", pe.lease, "instance", pe.id, "store", pe.where,
		"leaseDuration", pe.l, "renewInterval", pe.r, "grace", grace, "partitions", k, "maxMoves", max(maxMoves, 1))

	stop := func() error {
		err := pe.stop(grace)
		if err != nil {
			log.Error("leasehold: stop", "error", err)
		} else {
			log.Info("leasehold: left the partitioned election", "lease", pe.lease, "instance", pe.id)
		}
		return err
	}
	for {
		select {
		case sig := <-sigs:
			if !supervise.IsStopSignal(sig) {
				forwardAll(sups, sig)
				continue
			}
			for _, s := range sups {
				s.SetStopSignal(sig)
			}
			log.Info("leasehold: stopping", "signal", sig)
			if stop() != nil {
				return exitFailure, nil
			}
			return exitOK, nil
		case status := <-exited:
			log.Info("leasehold: CMD exited by itself: stopping the other partitions' CMDs and releasing the partitions", "status", status)
			if stop() != nil && status == 0 {
				status = exitFailure
			}
			return status, nil
		}
	}
}

// forwardAll sends sig to the group of every partition's CMD that runs.
func forwardAll(sups []*supervise.Supervisor, sig os.Signal) {
	var wg sync.WaitGroup
	for _, s := range sups {
		wg.Go(func() { s.Forward(sig) })
	}
	wg.Wait()
}

// checkPartitionsFlags refuses what run --partitions K cannot be combined with: a partition
// is handed over by the plan (D7), never for a priority or a health check, no instance gives
// up on it (--try, --wait), and what --holders, --advertise, --hold-at-least and
// --metrics-addr do is per lease, not per partition.
func checkPartitionsFlags(fs *flag.FlagSet, k, maxMoves int) error {
	set := map[string]bool{}
	fs.Visit(func(fl *flag.Flag) { set[fl.Name] = true })
	if set["max-moves"] && !set["partitions"] {
		return badInput(runUsage, "--max-moves is the partitions a member hands over per renew interval: give --partitions K")
	}
	if !set["partitions"] {
		return nil
	}
	if k < 1 {
		return badInput(runUsage, "--partitions %d must be at least 1", k)
	}
	if set["max-moves"] && maxMoves < 1 {
		return badInput(runUsage, "--max-moves %d must be at least 1", maxMoves)
	}
	for _, name := range []string{"holders", "try", "wait", "priority", "stability-window", "health-cmd", "health-url",
		"health-timeout", "health-failures", "advertise", "hold-at-least", "metrics-addr"} {
		if set[name] {
			return badInput(runUsage, "--%s cannot be used with --partitions: each partition is handed over by the assignment of the partitions to the live members alone, and --%s is for a lease of one leader (or of --holders N)", name, name)
		}
	}
	return nil
}
