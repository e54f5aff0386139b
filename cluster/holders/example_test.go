package holders_test

import (
	"context"
	"fmt"
	"io"
	"log"
	"log/slog"
	"time"

	"github.com/leasehold/leasehold/cluster"
	"github.com/leasehold/leasehold/cluster/holders"
	"github.com/leasehold/leasehold/store/memory"
)

// Two holders of the lease "batch": this instance comes to hold one of the two slots, and its
// fn learns which.
func ExampleNew() {
	h, err := holders.New(cluster.ElectorConfig{
		Lock:          cluster.NewStoreLock(memory.New()),
		LeaseName:     "batch",
		LeaseDuration: 300 * time.Millisecond,
		RenewInterval: 100 * time.Millisecond,
		Logger:        slog.New(slog.NewTextHandler(io.Discard, nil)),
	}, 2)
	if err != nil {
		log.Fatal(err)
	}
	held := make(chan int, 1)
	h.WhenLeader(func(ctx context.Context) error {
		slot, _ := holders.SlotOf(ctx) // 0 or 1: the record batch/0 or batch/1
		select {
		case held <- slot:
		default:
		}
		<-ctx.Done()
		return nil
	}, nil)
	if err := h.Start(context.Background()); err != nil {
		log.Fatal(err)
	}
	defer h.Stop(context.Background()) // releases the slot held
	slot := <-held
	fmt.Println("holds one slot of two:", slot == 0 || slot == 1)
	// Output: holds one slot of two: true
}
