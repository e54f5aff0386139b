//go:build unix

package main

import (
	"context"
	"errors"
	"log/slog"

	"github.com/leasehold/leasehold/cluster"
	"github.com/leasehold/leasehold/cluster/holders"
	"github.com/leasehold/leasehold/internal/leaseconf"
)

// newHoldersElection prepares the election of n holders of the lease of the flags (H1-H3):
// n slots, records NAME/0 to NAME/n-1, of which this instance holds at most one. The slots
// are Electors over the Lock of the cluster service's lease, of --config or of the
// application composed for --store, with its parameters (its Registry is started; its own
// single-leader election is not). observer receives the events of every slot.
func newHoldersElection(ctx context.Context, f *commonFlags, n int, log *slog.Logger, observer func(cluster.Event), usage string) (*election, error) {
	ac, l, r, err := loadRankedConfig(ctx, f, log, usage)
	if err != nil {
		return nil, err
	}
	lock, closeAll, err := ac.openLock(ctx, usage)
	if err != nil {
		_ = ac.release(context.WithoutCancel(ctx))
		return nil, err
	}
	id := ac.es.InstanceID()
	elog := &electionLog{log: log, id: id}
	cfg := cluster.ElectorConfig{
		Lock: lock, LeaseName: ac.lease(), LeaseDuration: l, RenewInterval: r, InstanceID: id,
		Advertise: ac.es.Advertise, Logger: log, Observer: cluster.Observers(observer, elog.observe),
	}
	ac.es.RankConfig(&cfg)
	return holdersElection(cfg, n, elog, ac.where, ac.urlEnv(), func(ctx context.Context) error {
		return errors.Join(closeAll(ctx), ac.release(ctx))
	}, usage)
}

// holdersElection is the election of n holders of cfg's lease; closeAll closes what the
// Lock runs on, once the slots have stopped.
func holdersElection(cfg cluster.ElectorConfig, n int, elog *electionLog, where, urlEnv string, closeAll func(context.Context) error, usage string) (*election, error) {
	h, err := holders.New(cfg, n)
	if err != nil {
		_ = closeAll(context.Background())
		return nil, badInput(usage, "%v", err)
	}
	return &election{
		lease: leaseconf.LeaseName(cfg.LeaseName), id: cfg.InstanceID, l: cfg.LeaseDuration, r: cfg.RenewInterval,
		where: where, urlEnv: urlEnv,
		Cluster: h,
		start:   h.Start,
		elector: func() *cluster.Elector {
			// The slot held, for the views that read one Elector (/status, /healthz).
			if slot, _, ok := h.Slot(); ok {
				return h.Slots()[slot]
			}
			return h.Slots()[0]
		},
		stop: elog.logStop(func(ctx context.Context) error {
			err := h.Stop(ctx)
			return errors.Join(err, closeAll(ctx))
		}),
	}, nil
}
