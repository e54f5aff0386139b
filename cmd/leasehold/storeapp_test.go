package main

import (
	"context"
	"flag"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/cluster"
	"github.com/leasehold/leasehold/store"
)

// --store elects through the Application --config would describe for it: the store of the URL
// as the Registry and a Webda/StoreClusterService, the flags set as its parameters. The lease
// is the one of the flags, in that store, its record carrying the flags' priority, and the
// election's stop releases it.
func TestStoreComposesAnApplication(t *testing.T) {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	f := &commonFlags{}
	f.register(fs)
	f.registerRank(fs)
	url := "mem://" + t.Name()
	if err := fs.Parse([]string{"--store", url, "--lease", "jobs", "--instance-id", "a", "--lease-duration", "2s", "--renew-interval", "500ms", "--priority", "3"}); err != nil {
		t.Fatal(err)
	}
	if err := f.validate(fs, runUsage); err != nil {
		t.Fatal(err)
	}
	led := make(chan uint64, 1)
	observer := func(ev cluster.Event) {
		if ev.Kind == cluster.BecameLeader {
			led <- ev.Term
		}
	}
	ctx := context.Background()
	el, err := newElection(ctx, f, slog.New(slog.NewTextHandler(io.Discard, nil)), observer, runUsage)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := el.Cluster.(*leasehold.StoreClusterService); !ok {
		t.Fatalf("the election of --store is a %T; want the application's StoreClusterService", el.Cluster)
	}
	if el.lease != "jobs" || el.id != "a" || el.l != 2*time.Second || el.r != 500*time.Millisecond || el.where != url {
		t.Fatalf("election of lease %q, instance %q, L %v, R %v, in %q; want the flags' jobs, a, 2s, 500ms, %s", el.lease, el.id, el.l, el.r, el.where, url)
	}
	if err := el.start(ctx); err != nil {
		t.Fatal(err)
	}
	term := <-led
	st, err := store.Open(ctx, url) // the same named memory store
	if err != nil {
		t.Fatal(err)
	}
	rec, err := cluster.NewStoreLock(st).Get(ctx, "jobs")
	if err != nil || rec.Holder != "a" || rec.Term != term || rec.Priority != 3 {
		t.Fatalf("record %+v, %v; want held by a at term %d, priority 3", rec, err, term)
	}
	if err := el.stop(ctx); err != nil {
		t.Fatal(err)
	}
	if rec, err := cluster.NewStoreLock(st).Get(ctx, "jobs"); err != nil || rec.Holder != "" {
		t.Fatalf("record after the stop %+v, %v; want it released (E7)", rec, err)
	}
}
