package kubernetes

import (
	"maps"
	"reflect"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/leasehold/leasehold/cluster"
)

// K1: the Lease a record is written as is the same, annotation for annotation, whatever the
// code that writes it: instances of two versions share a Lease, and each reads what the other
// writes. An annotation another tool put on the Lease is kept. No API server: the encoding
// only.
func TestLeaseEncodingGolden(t *testing.T) {
	at := time.Date(2026, 12, 7, 15, 4, 5, 123456000, time.UTC)
	held := cluster.Record{
		Holder: "web-1", Term: 9, AcquiredAt: at, RenewedAt: at.Add(time.Second), Duration: 15 * time.Second,
		Revision: "41", ResignRequested: at.Add(2 * time.Second), NextHolder: "web-2", Session: "s-1",
		Value: "http://10.0.0.7:8080", ValueTerm: 9, Priority: -3, Unhealthy: true, PriorityTerm: 9,
		Preempt: true, NextPriority: 5,
	}
	heldAnnotations := map[string]string{
		"example.com/kept":                  "yes",
		"leasehold.dev/term":                "9",
		"leasehold.dev/term-transitions":    "3",
		"leasehold.dev/resign-requested-at": "2026-12-07T15:04:07.123456Z",
		"leasehold.dev/next-holder":         "web-2",
		"leasehold.dev/next-priority":       "5",
		"leasehold.dev/resign-term":         "9",
		"leasehold.dev/session":             "s-1",
		"leasehold.dev/session-term":        "9",
		"leasehold.dev/value":               "http://10.0.0.7:8080",
		"leasehold.dev/value-term":          "9",
		"leasehold.dev/priority":            "-3",
		"leasehold.dev/unhealthy":           "true",
		"leasehold.dev/priority-term":       "9",
	}
	// The release that answers a preemption keeps its next holder and priority (Q4).
	released := cluster.Record{Term: 9, Duration: 2 * time.Second, Revision: "42", NextHolder: "web-2", Preempt: true, NextPriority: 5}
	releasedAnnotations := map[string]string{
		"example.com/kept":               "yes",
		"leasehold.dev/term":             "9",
		"leasehold.dev/term-transitions": "3",
		"leasehold.dev/next-holder":      "web-2",
		"leasehold.dev/next-priority":    "5",
		"leasehold.dev/resign-term":      "9",
	}
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "leader", Annotations: map[string]string{"example.com/kept": "yes"}}}
	for _, c := range []struct {
		r           cluster.Record
		annotations map[string]string
		spec        string
	}{
		{held, heldAnnotations, "holder web-1, transitions 3, 15 s, acquired 2026-12-07T15:04:05.123456Z, renewed 2026-12-07T15:04:06.123456Z"},
		{released, releasedAnnotations, "holder , transitions 3, 2 s, acquired <nil>, renewed <nil>"},
	} {
		if err := encodeLease(lease, c.r, 3); err != nil {
			t.Fatalf("encodeLease(%+v): %v", c.r, err)
		}
		// Annotations of fields added since are no part of the golden Leases: the round trip
		// of every field (TestLeaseEncodingEveryField) covers them.
		got := map[string]string{}
		for k, v := range lease.Annotations {
			if _, ok := heldAnnotations[k]; ok {
				got[k] = v
			}
		}
		if !reflect.DeepEqual(got, c.annotations) {
			t.Errorf("encodeLease(%+v): annotations\n%v\nwant\n%v", c.r, got, c.annotations)
		}
		if got := specString(lease.Spec); got != c.spec {
			t.Errorf("encodeLease(%+v): spec %s, want %s", c.r, got, c.spec)
		}
		read := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "leader", ResourceVersion: c.r.Revision, Annotations: maps.Clone(lease.Annotations)}, Spec: lease.Spec}
		if got, err := decodeLease(read); err != nil || got != c.r {
			t.Errorf("decodeLease of the Lease of %+v = %+v, %v", c.r, got, err)
		}
	}
}

func specString(s coordinationv1.LeaseSpec) string {
	ts := func(t *metav1.MicroTime) string {
		if t == nil {
			return "<nil>"
		}
		return t.UTC().Format(time.RFC3339Nano)
	}
	return "holder " + *s.HolderIdentity + ", transitions " + itoa(int64(*s.LeaseTransitions)) + ", " + itoa(int64(*s.LeaseDurationSeconds)) +
		" s, acquired " + ts(s.AcquireTime) + ", renewed " + ts(s.RenewTime)
}
