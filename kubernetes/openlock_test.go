package kubernetes

import (
	"context"
	"testing"
	"time"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/cluster"
)

// OpenLock gives the Lease's Lock without joining the election (for leasehold status): it
// reads the leader an elected instance wrote, and makes no write of its own.
func TestOpenLockReadsWithoutElecting(t *testing.T) {
	s := api(t)
	ns := grant(t, s, "get", "create", "update")
	ev := newEvents()
	from := ev.mark()
	startUser(t, s, ns, "pod-a", ev)
	ev.wait(t, &from, 10*time.Second, "pod-a leads", kindOf(cluster.BecameLeader, "pod-a"))

	cfg, _ := userConfig(s)
	reader := &ClusterService{}
	reader.Namespace = ns
	reader.RESTConfig = cfg
	var _ leasehold.LockOpener = reader
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	lock, err := reader.OpenLock(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer reader.Stop(ctx)
	rec, err := lock.Get(ctx, "leader")
	if err != nil {
		t.Fatal(err)
	}
	if rec.Holder != "pod-a" || rec.Term == 0 {
		t.Fatalf("lease read through OpenLock: holder %q term %d; want pod-a, a term", rec.Holder, rec.Term)
	}
	if reader.IsLeader() || reader.Elector() != nil {
		t.Fatal("OpenLock joined the election")
	}
}
