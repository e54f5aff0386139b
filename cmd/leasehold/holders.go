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
	st, elog, cfg, err := storeElectorConfig(ctx, f, log, observer)
	if err != nil {
		return nil, err
	}
	id := cfg.InstanceID
	h, err := cluster.NewHolders(cfg, n)
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
