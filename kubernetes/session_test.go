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

// TestSessionAnnotations: the holder's session (E12) is an annotation of the Lease, with the
// term it was written for; a release removes both and keeps the annotations of others; a
// session of another term reads as absent, one without its term as it is, and a malformed
// term is an error naming the annotation.
func TestSessionAnnotations(t *testing.T) {
	s := api(t)
	ns := grant(t, s, "get", "create", "update")
	lock, admin := newLock(t, ns)
	leases := admin.CoordinationV1().Leases(ns)
	ctx := context.Background()

	rec, err := lock.Create(ctx, "leader", cluster.Record{Holder: "web-1", Session: "9f2c4e1a7b3d5e60", Term: 7, Duration: 2 * time.Second})
	if err != nil || rec.Session != "9f2c4e1a7b3d5e60" {
		t.Fatalf("Create: %+v, %v; want the session back", rec, err)
	}
	lease, err := leases.Get(ctx, "leader", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if a := lease.Annotations; a[AnnotationSession] != "9f2c4e1a7b3d5e60" || a[AnnotationSessionTerm] != "7" {
		t.Fatalf("annotations %v; want the session and term 7", a)
	}
	annotate := func(kv map[string]string, drop ...string) {
		t.Helper()
		l, err := leases.Get(ctx, "leader", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if l.Annotations == nil {
			l.Annotations = map[string]string{}
		}
		for k, v := range kv {
			l.Annotations[k] = v
		}
		for _, k := range drop {
			delete(l.Annotations, k)
		}
		if _, err := leases.Update(ctx, l, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	annotate(map[string]string{"team": "infra"})
	got, err := lock.Get(ctx, "leader")
	if err != nil || got.Session != "9f2c4e1a7b3d5e60" || got.Holder != "web-1" {
		t.Fatalf("Get: %+v, %v; want web-1 with its session", got, err)
	}

	// A writer that does not know the annotations takes the Lease over under the same
	// identity: it keeps them and grows leaseTransitions, and so the term. The session is not
	// its own.
	l, err := leases.Get(ctx, "leader", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	*l.Spec.LeaseTransitions++
	if _, err := leases.Update(ctx, l, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if got, err = lock.Get(ctx, "leader"); err != nil || got.Session != "" || got.Holder != "web-1" || got.Term != 8 {
		t.Fatalf("Get with a session of term 7 on a Lease of term 8: %+v, %v; want web-1, term 8, no session", got, err)
	}
	annotate(nil, AnnotationSessionTerm)
	if got, err = lock.Get(ctx, "leader"); err != nil || got.Session != "9f2c4e1a7b3d5e60" {
		t.Fatalf("Get with a session and no term: %+v, %v; want the session as it is", got, err)
	}
	annotate(map[string]string{AnnotationSessionTerm: "-1"})
	if _, err := lock.Get(ctx, "leader"); err == nil || errors.Is(err, cluster.ErrNotFound) || !strings.Contains(err.Error(), AnnotationSessionTerm) {
		t.Fatalf("Get with a malformed session term: %v; want an error naming %s", err, AnnotationSessionTerm)
	}
	annotate(map[string]string{AnnotationSessionTerm: "8"})

	// The release removes both, and keeps the others'.
	got, err = lock.Get(ctx, "leader")
	if err != nil {
		t.Fatal(err)
	}
	got.Holder, got.Session = "", ""
	if _, err := lock.Update(ctx, "leader", got); err != nil {
		t.Fatal(err)
	}
	if lease, err = leases.Get(ctx, "leader", metav1.GetOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{AnnotationSession, AnnotationSessionTerm} {
		if v, ok := lease.Annotations[k]; ok {
			t.Errorf("after the release the Lease still has %s=%q", k, v)
		}
	}
	if lease.Annotations["team"] != "infra" {
		t.Errorf("after the release: annotations %v, want team kept", lease.Annotations)
	}
}

// TestSessionStaleAfterClientGoTakeover: a client-go elector takes over a Lease a leasehold
// instance left held (a crash): client-go keeps the session annotations and grows
// leaseTransitions, and so the term, so the record reads with no session.
func TestSessionStaleAfterClientGoTakeover(t *testing.T) {
	s := api(t)
	m := newMixed(t, s)
	lock, admin := newLock(t, m.ns)
	ctx := context.Background()
	now := time.Now()
	if _, err := lock.Create(ctx, "leader", cluster.Record{Holder: "web-1", Session: "9f2c4e1a7b3d5e60", Term: 7, AcquiredAt: now, RenewedAt: now, Duration: time.Second}); err != nil {
		t.Fatal(err)
	}
	m.clientGo("cg", goT, true)
	// client-go waits the leaseDurationSeconds written (1 s) from when it first saw the
	// record, then tries every RetryPeriod, jittered.
	m.waitLeader("cg", time.Second+jittered(goT.retry)+slack)
	lease, err := admin.CoordinationV1().Leases(m.ns).Get(ctx, "leader", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if a := lease.Annotations; a[AnnotationSession] != "9f2c4e1a7b3d5e60" || a[AnnotationSessionTerm] != "7" || a[AnnotationTerm] != "7" ||
		lease.Spec.LeaseTransitions == nil || *lease.Spec.LeaseTransitions != 1 {
		t.Fatalf("the Lease client-go took: annotations %v, leaseTransitions %v; want the session of term 7 kept, 1 change of holder", a, lease.Spec.LeaseTransitions)
	}
	rec, err := lock.Get(ctx, "leader")
	if err != nil || rec.Holder != "cg" || rec.Session != "" || rec.Term != 8 {
		t.Fatalf("the record of client-go's Lease: %+v, %v; want cg, term 8, no session", rec, err)
	}
	m.finish()
}

// TestSameIdentityBesideClientGo: a client-go elector and a leasehold instance given one
// identity, web-1. The record client-go writes names web-1 without a leasehold session, so the
// leasehold instance follows it as another holder's (E12), never renewing it as its own; once
// client-go releases, it takes the Lease over. At no moment do both lead.
func TestSameIdentityBesideClientGo(t *testing.T) {
	s := api(t)
	m := newMixed(t, s)
	cg := m.clientGoAs("cg", "web-1", goT, true)
	m.waitLeader("cg", 10*time.Second)
	lh := m.leasehold("web-1", mixedL, mixedR)
	m.steady(lh.wire)
	if lh.in.svc.IsLeader() {
		t.Fatal("the leasehold web-1 leads on client-go's Lease")
	}
	stop := time.Now()
	cg.stop()
	at := m.waitLeader("web-1", goT.renew+mixedR+slack)
	m.finish()
	t.Logf("client-go web-1 released; leasehold web-1 took over %v after the stop", at.Sub(stop))
}
