//go:build unix

package main

import (
	"context"
	"errors"
	"log/slog"

	"github.com/leasehold/leasehold/cluster"
	"github.com/leasehold/leasehold/store"
)

// newHoldersElection prepares the election of n holders of the lease of the flags (H1-H3),
// over --store: n slots, records NAME/0 to NAME/n-1, of which this instance holds at most
// one. observer receives the events of every slot.
func newHoldersElection(ctx context.Context, f *commonFlags, n int, log *slog.Logger, observer func(cluster.Event), usage string) (*election, error) {
	if err := f.makeStateDir(); err != nil {
		return nil, err
	}
	st, err := openStore(ctx, f.store)
	if err != nil {
		return nil, err
	}
	id := f.instanceID
	if id == "" {
		id = cluster.DefaultInstanceID()
	}
	elog := &electionLog{log: log, id: id}
	h, err := cluster.NewHolders(cluster.ElectorConfig{
		Lock: cluster.NewStoreLock(st), LeaseName: f.lease, LeaseDuration: f.leaseDuration,
		RenewInterval: f.renewInterval, InstanceID: id, Logger: log, Observer: cluster.Observers(observer, elog.observe),
	}, n)
	if err != nil {
		store.Close(st)
		return nil, badInput(usage, "%v", err)
	}
	return &election{
		lease: f.lease, id: id, l: f.leaseDuration, r: f.renewInterval, where: store.RedactString(f.store),
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
			return errors.Join(err, store.Close(st))
		}),
	}, nil
}
