package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/leasehold/leasehold/cluster"
)

const resignUsage = `Usage: leasehold resign [flags] [--to ID]

Asks the instance holding the lease to step down, through the lease's record: from any host,
over any store. The leader sees the request at its next attempt (within the renew interval):
it stops CMD, then releases the lease. With --to ID, the release names ID as the next holder:
for the lease duration after each other instance first sees it released, only ID may take it,
then anyone may (so an ID that is not running leaves the lease without a leader for that
long). Without --to, any other instance may take it at once, and the one that stepped down
waits the lease duration before it may take it back.

resign returns once the request is written, not once the leader has stepped down: follow
the handover with leasehold status --watch. Exit status 0 when the request is written, 3
when nobody holds the lease (nothing is written), 1 when the store fails or ID is the holder
itself (nothing is written).

Flags:
  --to ID                 the instance that should lead next
  --timeout D             give up after D (default 10s)
` + commonFlagsUsage

func resignCommand(args []string, stdout, stderr io.Writer) (int, error) {
	fs := flag.NewFlagSet("resign", flag.ContinueOnError)
	var f commonFlags
	f.register(fs)
	to := fs.String("to", "", "")
	timeout := fs.Duration("timeout", 10*time.Second, "")
	if done, err := parseCommand(fs, args, resignUsage, stdout); done || err != nil {
		return exitOK, err
	}
	if err := f.validate(fs, resignUsage); err != nil {
		return 0, err
	}
	if f.set["to"] && *to == "" {
		return 0, badInput(resignUsage, "--to must not be empty (leave it out to name no next holder)")
	}
	if *timeout <= 0 {
		return 0, badInput(resignUsage, "--timeout %v must be positive", *timeout)
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	w, err := newLeaseWriter(ctx, &f, resignUsage)
	if err != nil {
		return 0, err
	}
	defer w.close(context.WithoutCancel(ctx))
	rec, err := cluster.Resign(ctx, w.lock, w.lease, *to)
	switch {
	case errors.Is(err, cluster.ErrNotHeld):
		fmt.Fprintf(stdout, "lease %s: nobody holds it: nothing to resign\n", w.lease)
		return exitNoLease, nil
	case err != nil:
		return 0, fmt.Errorf("%w (in %s)", err, w.where)
	}
	if rec.NextHolder != "" {
		fmt.Fprintf(stdout, "lease %s: asked %s (term %d) to step down and hand over to %s\n", w.lease, rec.Holder, rec.Term, rec.NextHolder)
	} else {
		fmt.Fprintf(stdout, "lease %s: asked %s (term %d) to step down\n", w.lease, rec.Holder, rec.Term)
	}
	return exitOK, nil
}

// newLeaseWriter opens what holds the lease of the flags, to write its record without joining
// its election: a store that does not exist yet holds no lease, and is not created.
func newLeaseWriter(ctx context.Context, f *commonFlags, usage string) (*leaseReader, error) {
	if f.config != "" || absentStore(f) {
		return newLeaseReader(ctx, f, usage) // the cluster service's Lock writes; an absent store holds nothing
	}
	if err := f.makeStateDir(); err != nil {
		return nil, err
	}
	return storeLeaseReader(ctx, f, f.store)
}
