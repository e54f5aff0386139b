package cluster_test

import (
	"context"
	"errors"
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

// A per-key lock: one job per key at a time across the replicas. The work runs under the
// Held's context, which ends if the lease is lost; Release lets the next holder in.
func ExampleLocker() {
	shared := memory.New() // in production: a store every replica reaches
	newLocker := func(id string) *cluster.Locker {
		l, err := cluster.NewLocker(cluster.LockerConfig{
			Lock:          cluster.NewStoreLock(shared),
			InstanceID:    id,
			LeaseDuration: 300 * time.Millisecond,
			RenewInterval: 100 * time.Millisecond,
			Logger:        slog.New(slog.DiscardHandler),
		})
		if err != nil {
			log.Fatal(err)
		}
		return l
	}
	a, b := newLocker("a"), newLocker("b")
	ctx := context.Background()

	held, err := a.Acquire(ctx, "report-2026-12")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("a holds", held.Key())

	// b gives up at once on a key a live holder renews.
	_, err = b.TryAcquire(ctx, "report-2026-12")
	fmt.Println("b:", errors.Is(err, cluster.ErrHeld))

	// The job: stop when held.Done() closes (the lease is lost), here done at once.
	select {
	case <-held.Done():
		fmt.Println("lost")
	default:
	}
	if err := held.Release(ctx); err != nil {
		log.Fatal(err)
	}

	next, err := b.Acquire(ctx, "report-2026-12") // taken within R of the release
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("b holds it, with a larger fencing token:", next.Term() > held.Term())
	if err := next.Release(ctx); err != nil {
		log.Fatal(err)
	}
	// Output:
	// a holds report-2026-12
	// b: true
	// b holds it, with a larger fencing token: true
}
