package kubernetes

import (
	"context"
	"errors"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	k8s "k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	coordinationclient "k8s.io/client-go/kubernetes/typed/coordination/v1"
	k8stesting "k8s.io/client-go/testing"

	"github.com/leasehold/leasehold/cluster"
)

// heldLeases is a namespace's Leases whose watches are fw, which delivers the events the test
// chooses when it chooses; it counts the gets.
type heldLeases struct {
	coordinationclient.LeaseInterface
	fw   *watch.FakeWatcher
	gets atomic.Int64
}

func (h *heldLeases) Get(ctx context.Context, name string, opts metav1.GetOptions) (*coordinationv1.Lease, error) {
	h.gets.Add(1)
	return h.LeaseInterface.Get(ctx, name, opts)
}

func (h *heldLeases) Watch(context.Context, metav1.ListOptions) (watch.Interface, error) {
	return h.fw, nil
}

type leasesOf struct {
	leases coordinationclient.LeaseInterface
}

func (g leasesOf) Leases(string) coordinationclient.LeaseInterface { return g.leases }

// othersFields are the labels, annotation and owner reference "another tool" puts on a Lease.
func othersFields(lease *coordinationv1.Lease, owner *corev1.ConfigMap) {
	lease.Labels = map[string]string{"app.kubernetes.io/managed-by": "other-tool"}
	if lease.Annotations == nil {
		lease.Annotations = map[string]string{}
	}
	lease.Annotations["other-tool/note"] = "kept"
	lease.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: owner.Name, UID: owner.UID}}
}

// hasOthersFields says what of othersFields lease lacks ("" when it has them all).
func hasOthersFields(lease *coordinationv1.Lease, owner *corev1.ConfigMap) string {
	switch {
	case lease.Labels["app.kubernetes.io/managed-by"] != "other-tool":
		return "the label"
	case lease.Annotations["other-tool/note"] != "kept":
		return "the annotation"
	case len(lease.OwnerReferences) != 1 || lease.OwnerReferences[0].UID != owner.UID:
		return "the owner reference"
	}
	return ""
}

// TestLateWatchEventKeepsOthersFields: a watch event older than the answer of a later update
// (delivered late, as a watch may) does not make the next update drop what another tool wrote
// on the Lease (K1). Another tool puts a label, an annotation and an owner reference on the
// Lease; the lock reads it, watches it, and renews it; then the watch delivers the older
// Lease, the one another tool wrote. The next renewal keeps the label, the annotation and the
// owner reference, and sends no get: the lock kept the newer Lease. Before, the late event
// replaced the Lease the lock kept, and the renewal replaced the Lease by a bare one.
func TestLateWatchEventKeepsOthersFields(t *testing.T) {
	s := api(t)
	ns := grant(t, s, "get", "create", "update")
	ctx := context.Background()
	user, err := k8s.NewForConfig(s.Config(s.UserToken))
	if err != nil {
		t.Fatal(err)
	}
	admin, err := k8s.NewForConfig(s.Config(s.AdminToken))
	if err != nil {
		t.Fatal(err)
	}
	held := &heldLeases{LeaseInterface: user.CoordinationV1().Leases(ns), fw: watch.NewFake()}
	lock := NewLeaseLock(leasesOf{held}, ns, 5*time.Second)

	now := time.Now().Truncate(time.Microsecond)
	created, err := lock.Create(ctx, "leader", cluster.Record{Holder: "pod-a", Term: 1, AcquiredAt: now, RenewedAt: now, Duration: testL})
	if err != nil {
		t.Fatal(err)
	}
	owner, err := admin.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "owner"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	leases := admin.CoordinationV1().Leases(ns)
	lease, err := leases.Get(ctx, "leader", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	othersFields(lease, owner)
	tagged, err := leases.Update(ctx, lease, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if tagged.ResourceVersion == created.Revision {
		t.Fatal("another tool's update kept the resourceVersion")
	}

	run, _ := watching(t, lock, "leader")
	first := run.next(t, "the first state")
	if first.err != nil || first.rec.Revision != tagged.ResourceVersion {
		t.Fatalf("first notice %+v, %v; want the Lease another tool wrote, %s", first.rec, first.err, tagged.ResourceVersion)
	}
	renew := func(rec cluster.Record) cluster.Record {
		t.Helper()
		rec.RenewedAt = rec.RenewedAt.Add(time.Millisecond)
		out, err := lock.Update(ctx, "leader", rec)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	renewed := renew(first.rec)

	// The watch delivers the Lease another tool wrote after the renewal's answer.
	held.fw.Modify(tagged)
	if n := run.next(t, "the late event"); n.err != nil || n.rec.Revision != tagged.ResourceVersion {
		t.Fatalf("late notice %+v, %v; want revision %s", n.rec, n.err, tagged.ResourceVersion)
	}
	gets := held.gets.Load()
	again := renew(renewed)
	lease, err = leases.Get(ctx, "leader", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if lease.ResourceVersion != again.Revision {
		t.Fatalf("Lease at %s, the renewal answered %s", lease.ResourceVersion, again.Revision)
	}
	if lacks := hasOthersFields(lease, owner); lacks != "" {
		t.Fatalf("the renewal after a late watch event dropped %s another tool wrote: labels %v, annotations %v, owner references %v",
			lacks, lease.Labels, lease.Annotations, lease.OwnerReferences)
	}
	if n := held.gets.Load() - gets; n != 0 {
		t.Errorf("the renewal after a late watch event read the Lease %d times; the lock should have kept the newer Lease", n)
	}
}

// TestUpdateOfAnUnknownRevisionReads: an update on a resourceVersion of which the lock keeps no
// Lease reads the Lease rather than send a bare one (K1): on that resourceVersion, the update
// carries what others wrote; on another, it is a lost race and nothing is sent.
func TestUpdateOfAnUnknownRevisionReads(t *testing.T) {
	lease := fakeLease("leader", "pod-a", "7")
	owner := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "owner", UID: "4d1f"}}
	othersFields(lease, owner)
	client := fake.NewClientset(lease)
	lock := NewLeaseLock(client.CoordinationV1(), "ns", time.Second)
	ctx := context.Background()

	_, err := lock.Update(ctx, "leader", cluster.Record{Holder: "pod-b", Term: 2, Revision: "5"})
	if !errors.Is(err, cluster.ErrConflict) {
		t.Fatalf("update on resourceVersion 5 of a Lease at 7: %v, want ErrConflict", err)
	}
	for _, a := range client.Actions() {
		if a.GetVerb() == "update" {
			t.Fatalf("an update was sent on a resourceVersion the Lease no longer has: %v", a)
		}
	}
	client.ClearActions()
	fresh := NewLeaseLock(client.CoordinationV1(), "ns", time.Second)
	if _, err := fresh.Update(ctx, "leader", cluster.Record{Holder: "pod-b", Term: 2, Revision: "7"}); err != nil {
		t.Fatal(err)
	}
	var sent *coordinationv1.Lease
	for _, a := range client.Actions() {
		if u, ok := a.(k8stesting.UpdateAction); ok {
			sent = u.GetObject().(*coordinationv1.Lease)
		}
	}
	if sent == nil {
		t.Fatalf("no update sent: %v", client.Actions())
	}
	if lacks := hasOthersFields(sent, owner); lacks != "" || sent.ResourceVersion != "7" || *sent.Spec.HolderIdentity != "pod-b" {
		t.Fatalf("update sent without %s, or not on 7 by pod-b: %+v", lacks, sent.ObjectMeta)
	}
}

// TestLateWatchEventIsNotKept: the lock keeps the newest Lease it read, wrote or watched, by
// resourceVersion compared as an integer: an older event delivered after an update's answer
// does not replace it, and the next update carries what others wrote without a read. (The
// fake clientset keeps no resourceVersions: a reactor answers the update with 9.)
func TestLateWatchEventIsNotKept(t *testing.T) {
	lease := fakeLease("leader", "pod-a", "7")
	owner := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "owner", UID: "4d1f"}}
	othersFields(lease, owner)
	fw := watch.NewFakeWithChanSize(4, false)
	client := fake.NewClientset(lease)
	client.PrependWatchReactor("leases", func(k8stesting.Action) (bool, watch.Interface, error) { return true, fw, nil })
	var next atomic.Int64
	next.Store(9)
	client.PrependReactor("update", "leases", func(a k8stesting.Action) (bool, runtime.Object, error) {
		l := a.(k8stesting.UpdateAction).GetObject().(*coordinationv1.Lease).DeepCopy()
		l.ResourceVersion = itoa(next.Add(1) - 1)
		return true, l, nil
	})
	lock := NewLeaseLock(client.CoordinationV1(), "ns", time.Second)
	ctx := context.Background()
	run, _ := watching(t, lock, "leader")
	first := run.next(t, "the first state")
	if first.err != nil || first.rec.Revision != "7" {
		t.Fatalf("first notice %+v, %v", first.rec, first.err)
	}
	renewed, err := lock.Update(ctx, "leader", first.rec)
	if err != nil || renewed.Revision != "9" {
		t.Fatalf("renewal: %+v, %v; want revision 9", renewed, err)
	}
	late := lease.DeepCopy()
	late.ResourceVersion = "8"
	fw.Modify(late)
	if n := run.next(t, "the late event"); n.rec.Revision != "8" {
		t.Fatalf("late notice %+v, %v", n.rec, n.err)
	}
	client.ClearActions()
	if _, err := lock.Update(ctx, "leader", renewed); err != nil {
		t.Fatal(err)
	}
	var sent *coordinationv1.Lease
	for _, a := range client.Actions() {
		switch a := a.(type) {
		case k8stesting.UpdateAction:
			sent = a.GetObject().(*coordinationv1.Lease)
		case k8stesting.GetAction:
			t.Errorf("the update read the Lease: the lock kept the older Lease of the late event")
		}
	}
	if sent == nil || sent.ResourceVersion != "9" || hasOthersFields(sent, owner) != "" {
		t.Fatalf("update sent: %+v; want on 9 with what others wrote", sent)
	}
	// Equal or unordered versions: the one that came last is kept only when it differs.
	for _, c := range []struct {
		a, b string
		want bool
	}{{"10", "9", true}, {"9", "10", false}, {"9", "9", false}, {"x1", "x2", true}, {"x1", "x1", false}, {"10", "x", true}} {
		if got := newerVersion(c.a, c.b); got != c.want {
			t.Errorf("newerVersion(%q, %q) = %v, want %v", c.a, c.b, got, c.want)
		}
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
