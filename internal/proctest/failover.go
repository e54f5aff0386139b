package proctest

import (
	"context"
	"log/slog"
	"os"

	"github.com/leasehold/leasehold/cluster"
	"github.com/leasehold/leasehold/store"
)

// MaybeWorker runs Run's worker and exits when the environment says this process is one
// (Run starts it); otherwise it returns at once. Call it first in TestMain, in a test
// package that imports the store backend the worker must open.
//
// The worker opens the store with store.Open, runs a cluster.Elector over
// cluster.NewStoreLock of it, and reports each leadership event on stdout and in the shared
// log (Worker.RunElector, Worker.Observer).
func MaybeWorker() { ServeWorker("proctest", runWorker) }

func runWorker(w *Worker) int {
	ctx := context.Background()
	s, err := store.Open(ctx, w.URL)
	if err != nil {
		return w.Fail("%s: %v", EnvURL, err)
	}
	defer store.Close(s)
	el, err := cluster.NewElector(cluster.ElectorConfig{
		Lock:          cluster.NewStoreLock(s),
		LeaseName:     w.Lease,
		LeaseDuration: w.LeaseDuration,
		RenewInterval: w.RenewInterval,
		InstanceID:    w.ID,
		Logger:        slog.New(slog.NewTextHandler(os.Stderr, nil)),
		Observer:      w.Observer(),
	})
	if err != nil {
		return w.Fail("%v", err)
	}
	return w.RunElector(ctx, el)
}
