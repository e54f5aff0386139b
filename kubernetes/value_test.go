package kubernetes

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/leasehold/leasehold/cluster"
)

// TestValueAnnotations: the published value (V1) is an annotation of the Lease, with the term
// it was written for; it reads back; a value of another term reads as absent (V2); a malformed
// term is an error naming the annotation; a release removes both and keeps others'.
func TestValueAnnotations(t *testing.T) {
	s := api(t)
	ns := grant(t, s, "get", "create", "update")
	lock, admin := newLock(t, ns)
	leases := admin.CoordinationV1().Leases(ns)
	ctx := context.Background()

	rec, err := lock.Create(ctx, "leader", cluster.Record{Holder: "web-1", Session: "9f2c4e1a7b3d5e60", Term: 7, Duration: 2 * time.Second,
		Value: "http://10.0.0.7:8080", ValueTerm: 7})
	if err != nil || rec.Value != "http://10.0.0.7:8080" || rec.ValueTerm != 7 {
		t.Fatalf("Create: %+v, %v; want the value back", rec, err)
	}
	lease, err := leases.Get(ctx, "leader", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if a := lease.Annotations; a[AnnotationValue] != "http://10.0.0.7:8080" || a[AnnotationValueTerm] != "7" {
		t.Fatalf("annotations %v; want the value and term 7", a)
	}
	edit := func(f func(l *metav1.ObjectMeta, transitions *int32)) {
		t.Helper()
		l, err := leases.Get(ctx, "leader", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if l.Annotations == nil {
			l.Annotations = map[string]string{}
		}
		f(&l.ObjectMeta, l.Spec.LeaseTransitions)
		if _, err := leases.Update(ctx, l, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	edit(func(m *metav1.ObjectMeta, _ *int32) { m.Annotations["team"] = "infra" })
	if info, err := cluster.Leader(ctx, lock, "leader"); err != nil || info.ID != "web-1" || info.Value != "http://10.0.0.7:8080" {
		t.Fatalf("Leader: %+v, %v; want web-1 and its value", info, err)
	}

	// A writer that does not know the annotations takes the Lease over: it keeps them and adds
	// 1 to leaseTransitions, and so to the term.
	edit(func(_ *metav1.ObjectMeta, transitions *int32) { *transitions++ })
	if got, err := lock.Get(ctx, "leader"); err != nil || got.Value != "" || got.Term != 8 {
		t.Fatalf("Get with a value of term 7 on a Lease of term 8: %+v, %v; want term 8, no value", got, err)
	}
	edit(func(m *metav1.ObjectMeta, _ *int32) { m.Annotations[AnnotationValueTerm] = "x" })
	if _, err := lock.Get(ctx, "leader"); err == nil || errors.Is(err, cluster.ErrNotFound) || !strings.Contains(err.Error(), AnnotationValueTerm) {
		t.Fatalf("Get with a malformed value term: %v; want an error naming %s", err, AnnotationValueTerm)
	}
	edit(func(m *metav1.ObjectMeta, _ *int32) { m.Annotations[AnnotationValueTerm] = "8" })
	got, err := lock.Get(ctx, "leader")
	if err != nil || got.Value != "http://10.0.0.7:8080" || got.ValueTerm != 8 {
		t.Fatalf("Get with the value of the current term: %+v, %v", got, err)
	}

	got.Holder, got.Session, got.Value, got.ValueTerm = "", "", "", 0
	if _, err := lock.Update(ctx, "leader", got); err != nil {
		t.Fatal(err)
	}
	if lease, err = leases.Get(ctx, "leader", metav1.GetOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{AnnotationValue, AnnotationValueTerm} {
		if v, ok := lease.Annotations[k]; ok {
			t.Errorf("after the release the Lease still has %s=%q", k, v)
		}
	}
	if lease.Annotations["team"] != "infra" {
		t.Errorf("after the release: annotations %v, want team kept", lease.Annotations)
	}
}

// TestValueBesideClientGo: a client-go LeaderElector takes over a Lease a leasehold instance
// left held, keeping its value annotations: the value reads absent, not as client-go's (V2).
// Once client-go releases, a leasehold instance takes the Lease and its own value shows.
func TestValueBesideClientGo(t *testing.T) {
	s := api(t)
	m := newMixed(t, s)
	lock, admin := newLock(t, m.ns)
	ctx := context.Background()
	now := time.Now()
	if _, err := lock.Create(ctx, "leader", cluster.Record{Holder: "web-1", Session: "9f2c4e1a7b3d5e60", Term: 7, AcquiredAt: now, RenewedAt: now,
		Duration: time.Second, Value: "http://web-1:8080", ValueTerm: 7}); err != nil {
		t.Fatal(err)
	}
	cg := m.clientGo("cg", goT, true)
	m.waitLeader("cg", time.Second+jittered(goT.retry)+slack)
	lease, err := admin.CoordinationV1().Leases(m.ns).Get(ctx, "leader", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if a := lease.Annotations; a[AnnotationValue] != "http://web-1:8080" || a[AnnotationValueTerm] != "7" {
		t.Fatalf("the Lease client-go took: annotations %v; want web-1's value of term 7 kept", a)
	}
	info, err := cluster.Leader(ctx, lock, "leader")
	if err != nil || info.ID != "cg" || info.Term != 8 || info.Value != "" || !info.Held() {
		t.Fatalf("Leader of client-go's Lease: %+v, %v; want cg, term 8, held, no value", info, err)
	}

	cg.stop() // ReleaseOnCancel
	e, err := cluster.NewElector(cluster.ElectorConfig{
		Lock: lock, LeaseName: "leader", LeaseDuration: mixedL, RenewInterval: mixedR, InstanceID: "lh",
		Advertise: "http://lh:8080",
		Observer: func(ev cluster.Event) {
			switch ev.Kind {
			case cluster.BecameLeader:
				m.led.begin(ev.Instance, ev.Time)
			case cluster.StoppedLeading:
				m.led.end(ev.Instance, ev.Time)
			}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Start(ctx); err != nil {
		t.Fatal(err)
	}
	m.waitLeader("lh", mixedR+slack)
	info, err = cluster.Leader(ctx, lock, "leader")
	if err != nil || info.ID != "lh" || info.Value != "http://lh:8080" || !info.Held() {
		t.Fatalf("Leader once leasehold took the Lease back: %+v, %v; want lh and its value", info, err)
	}
	if err := e.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	m.finish()
}
