package cluster_test

import (
	"context"
	"fmt"
	"log"
	"log/slog"
	"time"

	"github.com/leasehold/leasehold/cluster"
	"github.com/leasehold/leasehold/store/memory"
)

// Two electors over one store: the first leads; when it stops cleanly it releases the lease,
// and the other takes over at its next attempt.
func ExampleElector() {
	shared := memory.New() // in production: a store every replica reaches
	newElector := func(id string) *cluster.Elector {
		e, err := cluster.NewElector(cluster.ElectorConfig{
			Lock:          cluster.NewStoreLock(shared),
			InstanceID:    id,
			LeaseDuration: 300 * time.Millisecond,
			RenewInterval: 100 * time.Millisecond,
			Logger:        slog.New(slog.DiscardHandler),
		})
		if err != nil {
			log.Fatal(err)
		}
		return e
	}
	type leader struct {
		id   string
		term uint64 // a fencing token, larger for each leadership (E11)
	}
	leaders := make(chan leader)
	a, b := newElector("a"), newElector("b")
	for _, e := range []*cluster.Elector{a, b} {
		e.WhenLeader(func(ctx context.Context) error {
			term, _ := cluster.TermOf(ctx)
			leaders <- leader{e.InstanceID(), term}
			return nil
		}, nil)
	}
	ctx := context.Background()
	if err := a.Start(ctx); err != nil {
		log.Fatal(err)
	}
	first := <-leaders
	fmt.Println(first.id, "leads")
	if err := b.Start(ctx); err != nil {
		log.Fatal(err)
	}
	fmt.Println("b is leader:", b.IsLeader())
	if err := a.Stop(ctx); err != nil { // releases the lease
		log.Fatal(err)
	}
	next := <-leaders
	fmt.Println(next.id, "leads, in a larger term:", next.term > first.term)
	if err := b.Stop(ctx); err != nil {
		log.Fatal(err)
	}
	// Output:
	// a leads
	// b is leader: false
	// b leads, in a larger term: true
}
