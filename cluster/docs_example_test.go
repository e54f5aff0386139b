package cluster_test

import (
	"context"
	"fmt"
	"log"
	"log/slog"
	"time"

	"github.com/leasehold/leasehold/cluster"
	"github.com/leasehold/leasehold/store"
	"github.com/leasehold/leasehold/store/memory"
)

// The Go blocks of README.md and docs/api.md about the per-key lock and the partitions are
// excerpts of the functions below, word for word (cmd/leasehold's TestDocsBlocks checks it):
// they compile with this package's tests, and ExampleLocker_Acquire runs one.

// invoiceRun runs the invoices under the key "invoice-run", on one replica at a time.
func invoiceRun(ctx context.Context, locker *cluster.Locker) error {
	held, err := locker.Acquire(ctx, "invoice-run")
	if err != nil {
		return err
	}
	defer held.Release(context.Background())        // the next Acquire takes it within R
	return runInvoices(held.Context(), held.Term()) // held.Context() ends if the lease is lost
}

func runInvoices(ctx context.Context, term uint64) error {
	if ctx.Err() == nil && term > 0 {
		fmt.Println("invoices run under a fencing token")
	}
	return nil
}

// serveAllTenants serves each partition of the tenants this instance owns, until ctx ends.
func serveAllTenants(ctx context.Context, st store.Store) error {
	p, err := cluster.NewPartitions(cluster.PartitionsConfig{
		Lock: cluster.NewStoreLock(st), LeaseName: "tenants", Partitions: 64,
	})
	if err != nil {
		return err
	}
	p.WhenOwner(func(ctx context.Context, partition int) error {
		return serveTenants(ctx, partition) // until ctx ends: the partition moved or was lost
	}, nil)
	if err := p.Start(ctx); err != nil {
		return err
	}
	defer p.Stop(context.Background()) // releases every partition owned
	<-ctx.Done()
	return nil
}

func serveTenants(ctx context.Context, partition int) error {
	<-ctx.Done()
	return nil
}

func ExampleLocker_Acquire() {
	locker, err := cluster.NewLocker(cluster.LockerConfig{
		Lock:          cluster.NewStoreLock(memory.New()),
		LeaseDuration: 300 * time.Millisecond,
		RenewInterval: 100 * time.Millisecond,
		Logger:        slog.New(slog.DiscardHandler),
	})
	if err != nil {
		log.Fatal(err)
	}
	if err := invoiceRun(context.Background(), locker); err != nil {
		log.Fatal(err)
	}
	// Output: invoices run under a fencing token
}

// ExamplePartitions_WhenOwner is compiled, not run: it would serve until interrupted.
func ExamplePartitions_WhenOwner() {
	if err := serveAllTenants(context.Background(), memory.New()); err != nil {
		log.Fatal(err)
	}
}
