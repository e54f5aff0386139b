package kubernetes

import (
	"context"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/leasehold/leasehold/cluster"
	"github.com/leasehold/leasehold/internal/recordtest"
)

// K1: a record with every field of cluster.Record set (any field added since included)
// reads back as itself from the Lease it is written as, and so does the release written over
// it, every field but the term and the duration zero: no annotation of the held record is
// left behind. An annotation another tool put on the Lease is kept. No API server: the
// encoding only; TestLeaseRecordEveryField runs the same records through one.
func TestLeaseEncodingEveryField(t *testing.T) {
	held := recordtest.Held(t, 7, time.Date(2026, 12, 4, 19, 40, 1, 123456000, time.UTC))
	held.Revision = "41"
	released := recordtest.Released(held)
	released.Revision = "42"
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "leader", Annotations: map[string]string{"example.com/kept": "yes"}}}
	for _, want := range []cluster.Record{held, released} {
		if err := encodeLease(lease, want, 2); err != nil {
			t.Fatalf("encodeLease(%+v): %v", want, err)
		}
		lease.ResourceVersion = want.Revision
		got, err := decodeLease(lease)
		if err != nil {
			t.Fatalf("decodeLease of %+v: %v", want, err)
		}
		if diff := recordtest.Diff(got, want); diff != "" {
			t.Errorf("record of holder %q read back from its Lease (annotations %v) with other fields:%s", want.Holder, lease.Annotations, diff)
		}
	}
	if lease.Annotations["example.com/kept"] != "yes" {
		t.Errorf("annotations %v; want example.com/kept kept", lease.Annotations)
	}
}

// K1: TestLeaseEncodingEveryField's records, through the Lock and the real API server, which
// keeps a Lease's times to the microsecond.
func TestLeaseRecordEveryField(t *testing.T) {
	s := api(t)
	ns := grant(t, s, "get", "create", "update")
	lock, _ := newLock(t, ns)
	ctx := context.Background()
	held := recordtest.Held(t, 7, time.Now().Truncate(time.Microsecond))
	created, err := lock.Create(ctx, "leader", held)
	if err != nil {
		t.Fatal(err)
	}
	held.Revision = created.Revision
	check := func(want cluster.Record) {
		t.Helper()
		got, err := lock.Get(ctx, "leader")
		if err != nil {
			t.Fatal(err)
		}
		if diff := recordtest.Diff(got, want); diff != "" {
			t.Fatalf("record of holder %q read back with other fields:%s", want.Holder, diff)
		}
	}
	check(held)
	released := recordtest.Released(held)
	written, err := lock.Update(ctx, "leader", released)
	if err != nil {
		t.Fatal(err)
	}
	released.Revision = written.Revision
	check(released)
}
