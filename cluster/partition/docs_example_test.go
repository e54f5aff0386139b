package partition_test

import (
	"context"
	"log"

	"github.com/leasehold/leasehold/cluster"
	"github.com/leasehold/leasehold/cluster/partition"
	"github.com/leasehold/leasehold/store"
	"github.com/leasehold/leasehold/store/memory"
)

// The Go blocks of README.md and docs/api.md about the partitions are excerpts of the
// functions below, word for word (cmd/leasehold's TestDocsBlocks checks it): they compile with
// this package's tests.

// serveAllTenants serves each partition of the tenants this instance owns, until ctx ends.
func serveAllTenants(ctx context.Context, st store.Store) error {
	p, err := partition.New(partition.Config{
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

// ExamplePartitions_WhenOwner is compiled, not run: it would serve until interrupted.
func ExamplePartitions_WhenOwner() {
	if err := serveAllTenants(context.Background(), memory.New()); err != nil {
		log.Fatal(err)
	}
}
