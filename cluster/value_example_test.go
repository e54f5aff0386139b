package cluster_test

import (
	"context"
	"fmt"
	"log"
	"log/slog"

	"github.com/leasehold/leasehold/cluster"
	"github.com/leasehold/leasehold/store/memory"
)

// The leader publishes its address; a client that takes no part in the election reads it.
func ExampleLeader() {
	ctx := context.Background()
	lock := cluster.NewStoreLock(memory.New()) // in production: a store every replica reaches
	led := make(chan struct{}, 1)
	e, err := cluster.NewElector(cluster.ElectorConfig{
		Lock:       lock,
		LeaseName:  "api",
		InstanceID: "api-1",
		Advertise:  "http://10.0.0.7:8080",
		Logger:     slog.New(slog.DiscardHandler),
		Observer: func(ev cluster.Event) {
			if ev.Kind == cluster.BecameLeader {
				led <- struct{}{}
			}
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	if err := e.Start(ctx); err != nil {
		log.Fatal(err)
	}
	<-led

	info, err := cluster.Leader(ctx, lock, "api")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(info.ID, info.Held(), info.Value)

	if err := e.Stop(ctx); err != nil { // releases the lease: nobody leads, nothing published
		log.Fatal(err)
	}
	info, err = cluster.Leader(ctx, lock, "api")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%q %v %q\n", info.ID, info.Held(), info.Value)
	// Output:
	// api-1 true http://10.0.0.7:8080
	// "" false ""
}
