package kubernetes

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	k8s "k8s.io/client-go/kubernetes"

	"github.com/leasehold/leasehold/cluster"
	"github.com/leasehold/leasehold/cluster/holders"
)

// TestSlotNames: the Lease lock names slot i of NAME NAME-i (H1), a valid Lease name for a
// valid NAME of up to 253 - len("-i") characters; one holder is the Lease NAME itself.
func TestSlotNames(t *testing.T) {
	lock := NewLeaseLock(k8s.New(nil).CoordinationV1(), "default", 0)
	if got := holders.SlotName(lock, "batch", 0, 1); got != "batch" {
		t.Errorf("one holder: %q, want batch", got)
	}
	for _, c := range []struct {
		lease string
		slot  int
		want  string
	}{{"batch", 0, "batch-0"}, {"batch", 11, "batch-11"}, {"jobs.example", 1, "jobs.example-1"}, {"a-1", 2, "a-1-2"}} {
		got := holders.SlotName(lock, c.lease, c.slot, 12)
		if got != c.want {
			t.Errorf("slot %d of %q: %q, want %q", c.slot, c.lease, got, c.want)
		}
		if errs := validation.IsDNS1123Subdomain(got); len(errs) > 0 {
			t.Errorf("%q is not a valid Lease name: %v", got, errs)
		}
	}
	longest := strings.Repeat("a", 251)
	if errs := validation.IsDNS1123Subdomain(holders.SlotName(lock, longest, 9, 10)); len(errs) > 0 {
		t.Errorf("slot 9 of a 251-character name: %v", errs)
	}
	if errs := validation.IsDNS1123Subdomain(holders.SlotName(lock, longest, 10, 11)); len(errs) == 0 {
		t.Error("slot 10 of a 251-character name is 254 characters, yet valid")
	}
}

// TestHoldersOnKubernetes: holders.New over the Lease lock, three instances and two
// slots (H1, H2). Two instances lead, one on each of the Leases batch-0 and batch-1, whose
// holderIdentity names them; the third holds none. A leader stopped releases its slot, and
// the third takes it within R, in a larger term.
func TestHoldersOnKubernetes(t *testing.T) {
	s := api(t)
	ns := grant(t, s, "get", "create", "update")
	ev := newEvents()
	ids := []string{"pod-a", "pod-b", "pod-c"}
	hs := map[string]*holders.Holders{}
	var logs syncBuffer
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("log:\n%s", logs.String())
		}
	})
	for _, id := range ids {
		lock, _ := newLock(t, ns)
		h, err := holders.New(cluster.ElectorConfig{
			Lock: lock, LeaseName: "batch", LeaseDuration: testL, RenewInterval: testR, InstanceID: id, Observer: ev.observe,
			Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		}, 2)
		if err != nil {
			t.Fatal(err)
		}
		if err := h.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		hs[id] = h
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if err := h.Stop(ctx); err != nil {
				t.Errorf("Stop %s: %v", id, err)
			}
		})
	}

	var from int
	leaders := map[string]string{} // Lease name -> instance
	for len(leaders) < 2 {
		e := ev.wait(t, &from, 10*time.Second, "two leaders", kind(cluster.BecameLeader))
		if prev, ok := leaders[e.Lease]; ok {
			t.Fatalf("%s became the leader of %s, which %s leads", e.Instance, e.Lease, prev)
		}
		leaders[e.Lease] = e.Instance
	}
	if leaders["batch-0"] == "" || leaders["batch-1"] == "" || leaders["batch-0"] == leaders["batch-1"] {
		t.Fatalf("leaders %v; want one instance on each of batch-0 and batch-1", leaders)
	}
	_, admin := newLock(t, ns)
	for name, id := range leaders {
		lease, err := admin.CoordinationV1().Leases(ns).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if lease.Spec.HolderIdentity == nil || *lease.Spec.HolderIdentity != id {
			t.Fatalf("Lease %s: holderIdentity %v, want %s", name, lease.Spec.HolderIdentity, id)
		}
		kubectlGetLease(t, s, ns, name)
	}
	var idle string
	for _, id := range ids {
		if id != leaders["batch-0"] && id != leaders["batch-1"] {
			idle = id
		}
	}
	// Each leader renews twice more while the idle instance holds nothing.
	for _, id := range []string{leaders["batch-0"], leaders["batch-1"]} {
		at := from
		for range 2 {
			ev.wait(t, &at, testR+slack, id+" renewing", func(e cluster.Event) bool {
				return e.Kind == cluster.AttemptSucceeded && e.Instance == id && e.Holder == id
			})
		}
	}
	if _, _, ok := hs[idle].Slot(); ok || hs[idle].IsLeader() {
		t.Fatalf("%s holds a slot beside the two leaders", idle)
	}
	for _, id := range []string{leaders["batch-0"], leaders["batch-1"]} {
		if slot, _, ok := hs[id].Slot(); !ok || leaders[fmt.Sprintf("batch-%d", slot)] != id {
			t.Fatalf("%s: slot %d, %v", id, slot, ok)
		}
	}
	for _, e := range ev.snapshot()[:from] {
		if e.Kind == cluster.BecameLeader && e.Instance == idle {
			t.Fatalf("%s led %s", idle, e.Lease)
		}
	}

	leaving := leaders["batch-1"]
	_, before, _ := hs[leaving].Slot()
	mark := ev.mark()
	stop := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := hs[leaving].Stop(ctx); err != nil {
		t.Fatal(err)
	}
	from = mark
	e := ev.wait(t, &from, testR+slack, idle+" taking batch-1", kind(cluster.BecameLeader))
	if e.Instance != idle || e.Lease != "batch-1" || e.Term <= before {
		t.Fatalf("%s became the leader of %s, term %d; want %s of batch-1, a term above %d", e.Instance, e.Lease, e.Term, idle, before)
	}
	t.Logf("%s took batch-1 %v after %s began to stop", idle, e.Time.Sub(stop), leaving)
	if slot, _, ok := hs[leaders["batch-0"]].Slot(); !ok || slot != 0 {
		t.Fatalf("%s no longer holds batch-0", leaders["batch-0"])
	}
}
