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

// An observer of a lease, which takes no part in its election, sees each change of holder or
// term: none yet, a's leadership, its release. a's renewals in between are not delivered.
func ExampleObserve() {
	lock := cluster.NewStoreLock(memory.New()) // in production: the store the instances share
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	changes, err := cluster.Observe(ctx, cluster.ObserveConfig{Lock: lock, Interval: 10 * time.Millisecond})
	if err != nil {
		log.Fatal(err)
	}
	// Terms are fencing tokens above a floor read from the wall clock (E11): print whether
	// the term is the one first seen held, not its value.
	var first uint64
	show := func(rec cluster.Record) {
		if first == 0 {
			first = rec.Term
		}
		switch {
		case rec.Revision == "":
			fmt.Println("no record")
		case rec.Holder == "":
			fmt.Printf("released, same term: %v\n", rec.Term == first)
		default:
			fmt.Printf("%s holds it, term above 0: %v\n", rec.Holder, rec.Term > 0)
		}
	}
	show(<-changes)

	a, err := cluster.NewElector(cluster.ElectorConfig{
		Lock: lock, InstanceID: "a", LeaseDuration: 300 * time.Millisecond, RenewInterval: 20 * time.Millisecond,
		Logger: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		log.Fatal(err)
	}
	if err := a.Start(ctx); err != nil {
		log.Fatal(err)
	}
	show(<-changes)
	time.Sleep(100 * time.Millisecond) // a renews five times: nothing is delivered
	if err := a.Stop(ctx); err != nil {
		log.Fatal(err)
	}
	show(<-changes)
	cancel()
	for range changes { // closed once ctx has ended
	}
	// Output:
	// no record
	// a holds it, term above 0: true
	// released, same term: true
}
