package partition_test

import (
	"context"
	"fmt"
	"log"
	"log/slog"
	"time"

	"github.com/leasehold/leasehold/cluster"
	"github.com/leasehold/leasehold/cluster/partition"
	"github.com/leasehold/leasehold/store/memory"
)

// Two instances share four partitions: a starts alone and owns them all; b joins, and a hands
// two over, each once its work for that partition has returned. Each ownership has its own
// term.
func ExamplePartitions() {
	shared := memory.New() // in production: a store every replica reaches
	newMember := func(id string) *partition.Partitions {
		p, err := partition.New(partition.Config{
			Lock:          cluster.NewStoreLock(shared),
			LeaseName:     "tenants",
			Partitions:    4,
			InstanceID:    id,
			LeaseDuration: 300 * time.Millisecond,
			RenewInterval: 100 * time.Millisecond,
			MaxMoves:      2,
			Logger:        slog.New(slog.DiscardHandler),
		})
		if err != nil {
			log.Fatal(err)
		}
		p.WhenOwner(func(ctx context.Context, partition int) error {
			<-ctx.Done() // work on the partition until its ownership ends
			return nil
		}, nil)
		return p
	}
	owned := func(p *partition.Partitions, n int) []int {
		for len(p.Owned()) != n {
			time.Sleep(10 * time.Millisecond)
		}
		return p.Owned()
	}
	ctx := context.Background()
	a, b := newMember("a"), newMember("b")
	if err := a.Start(ctx); err != nil {
		log.Fatal(err)
	}
	fmt.Println("a owns", owned(a, 4))
	if err := b.Start(ctx); err != nil {
		log.Fatal(err)
	}
	fmt.Println("b owns", len(owned(b, 2)), "partitions, a", len(owned(a, 2)))
	for _, p := range []*partition.Partitions{b, a} {
		if err := p.Stop(ctx); err != nil {
			log.Fatal(err)
		}
	}
	// Output:
	// a owns [0 1 2 3]
	// b owns 2 partitions, a 2
}
