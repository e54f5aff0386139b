package locker_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"log/slog"
	"time"

	"github.com/leasehold/leasehold/cluster"
	"github.com/leasehold/leasehold/cluster/locker"
	"github.com/leasehold/leasehold/store/memory"
)

// The Go blocks of README.md and docs/api.md about the per-key lock are excerpts of the
// functions below, word for word (cmd/leasehold's TestDocsBlocks checks it): they compile with
// this package's tests, and ExampleLocker_Acquire runs one.

// invoiceRun runs the invoices under the key "invoice-run", on one replica at a time.
func invoiceRun(ctx context.Context, locker *locker.Locker) error {
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

func ExampleLocker_Acquire() {
	locker, err := locker.New(locker.Config{
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

// A per-key lock: one job per key at a time across the replicas. The work runs under the
// Held's context, which ends if the lease is lost; Release lets the next holder in.
func Example() {
	shared := memory.New() // in production: a store every replica reaches
	newLocker := func(id string) *locker.Locker {
		l, err := locker.New(locker.Config{
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
	fmt.Println("b:", errors.Is(err, locker.ErrHeld))

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
