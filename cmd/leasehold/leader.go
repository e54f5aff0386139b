package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/leasehold/leasehold/cluster"
)

const leaderUsage = `Usage: leasehold leader [flags]

Prints the value the leader of the lease publishes (leasehold run --advertise VALUE, or the
cluster service's parameter "advertise"), alone on one line, for a script to reach the leader:

  curl "$(leasehold leader --lease api)/jobs"

It reads the lease once and never joins the election. A value left from an earlier term (a
writer that does not know it took the lease over) is no value.

Exit status:
  0    the value is printed
  1    the store cannot be opened or read
  2    bad input
  3    nobody leads: no record, released, or expired (the last renewal is older than the
       lease's duration, by this host's clock)
  4    the leader publishes no value (it runs without --advertise)

Flags:
  --timeout D             give up reading the lease after D (default 10s)
` + commonFlagsUsage

func leaderCommand(args []string, stdout, stderr io.Writer) (int, error) {
	fs := flag.NewFlagSet("leader", flag.ContinueOnError)
	var f commonFlags
	f.register(fs)
	timeout := fs.Duration("timeout", 10*time.Second, "")
	if done, err := parseCommand(fs, args, leaderUsage, stdout); done || err != nil {
		return exitOK, err
	}
	if err := f.validate(fs, leaderUsage); err != nil {
		return 0, err
	}
	if *timeout <= 0 {
		return 0, badInput(leaderUsage, "--timeout %v must be positive", *timeout)
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	r, err := newLeaseReader(ctx, &f, leaderUsage)
	if err != nil {
		return 0, err
	}
	defer r.close(context.WithoutCancel(ctx))
	info, err := cluster.Leader(ctx, r.lock, r.lease)
	if err != nil {
		return 0, fmt.Errorf("lease %q in %s: %w", r.lease, r.where, err)
	}
	switch {
	case !info.Held():
		fmt.Fprintf(stderr, "leasehold: lease %q in %s: nobody leads\n", r.lease, r.where)
		return exitNoLease, nil
	case info.Value == "":
		fmt.Fprintf(stderr, "leasehold: lease %q in %s: the leader %s publishes no value (it runs without --advertise)\n", r.lease, r.where, info.ID)
		return exitNoValue, nil
	}
	_, err = fmt.Fprintln(stdout, info.Value)
	return exitOK, err
}
