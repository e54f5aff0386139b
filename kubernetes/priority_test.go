package kubernetes

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8s "k8s.io/client-go/kubernetes"

	"github.com/leasehold/leasehold/cluster"
)

// TestPriorityAnnotations: the holder's priority and health (Q1, U2) are annotations of the
// Lease, with the term they were written for, and a preemption request's priority (Q2) is one
// of the resign annotations; they read back through the lock; a release answering a
// preemption keeps the next holder and its priority and removes the holder's rank (Q4); a
// takeover removes the request; priority 0 and healthy removes the rank's annotations; those
// of another term read as absent; a malformed one is an error naming it.
func TestPriorityAnnotations(t *testing.T) {
	s := api(t)
	ns := grant(t, s, "get", "create", "update")
	lock, admin := newLock(t, ns)
	leases := admin.CoordinationV1().Leases(ns)
	ctx := context.Background()

	annotations := func() map[string]string {
		t.Helper()
		l, err := leases.Get(ctx, "leader", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return l.Annotations
	}
	// want checks the Lease's annotations of the rank and the request: a value, or "" for
	// absent.
	want := func(when string, kv map[string]string) {
		t.Helper()
		a := annotations()
		for k, v := range kv {
			if got, ok := a[k]; v == "" && ok {
				t.Errorf("%s: the Lease has %s=%q, want it absent", when, k, got)
			} else if v != "" && got != v {
				t.Errorf("%s: the Lease has %s=%q, want %q", when, k, got, v)
			}
		}
	}
	// annotate writes kv into the Lease's annotations; with takeover, as a writer that does not
	// know them taking the Lease over, which adds 1 to leaseTransitions, and so to the term.
	annotate := func(kv map[string]string, takeover bool) {
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
		if takeover {
			*l.Spec.LeaseTransitions++
		}
		if _, err := leases.Update(ctx, l, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	rank := func(r cluster.Record) string {
		return fmt.Sprintf("priority %d, unhealthy %v, of term %d; preempt %v, next %q of priority %d",
			r.Priority, r.Unhealthy, r.PriorityTerm, r.Preempt, r.NextHolder, r.NextPriority)
	}

	// A holder of priority -3 reporting itself unhealthy.
	rec, err := lock.Create(ctx, "leader", cluster.Record{Holder: "web-1", Session: "9f2c4e1a7b3d5e60", Term: 7, Duration: 2 * time.Second,
		Priority: -3, Unhealthy: true, PriorityTerm: 7})
	if err != nil || rec.Priority != -3 || !rec.Unhealthy || rec.PriorityTerm != 7 {
		t.Fatalf("Create: %+v, %v; want the priority and health back", rec, err)
	}
	want("after Create", map[string]string{AnnotationPriority: "-3", AnnotationUnhealthy: "true", AnnotationPriorityTerm: "7", AnnotationNextPriority: ""})
	annotate(map[string]string{"team": "infra"}, false)
	got, err := lock.Get(ctx, "leader")
	if p, sick := got.CurrentPriority(); err != nil || p != -3 || !sick || got.PriorityTerm != 7 {
		t.Fatalf("Get: %s, %v; want priority -3, unhealthy, of term 7", rank(got), err)
	}

	// A renewal, healthy again and of priority 5, removes the health annotation.
	got.Priority, got.Unhealthy = 5, false
	if got, err = lock.Update(ctx, "leader", got); err != nil || got.Priority != 5 || got.Unhealthy || got.PriorityTerm != 7 {
		t.Fatalf("renewal: %s, %v; want priority 5, healthy, of term 7", rank(got), err)
	}
	want("after the renewal", map[string]string{AnnotationPriority: "5", AnnotationUnhealthy: "", AnnotationPriorityTerm: "7"})

	// A preemption request by web-2, of priority 9.
	asked := time.Now().UTC()
	got.ResignRequested, got.NextHolder, got.Preempt, got.NextPriority = asked, "web-2", true, 9
	if got, err = lock.Update(ctx, "leader", got); err != nil || !got.Preempt || got.NextPriority != 9 || got.NextHolder != "web-2" || !cluster.ResignPending(got) {
		t.Fatalf("preemption request: %s, %v; want a pending preemption by web-2 of priority 9", rank(got), err)
	}
	want("after the preemption request", map[string]string{AnnotationNextPriority: "9", AnnotationNextHolder: "web-2", AnnotationResignTerm: "7", AnnotationPriority: "5"})
	if got, err = lock.Get(ctx, "leader"); err != nil || !got.Preempt || got.NextPriority != 9 || got.Priority != 5 || !got.ResignRequested.Equal(asked) {
		t.Fatalf("Get of the preemption request: %s, %v", rank(got), err)
	}

	// The release answering it: no holder, no rank, the preemption kept (Q4).
	got.Holder, got.Session, got.ResignRequested = "", "", time.Time{}
	got.Priority, got.Unhealthy, got.PriorityTerm = 0, false, 0
	released, err := lock.Update(ctx, "leader", got)
	if err != nil || released.NextHolder != "web-2" || !released.Preempt || released.NextPriority != 9 || released.Priority != 0 || released.PriorityTerm != 0 {
		t.Fatalf("release: %s, %v; want web-2's preemption of priority 9 kept, no rank", rank(released), err)
	}
	want("after the release", map[string]string{AnnotationPriority: "", AnnotationUnhealthy: "", AnnotationPriorityTerm: "",
		AnnotationNextHolder: "web-2", AnnotationNextPriority: "9", AnnotationResignTerm: "7", AnnotationResignRequested: "", "team": "infra"})
	if got, err = lock.Get(ctx, "leader"); err != nil || got.Holder != "" || !got.Preempt || got.NextPriority != 9 || got.NextHolder != "web-2" {
		t.Fatalf("Get of the release: %s, %v", rank(got), err)
	}

	// web-2 takes it, of priority 0 but unhealthy: the request goes, its rank shows.
	got.Holder, got.Session, got.Term = "web-2", "0a1b2c3d4e5f6071", 8
	got.NextHolder, got.Preempt, got.NextPriority = "", false, 0
	got.Priority, got.Unhealthy, got.PriorityTerm = 0, true, 8
	if got, err = lock.Update(ctx, "leader", got); err != nil || got.Preempt || got.NextPriority != 0 || got.Priority != 0 || !got.Unhealthy || got.PriorityTerm != 8 {
		t.Fatalf("takeover: %s, %v; want no request, priority 0, unhealthy, of term 8", rank(got), err)
	}
	want("after the takeover", map[string]string{AnnotationPriority: "0", AnnotationUnhealthy: "true", AnnotationPriorityTerm: "8",
		AnnotationNextHolder: "", AnnotationNextPriority: "", AnnotationResignTerm: "", "team": "infra"})

	// Priority 0 and healthy: nothing to carry.
	got.Unhealthy, got.PriorityTerm = false, 0
	if got, err = lock.Update(ctx, "leader", got); err != nil || got.Priority != 0 || got.Unhealthy || got.PriorityTerm != 0 {
		t.Fatalf("renewal of priority 0, healthy: %s, %v", rank(got), err)
	}
	want("after a renewal of priority 0, healthy", map[string]string{AnnotationPriority: "", AnnotationUnhealthy: "", AnnotationPriorityTerm: "", "team": "infra"})

	// Annotations of another term (a writer that does not know them took the Lease over,
	// keeping them) read as absent.
	now := time.Now().UTC().Format(time.RFC3339Nano)
	annotate(map[string]string{AnnotationPriority: "4", AnnotationUnhealthy: "true", AnnotationPriorityTerm: "8",
		AnnotationResignRequested: now, AnnotationNextHolder: "web-3", AnnotationNextPriority: "6", AnnotationResignTerm: "8"}, true)
	got, err = lock.Get(ctx, "leader")
	if p, sick := got.CurrentPriority(); err != nil || got.Term != 9 || p != 0 || sick || got.Priority != 0 || got.Unhealthy || got.PriorityTerm != 0 ||
		got.Preempt || got.NextPriority != 0 || got.NextHolder != "" || cluster.ResignPending(got) {
		t.Fatalf("Get with annotations of term 8 on a Lease of term 9: %s, %v; want term 9, no rank, no request", rank(got), err)
	}
	// Of the Lease's term, they read as they are.
	current := map[string]string{AnnotationPriority: "4", AnnotationUnhealthy: "true", AnnotationPriorityTerm: "9",
		AnnotationResignRequested: now, AnnotationNextHolder: "web-3", AnnotationNextPriority: "6", AnnotationResignTerm: "9"}
	annotate(current, false)
	got, err = lock.Get(ctx, "leader")
	if p, sick := got.CurrentPriority(); err != nil || p != 4 || !sick || got.PriorityTerm != 9 || !got.Preempt || got.NextPriority != 6 || got.NextHolder != "web-3" {
		t.Fatalf("Get with annotations of term 9: %s, %v; want priority 4, unhealthy, and web-3's preemption of priority 6", rank(got), err)
	}

	for _, bad := range []map[string]string{
		{AnnotationPriority: "high"},
		{AnnotationPriority: "2147483648"}, // beyond int32, as ElectorConfig.Priority
		{AnnotationUnhealthy: "yes"},
		{AnnotationPriorityTerm: "-1"},
		{AnnotationNextPriority: "1.5"},
	} {
		annotate(bad, false)
		_, err := lock.Get(ctx, "leader")
		for k := range bad {
			if err == nil || errors.Is(err, cluster.ErrNotFound) || !strings.Contains(err.Error(), k) {
				t.Errorf("Get with %v: %v; want an error naming %s", bad, err, k)
			}
		}
		annotate(current, false)
	}
}

// TestPriorityStaleAfterClientGoTakeover: a client-go LeaderElector takes over a Lease a
// leasehold holder of priority 7, unhealthy, left held with a preemption pending; client-go
// keeps the annotations and grows leaseTransitions, so the new holder reads as of priority 0,
// healthy, with no request pending: it is not ranked as the previous holder (Q1, U2).
func TestPriorityStaleAfterClientGoTakeover(t *testing.T) {
	s := api(t)
	m := newMixed(t, s)
	lock, admin := newLock(t, m.ns)
	ctx := context.Background()
	now := time.Now()
	if _, err := lock.Create(ctx, "leader", cluster.Record{Holder: "web-1", Session: "9f2c4e1a7b3d5e60", Term: 7, AcquiredAt: now, RenewedAt: now,
		Duration: time.Second, Priority: 7, Unhealthy: true, PriorityTerm: 7,
		ResignRequested: now.UTC(), NextHolder: "web-2", Preempt: true, NextPriority: 9}); err != nil {
		t.Fatal(err)
	}
	m.clientGo("cg", goT, true)
	m.waitLeader("cg", time.Second+jittered(goT.retry)+slack)
	lease, err := admin.CoordinationV1().Leases(m.ns).Get(ctx, "leader", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if a := lease.Annotations; a[AnnotationPriority] != "7" || a[AnnotationUnhealthy] != "true" || a[AnnotationPriorityTerm] != "7" ||
		a[AnnotationNextPriority] != "9" || a[AnnotationResignTerm] != "7" || a[AnnotationTerm] != "7" || lease.Spec.LeaseTransitions == nil || *lease.Spec.LeaseTransitions != 1 {
		t.Fatalf("the Lease client-go took: annotations %v, leaseTransitions %v; want web-1's of term 7 kept, 1 change of holder", a, lease.Spec.LeaseTransitions)
	}
	rec, err := lock.Get(ctx, "leader")
	p, sick := rec.CurrentPriority()
	if err != nil || rec.Holder != "cg" || rec.Term != 8 || p != 0 || sick || rec.Priority != 0 || rec.Unhealthy ||
		rec.Preempt || rec.NextPriority != 0 || rec.NextHolder != "" || cluster.ResignPending(rec) {
		t.Fatalf("the record of client-go's Lease: %+v, %v; want cg, term 8, priority 0, healthy, nothing pending", rec, err)
	}
	m.finish()
}

// TestPriorityBesideClientGo: a mixed fleet on one Lease, two client-go LeaderElectors beside
// a leasehold Elector of priority 1 that leads and one of priority 5 that starts later, with a
// stability window of 2 L. The higher one asks the leader to hand over (Q2), which releases
// the Lease reserved for it (Q4); client-go knows no reservation and may take the released
// Lease first: a client-go elector that leads is stopped (releasing), since it never yields,
// and the higher leasehold instance asks again whoever holds the Lease next. It ends up
// leading, with its priority on the Lease. At no moment do two lead: every leasehold Elector's
// IsLeader and every client-go elector's leadership (OnStartedLeading to its context's end,
// OnStoppedLeading) are sampled, and the leaderships from the events and callbacks must not
// overlap.
func TestPriorityBesideClientGo(t *testing.T) {
	s := api(t)
	m := newMixed(t, s)
	ev := newEvents()
	low := m.elector(ev, "lh-low", 1, 0)
	m.waitLeader("lh-low", 10*time.Second)
	cgs := map[string]*cgNode{"cg-1": m.clientGo("cg-1", goT, true), "cg-2": m.clientGo("cg-2", goT, true)}
	for _, n := range cgs {
		m.steady(n.wire)
	}
	window := 2 * mixedL
	started := time.Now()
	high := m.elector(ev, "lh-high", 5, window)
	electors := map[string]*cluster.Elector{"lh-low": low, "lh-high": high}
	sampled := sampleLeaders(electors, m.led, cgs)
	t.Cleanup(func() { sampled() })

	// Until lh-high leads, a client-go elector that took the Lease is stopped: it would hold it
	// for ever, whatever the requests written on it.
	stopped := map[string]bool{}
	bound := window + 30*time.Second // a guard: the window, then a few R and client-go retries
	deadline := time.After(bound)
	for {
		m.led.mu.Lock()
		_, done := m.led.open["lh-high"]
		var cgLeading []string
		for id := range cgs {
			if _, ok := m.led.open[id]; ok && !stopped[id] {
				cgLeading = append(cgLeading, id)
			}
		}
		changed := m.led.changed
		m.led.mu.Unlock()
		if done {
			break
		}
		for _, id := range cgLeading {
			t.Logf("%s took the Lease; stopping it (ReleaseOnCancel)", id)
			stopped[id] = true
			cgs[id].stop()
		}
		select {
		case <-changed:
		case <-deadline:
			t.Fatalf("lh-high did not lead within %v; leaderships %s", bound, m.led.String())
		}
	}

	// lh-low's leadership ended with the preemption, a resign request (Q3: 5 outranks 1).
	var from int
	stop := ev.wait(t, &from, 5*time.Second, "lh-low stopping", kindOf(cluster.StoppedLeading, "lh-low"))
	if stop.Reason != cluster.ReasonResign || !errors.Is(stop.Err, cluster.ErrResignRequested) {
		t.Errorf("lh-low stopped leading with reason %q, error %v; want resign", stop.Reason, stop.Err)
	}
	// lh-high renews twice: it keeps the Lease, lh-low does not ask for it back.
	from = 0
	became := ev.wait(t, &from, 5*time.Second, "lh-high leading", kindOf(cluster.BecameLeader, "lh-high"))
	for range 2 {
		ev.wait(t, &from, mixedR+slack+5*time.Second, "lh-high renewing", func(e cluster.Event) bool {
			return e.Kind == cluster.AttemptSucceeded && e.Instance == "lh-high" && e.Holder == "lh-high"
		})
	}
	if !high.IsLeader() || low.IsLeader() {
		t.Errorf("IsLeader: lh-high %v, lh-low %v; want lh-high alone", high.IsLeader(), low.IsLeader())
	}
	_, admin := newLock(t, m.ns)
	lease, err := admin.CoordinationV1().Leases(m.ns).Get(context.Background(), "leader", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if a := lease.Annotations; a[AnnotationPriority] != "5" || a[AnnotationPriorityTerm] != strconv.FormatUint(became.Term, 10) {
		t.Errorf("lh-high's Lease (term %d): annotations %v; want its priority 5 of that term", became.Term, a)
	}
	if wrong := sampled(); len(wrong) > 0 {
		t.Errorf("two instances led at once, at the samples %s", strings.Join(wrong, "; "))
	}
	m.finish()
	t.Logf("lh-high (priority 5, window %v) led %v after its start, lh-low (priority 1) having stopped %v after it; client-go electors stopped on the way: %d; leaderships %s",
		window, became.Time.Sub(started), stop.Time.Sub(started), len(stopped), m.led.String())
}

// elector starts a leasehold cluster.Elector of priority and stability window (0 for the
// default) on the Lease as the restricted user, with its events in ev and its leaderships in
// the ledger; it is stopped at the end of the test.
func (m *mixed) elector(ev *events, id string, priority int, window time.Duration) *cluster.Elector {
	m.t.Helper()
	cs, err := k8s.NewForConfig(m.s.Config(m.s.UserToken))
	if err != nil {
		m.t.Fatal(err)
	}
	e, err := cluster.NewElector(cluster.ElectorConfig{
		Lock: NewLeaseLock(cs.CoordinationV1(), m.ns, mixedL-mixedR), LeaseName: "leader",
		LeaseDuration: mixedL, RenewInterval: mixedR, InstanceID: id, Priority: priority, StabilityWindow: window,
		Observer: func(e cluster.Event) {
			switch e.Kind {
			case cluster.BecameLeader:
				m.led.begin(e.Instance, e.Time)
			case cluster.StoppedLeading:
				m.led.end(e.Instance, e.Time)
			}
			ev.observe(e)
		},
	})
	if err != nil {
		m.t.Fatal(err)
	}
	if err := e.Start(context.Background()); err != nil {
		m.t.Fatal(err)
	}
	m.t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := e.Stop(ctx); err != nil {
			m.t.Errorf("Stop %s: %v", id, err)
		}
	})
	return e
}

// sampleLeaders checks, every few milliseconds until the returned function is called, that at
// most one instance leads: a leasehold Elector by its IsLeader, a client-go elector while
// its OnStartedLeading context lives. The function stops sampling and returns what was wrong.
func sampleLeaders(electors map[string]*cluster.Elector, led *ledger, cgs map[string]*cgNode) func() []string {
	stop, out := make(chan struct{}), make(chan []string, 1)
	go func() {
		var wrong []string
		tick := time.NewTicker(2 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				out <- wrong
				return
			case <-tick.C:
			}
			var leaders []string
			for id, e := range electors {
				if e.IsLeader() {
					leaders = append(leaders, id)
				}
			}
			for _, id := range led.leading() {
				if _, ok := cgs[id]; ok {
					leaders = append(leaders, id)
				}
			}
			if len(leaders) > 1 && len(wrong) < 10 {
				sort.Strings(leaders)
				wrong = append(wrong, fmt.Sprintf("%s: %v", time.Now().Format("15:04:05.000"), leaders))
			}
		}
	}()
	var once sync.Once
	var wrong []string
	return func() []string {
		once.Do(func() {
			close(stop)
			wrong = <-out
		})
		return wrong
	}
}
