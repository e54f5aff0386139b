package kubernetes

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/leasehold/leasehold/cluster"
)

// TestResignAnnotations: the resign request and the next holder are annotations of the Lease
// (R1), written by cluster.Resign through the lock and read back; a renewal removes them and
// keeps the annotations of others; a Lease without them has nothing pending; annotations of
// another term are ignored; a malformed one is an error naming it.
func TestResignAnnotations(t *testing.T) {
	s := api(t)
	ns := grant(t, s, "get", "create", "update")
	lock, admin := newLock(t, ns)
	leases := admin.CoordinationV1().Leases(ns)
	ctx := context.Background()

	// A Lease written without the annotations, as by an older leasehold or by client-go.
	holder, term, secs := "pod-a", int32(4), int32(2)
	now := metav1.NewMicroTime(time.Now())
	old := &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: "leader", Annotations: map[string]string{"team": "infra"}},
		Spec:       coordinationv1.LeaseSpec{HolderIdentity: &holder, LeaseTransitions: &term, LeaseDurationSeconds: &secs, AcquireTime: &now, RenewTime: &now},
	}
	if _, err := leases.Create(ctx, old, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	rec, err := lock.Get(ctx, "leader")
	if err != nil || rec.Holder != "pod-a" || rec.Term != 4 || !rec.ResignRequested.IsZero() || rec.NextHolder != "" || cluster.ResignPending(rec) {
		t.Fatalf("Get of a Lease without the annotations: %+v, %v; want pod-a, term 4, nothing pending", rec, err)
	}

	asked := time.Now()
	req, err := cluster.Resign(ctx, lock, "leader", "pod-b")
	if err != nil {
		t.Fatal(err)
	}
	lease, err := leases.Get(ctx, "leader", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	a := lease.Annotations
	at, err := time.Parse(time.RFC3339Nano, a[AnnotationResignRequested])
	if err != nil || at.Before(asked.Add(-time.Second)) || a[AnnotationNextHolder] != "pod-b" || a[AnnotationResignTerm] != "4" || a["team"] != "infra" {
		t.Fatalf("annotations after Resign: %v; want the request's time, next holder pod-b, term 4, and team kept", a)
	}
	if lease.Spec.PreferredHolder != nil || lease.Spec.Strategy != nil {
		t.Errorf("the lock set spec.preferredHolder %v, strategy %v; it must not (see TestPreferredHolderDropped)", lease.Spec.PreferredHolder, lease.Spec.Strategy)
	}
	got, err := lock.Get(ctx, "leader")
	if err != nil || !got.ResignRequested.Equal(req.ResignRequested) || got.NextHolder != "pod-b" || got.Holder != "pod-a" || !cluster.ResignPending(got) {
		t.Fatalf("Get after Resign: %+v, %v; want the request of %v naming pod-b", got, err, req.ResignRequested)
	}

	// The holder's release keeps the next holder (R2); its takeover by pod-b removes both (R3).
	got.Holder, got.ResignRequested = "", time.Time{}
	released, err := lock.Update(ctx, "leader", got)
	if err != nil || released.NextHolder != "pod-b" || !released.ResignRequested.IsZero() {
		t.Fatalf("release: %+v, %v; want next holder pod-b kept, no request", released, err)
	}
	if lease, err = leases.Get(ctx, "leader", metav1.GetOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, ok := lease.Annotations[AnnotationResignRequested]; ok || lease.Annotations[AnnotationNextHolder] != "pod-b" {
		t.Fatalf("annotations after the release: %v; want only the next holder (and its term)", lease.Annotations)
	}
	taken := released
	taken.Holder, taken.Term, taken.NextHolder = "pod-b", released.Term+1, ""
	if _, err := lock.Update(ctx, "leader", taken); err != nil {
		t.Fatal(err)
	}
	if lease, err = leases.Get(ctx, "leader", metav1.GetOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{AnnotationResignRequested, AnnotationNextHolder, AnnotationResignTerm} {
		if v, ok := lease.Annotations[k]; ok {
			t.Errorf("after the takeover the Lease still has %s=%q", k, v)
		}
	}
	if lease.Annotations["team"] != "infra" {
		t.Errorf("after the takeover: annotations %v, want team kept", lease.Annotations)
	}

	// Annotations left from another term (a writer that does not know them took the Lease
	// over, keeping them) read as absent; without the term annotation (by hand), as they are.
	annotate := func(kv map[string]string, drop ...string) {
		t.Helper()
		l, err := leases.Get(ctx, "leader", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
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
	annotate(map[string]string{AnnotationResignRequested: time.Now().UTC().Format(time.RFC3339Nano), AnnotationNextHolder: "pod-c", AnnotationResignTerm: "4"})
	if got, err := lock.Get(ctx, "leader"); err != nil || got.Term != 5 || cluster.ResignPending(got) || got.NextHolder != "" {
		t.Fatalf("Get with annotations of term 4 on a Lease of term 5: %+v, %v; want nothing pending", got, err)
	}
	annotate(nil, AnnotationResignTerm)
	if got, err := lock.Get(ctx, "leader"); err != nil || !cluster.ResignPending(got) || got.NextHolder != "pod-c" {
		t.Fatalf("Get with annotations and no term: %+v, %v; want a request naming pod-c", got, err)
	}
	for _, bad := range []map[string]string{
		{AnnotationResignRequested: "yesterday"},
		{AnnotationResignTerm: "-1"},
	} {
		annotate(bad)
		_, err := lock.Get(ctx, "leader")
		for k := range bad {
			if err == nil || errors.Is(err, cluster.ErrNotFound) || !strings.Contains(err.Error(), k) {
				t.Errorf("Get with %v: %v; want an error naming %s", bad, err, k)
			}
		}
		annotate(map[string]string{AnnotationResignRequested: time.Now().UTC().Format(time.RFC3339Nano), AnnotationResignTerm: "5"})
	}
}

// TestPreferredHolderDropped is the premise of not setting spec.preferredHolder: the test's
// API server, whose CoordinatedLeaderElection feature gate is at its default, drops
// preferredHolder and strategy from a Lease on create and on update without an error. Should
// an API server keep them by default, the lock could set preferredHolder as well.
func TestPreferredHolderDropped(t *testing.T) {
	s := api(t)
	ns := grant(t, s, "get", "create", "update")
	_, admin := newLock(t, ns)
	leases := admin.CoordinationV1().Leases(ns)
	ctx := context.Background()
	holder, preferred := "pod-a", "pod-b"
	strategy := coordinationv1.OldestEmulationVersion
	created, err := leases.Create(ctx, &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: "leader"},
		Spec:       coordinationv1.LeaseSpec{HolderIdentity: &holder, PreferredHolder: &preferred, Strategy: &strategy},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create with preferredHolder and strategy: %v", err)
	}
	if created.Spec.PreferredHolder != nil || created.Spec.Strategy != nil {
		t.Fatalf("the API server kept preferredHolder %q and strategy %q on create", *created.Spec.PreferredHolder, *created.Spec.Strategy)
	}
	created.Spec.PreferredHolder, created.Spec.Strategy = &preferred, &strategy
	updated, err := leases.Update(ctx, created, metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("update with preferredHolder and strategy: %v", err)
	}
	if updated.Spec.PreferredHolder != nil || updated.Spec.Strategy != nil {
		t.Fatalf("the API server kept preferredHolder and strategy on update: %+v", updated.Spec)
	}
}

// TestResignHandsOverOnKubernetes: three instances on a Lease; cluster.Resign through the
// Kubernetes lock, naming a follower, as `leasehold resign --config` does. The leader sees
// the request at its next attempt and stops leading (reason resign, R2), releases the Lease
// naming the follower (R2), and only that follower takes it, in a larger term (R3, E11); the takeover
// clears the annotations.
func TestResignHandsOverOnKubernetes(t *testing.T) {
	s := api(t)
	ns := grant(t, s, "get", "create", "update")
	lock, admin := newLock(t, ns)
	ev := newEvents()
	ids := []string{"pod-a", "pod-b", "pod-c"}
	byID := map[string]*instance{}
	for _, id := range ids {
		byID[id] = startUser(t, s, ns, id, ev)
	}
	var from int
	first := ev.wait(t, &from, 10*time.Second, "first leader", kind(cluster.BecameLeader))
	leader := first.Instance
	var next, other string
	for _, id := range ids {
		if id != leader {
			if next == "" {
				next = id
			} else {
				other = id
			}
		}
	}
	// Every follower follows the leader before the request, so that each could take a
	// released Lease at its next attempt.
	for _, id := range []string{next, other} {
		at := 0
		ev.wait(t, &at, 5*time.Second, id+" observing "+leader, func(e cluster.Event) bool {
			return e.Kind == cluster.ObservedLeader && e.Instance == id && e.Holder == leader
		})
	}

	mark := ev.mark()
	asked := time.Now()
	req, err := cluster.Resign(context.Background(), lock, "leader", next)
	if err != nil {
		t.Fatal(err)
	}
	if req.Holder != leader || req.NextHolder != next || !cluster.ResignPending(req) {
		t.Fatalf("Resign wrote %+v; want %s's record with a request naming %s", req, leader, next)
	}
	from = mark
	stop := ev.wait(t, &from, testR+slack, leader+" stopping", kindOf(cluster.StoppedLeading, leader))
	if stop.Reason != cluster.ReasonResign || !errors.Is(stop.Err, cluster.ErrResignRequested) {
		t.Fatalf("%s stopped leading with reason %q, error %v; want resign", leader, stop.Reason, stop.Err)
	}
	t.Logf("%s saw the request and stopped leading %v after it was written", leader, stop.Time.Sub(asked))
	became := ev.wait(t, &from, 2*testR+slack, "the next leader", kind(cluster.BecameLeader))
	if became.Instance != next || became.Term <= first.Term {
		t.Fatalf("%s became the leader, term %d; want %s, a term above %d", became.Instance, became.Term, next, first.Term)
	}
	if became.Time.Before(stop.Time) {
		t.Fatalf("%s became the leader at %v, before %s stopped at %v", next, became.Time, leader, stop.Time)
	}
	t.Logf("%s took the Lease %v after the request", next, became.Time.Sub(asked))

	// The release named next: someone saw a released Lease reserved for it.
	rec, err := lock.Get(context.Background(), "leader")
	if err != nil || rec.Holder != next || cluster.ResignPending(rec) || rec.NextHolder != "" {
		t.Fatalf("record after the handover: %+v, %v; want %s, nothing pending, no next holder", rec, err, next)
	}
	lease, err := admin.CoordinationV1().Leases(ns).Get(context.Background(), "leader", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{AnnotationResignRequested, AnnotationNextHolder, AnnotationResignTerm} {
		if v, ok := lease.Annotations[k]; ok {
			t.Errorf("the new leader's Lease still has %s=%q", k, v)
		}
	}
	// Nobody else led: wait for two renewals of next, then look at every BecameLeader since.
	renewed := from
	for range 2 {
		ev.wait(t, &renewed, testR+slack, next+" renewing", func(e cluster.Event) bool {
			return e.Kind == cluster.AttemptSucceeded && e.Instance == next && e.Holder == next
		})
	}
	for _, e := range ev.snapshot()[mark:] {
		if e.Kind == cluster.BecameLeader && e.Instance != next {
			t.Errorf("%s became the leader (term %d) during the handover to %s", e.Instance, e.Term, next)
		}
	}
	for _, id := range ids {
		if byID[id].svc.IsLeader() != (id == next) {
			t.Errorf("%s: IsLeader %v", id, byID[id].svc.IsLeader())
		}
	}
	kubectlGetLease(t, s, ns, "leader")
}

// TestResignBesideClientGo: a leasehold leader, a leasehold follower and a client-go elector
// on one Lease. The leader is asked to hand over to an instance that is not running: the
// leasehold follower keeps off the reserved Lease (R3), while client-go, which knows no
// reservation, takes the released Lease, with a compare-and-swap, at its next try. client-go
// keeps the annotations of the Lease it updates, but leaseTransitions grew, and so the term,
// so no leasehold instance reads the reservation any longer: when the client-go leader
// releases, a leasehold instance takes the Lease within R, as after any release. At no moment
// do two lead.
func TestResignBesideClientGo(t *testing.T) {
	s := api(t)
	m := newMixed(t, s)
	m.leasehold("lh-a", mixedL, mixedR)
	m.waitLeader("lh-a", 10*time.Second)
	lhB := m.leasehold("lh-b", mixedL, mixedR)
	cg := m.clientGo("cg", goT, true)
	m.steady(cg.wire)
	m.steady(lhB.wire)
	lock, admin := newLock(t, m.ns)
	ctx := context.Background()

	req, err := cluster.Resign(ctx, lock, "leader", "absent")
	if err != nil {
		t.Fatal(err)
	}
	if req.Holder != "lh-a" {
		t.Fatalf("Resign wrote %+v; want lh-a's record", req)
	}
	// lh-a stops at its next attempt and releases at the one after; client-go tries every
	// RetryPeriod, jittered.
	m.waitLeader("cg", 2*mixedR+jittered(goT.retry)+slack)
	lease, err := admin.CoordinationV1().Leases(m.ns).Get(ctx, "leader", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if lease.Annotations[AnnotationNextHolder] != "absent" || lease.Annotations[AnnotationResignTerm] != strconv.FormatUint(req.Term, 10) ||
		lease.Annotations[AnnotationTerm] != strconv.FormatUint(req.Term, 10) {
		t.Fatalf("the Lease client-go took: annotations %v; want next holder absent of term %d kept", lease.Annotations, req.Term)
	}
	rec, err := lock.Get(ctx, "leader")
	if err != nil || rec.Holder != "cg" || rec.Term != req.Term+1 || rec.NextHolder != "" || cluster.ResignPending(rec) {
		t.Fatalf("the record of client-go's Lease: %+v, %v; want cg, term %d, no next holder, nothing pending", rec, err, req.Term+1)
	}
	m.steady(lhB.wire)

	stop := time.Now()
	cg.stop() // ReleaseOnCancel: holderIdentity "", leaseTransitions unchanged
	var at time.Time
	var who string
	bound := goT.renew + mixedR + slack
	deadline := time.After(bound)
	for who == "" {
		m.led.mu.Lock()
		for _, id := range []string{"lh-a", "lh-b"} {
			if t0, ok := m.led.open[id]; ok && t0.After(stop) {
				who, at = id, t0
			}
		}
		changed := m.led.changed
		m.led.mu.Unlock()
		if who != "" {
			break
		}
		select {
		case <-changed:
		case <-deadline:
			t.Fatalf("no leasehold instance led within %v of client-go's release (a reservation read from an earlier term would make them wait %v); leaderships %s",
				bound, mixedL, m.led.String())
		}
	}
	m.finish()
	for _, sp := range m.led.spans {
		if sp.id == "lh-b" && sp.from.Before(stop) {
			t.Errorf("lh-b led from %s, while the Lease was reserved for another instance or held by client-go", clock(sp.from))
		}
	}
	t.Logf("client-go took the Lease released to an absent instance; once it released, %s took it %v after the stop", who, at.Sub(stop))
}
