package kubernetes

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
	k8s "k8s.io/client-go/kubernetes"

	"github.com/leasehold/leasehold/cluster"
	"github.com/leasehold/leasehold/kubernetes/internal/kubetest"
)

// history is every version of one Lease, as an admin watch delivers them from before anything
// writes it: check verifies leaseTransitions and the terms at each write, whoever wrote it.
type history struct {
	t    *testing.T
	name string
	stop context.CancelFunc
	done chan struct{}

	mu       sync.Mutex
	versions []*coordinationv1.Lease // nil: the Lease was deleted
	err      error                   // why the watch ended early
	changed  chan struct{}
}

// watchHistory starts recording the versions of the Lease name in ns; call it before anything
// writes the Lease. The recording stops at check, or at the end of the test.
func watchHistory(t *testing.T, s *kubetest.APIServer, ns, name string) *history {
	t.Helper()
	admin, err := k8s.NewForConfig(s.Config(s.AdminToken))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	w, err := admin.CoordinationV1().Leases(ns).Watch(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", name).String()})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	h := &history{t: t, name: name, stop: cancel, done: make(chan struct{}), changed: make(chan struct{})}
	go func() {
		defer close(h.done)
		defer w.Stop()
		for ev := range w.ResultChan() {
			h.mu.Lock()
			switch lease, _ := ev.Object.(*coordinationv1.Lease); {
			case ev.Type == watch.Deleted:
				h.versions = append(h.versions, nil)
			case (ev.Type == watch.Added || ev.Type == watch.Modified) && lease != nil:
				h.versions = append(h.versions, lease)
			case ev.Type != watch.Bookmark && ctx.Err() == nil && h.err == nil:
				h.err = fmt.Errorf("the watch of Lease %s sent a %s event: %v", name, ev.Type, ev.Object)
			}
			close(h.changed)
			h.changed = make(chan struct{})
			h.mu.Unlock()
		}
		h.mu.Lock()
		if ctx.Err() == nil && h.err == nil {
			h.err = fmt.Errorf("the API server closed the watch of Lease %s", name)
		}
		h.mu.Unlock()
	}()
	t.Cleanup(func() { cancel(); <-h.done })
	return h
}

// waitHolder waits for a version of the Lease, after the first from versions, whose holder
// satisfies ok, and returns it with the index of the version after it.
func (h *history) waitHolder(from int, timeout time.Duration, what string, ok func(holder string) bool) (*coordinationv1.Lease, int) {
	h.t.Helper()
	deadline := time.After(timeout)
	for {
		h.mu.Lock()
		for i := from; i < len(h.versions); i++ {
			if v := h.versions[i]; v != nil && ok(holderOf(v)) {
				h.mu.Unlock()
				return v, i + 1
			}
		}
		from = len(h.versions)
		changed, err := h.changed, h.err
		h.mu.Unlock()
		if err != nil {
			h.t.Fatal(err)
		}
		select {
		case <-changed:
		case <-deadline:
			h.t.Fatalf("no %s within %v", what, timeout)
		}
	}
}

// mark is the index of the next version.
func (h *history) mark() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.versions)
}

func holderOf(l *coordinationv1.Lease) string {
	if l.Spec.HolderIdentity == nil {
		return ""
	}
	return *l.Spec.HolderIdentity
}

func transitionsOf(l *coordinationv1.Lease) int32 {
	if l.Spec.LeaseTransitions == nil {
		return 0
	}
	return *l.Spec.LeaseTransitions
}

// change is one change of holder in a history.
type change struct {
	holder      string
	writer      string // leasehold or client-go
	transitions int32
	term        uint64
	created     bool
}

// check stops the recording and verifies every version against the one before, as the Lease
// API and client-go's leaderelection (tryAcquireOrRenew) define leaseTransitions: 0 when the
// Lease is created, 1 more when a write names a holder other than the one it replaces (a
// takeover of a released Lease included), unchanged otherwise (a renewal, a release, an edit
// of the annotations). And the terms (E11): a Lease's term never goes down; each leasehold
// takeover gives a term above every term the history held before, across deletions; a
// client-go takeover, one above the last term leasehold wrote. It returns the changes of
// holder.
func (h *history) check() []change {
	h.t.Helper()
	h.stop()
	<-h.done
	var changes []change
	var prev *coordinationv1.Lease
	var prevTerm, highest, written uint64 // written: the term of leasehold's last write
	for i, v := range h.versions {
		if v == nil {
			prev = nil
			continue
		}
		n := transitionsOf(v)
		term, err := termOf(v.ObjectMeta, v.Spec)
		if err != nil {
			h.t.Errorf("version %d of Lease %s (resourceVersion %s): %v", i, h.name, v.ResourceVersion, err)
			continue
		}
		_, annotated := v.Annotations[AnnotationTerm]
		writer := "client-go"
		if annotated && v.Annotations[AnnotationTermTransitions] == strconv.Itoa(int(n)) {
			writer = "leasehold" // client-go's takeover leaves the count the term was written with behind
		}
		holder := holderOf(v)
		switch {
		case prev == nil:
			if n != 0 {
				h.t.Errorf("Lease %s created by %s with leaseTransitions %d, want 0 (resourceVersion %s)", h.name, holder, n, v.ResourceVersion)
			}
			if holder != "" {
				changes = append(changes, change{holder, writer, n, term, true})
			}
		default:
			want := transitionsOf(prev)
			if holder != "" && holder != holderOf(prev) {
				want++
				changes = append(changes, change{holder, writer, n, term, false})
			}
			if n != want {
				h.t.Errorf("Lease %s went from holder %q, leaseTransitions %d to holder %q, leaseTransitions %d; want %d (resourceVersion %s)",
					h.name, holderOf(prev), transitionsOf(prev), holder, n, want, v.ResourceVersion)
			}
			if term < prevTerm {
				h.t.Errorf("Lease %s: term %d after %d (resourceVersion %s)", h.name, term, prevTerm, v.ResourceVersion)
			}
		}
		if holder != "" && (prev == nil || holder != holderOf(prev)) {
			switch {
			case writer == "leasehold" && term <= highest:
				h.t.Errorf("Lease %s: %s took it with term %d, not above %d, a term it had before (resourceVersion %s)", h.name, holder, term, highest, v.ResourceVersion)
			case writer == "client-go" && annotated && term <= written:
				h.t.Errorf("Lease %s: client-go's %s took it with term %d, not above %d, leasehold's last (resourceVersion %s)", h.name, holder, term, written, v.ResourceVersion)
			}
		}
		if writer == "leasehold" {
			written = term
		}
		highest = max(highest, term)
		prev, prevTerm = v, term
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.err != nil {
		h.t.Error(h.err)
	}
	return changes
}

// table lays changes out for the test log, one line per change of holder.
func table(changes []change) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%-10s %-10s %-16s %s", "HOLDER", "WRITER", "TRANSITIONS", "TERM")
	for _, c := range changes {
		note := ""
		if c.created {
			note = "  (created)"
		}
		fmt.Fprintf(&b, "\n%-10s %-10s %-16d %d%s", c.holder, c.writer, c.transitions, c.term, note)
	}
	return b.String()
}

// TestLeaseTransitionsCountChangesOfHolder: the Lock's writes, one by one, on the real API
// server: leaseTransitions is 0 when the Lock creates the Lease and grows by 1 at each change
// of holder, a takeover of a released Lease included, as client-go's leaderelection writes it;
// a renewal, a resign request, a release and a new term of the same holder keep it. The term
// is the annotation, whatever leaseTransitions is.
func TestLeaseTransitionsCountChangesOfHolder(t *testing.T) {
	s := api(t)
	ns := grant(t, s, "get", "create", "update")
	h := watchHistory(t, s, ns, "leader")
	lock, admin := newLock(t, ns)
	ctx := context.Background()
	now := time.Now()
	rec, err := lock.Create(ctx, "leader", cluster.Record{Holder: "a", Session: "1", Term: 92523339, AcquiredAt: now, RenewedAt: now, Duration: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		what        string
		write       func(r cluster.Record) cluster.Record
		transitions int32
	}{
		{"a renews", func(r cluster.Record) cluster.Record { return r }, 0},
		{"b takes over", func(r cluster.Record) cluster.Record { r.Holder, r.Session, r.Term = "b", "2", r.Term+1; return r }, 1},
		{"a resign is asked", func(r cluster.Record) cluster.Record { r.ResignRequested = time.Now(); return r }, 1},
		{"b releases", func(r cluster.Record) cluster.Record {
			r.Holder, r.Session, r.ResignRequested = "", "", time.Time{}
			return r
		}, 1},
		{"b takes the released Lease", func(r cluster.Record) cluster.Record { r.Holder, r.Session, r.Term = "b", "2", r.Term+1; return r }, 2},
		{"another process of b takes it, a new term", func(r cluster.Record) cluster.Record { r.Session, r.Term = "3", r.Term+1; return r }, 2},
		{"a takes over", func(r cluster.Record) cluster.Record { r.Holder, r.Session, r.Term = "a", "4", r.Term+1; return r }, 3},
	}
	for _, st := range steps {
		want := st.write(rec)
		if rec, err = lock.Update(ctx, "leader", want); err != nil {
			t.Fatalf("%s: %v", st.what, err)
		}
		lease, err := admin.CoordinationV1().Leases(ns).Get(ctx, "leader", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		n, a := transitionsOf(lease), lease.Annotations
		if n != st.transitions || a[AnnotationTerm] != strconv.FormatUint(want.Term, 10) || a[AnnotationTermTransitions] != strconv.Itoa(int(n)) || rec.Term != want.Term {
			t.Fatalf("%s: leaseTransitions %d, annotations %v, record term %d; want %d changes of holder and the term %d, written with them",
				st.what, n, a, rec.Term, st.transitions, want.Term)
		}
	}
	t.Logf("changes of holder:\n%s", table(h.check()))
}

// TestOldFormatLease: a Lease written by a leasehold that kept the term in leaseTransitions
// (no AnnotationTerm) reads with that term, and the annotations written for it (session,
// value, priority) read as current; the first takeover by this version counts one change of
// holder from there and writes its term beside it; a takeover by the earlier version after
// that reads with the term it wrote.
func TestOldFormatLease(t *testing.T) {
	s := api(t)
	ns := grant(t, s, "get", "create", "update")
	lock, admin := newLock(t, ns)
	leases := admin.CoordinationV1().Leases(ns)
	ctx := context.Background()
	holder, term, secs := "web-1", int32(92523339), int32(2)
	now := metav1.NewMicroTime(time.Now())
	old := &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: "leader", Annotations: map[string]string{
			AnnotationSession: "9f2c4e1a7b3d5e60", AnnotationSessionTerm: "92523339",
			AnnotationValue: "http://web-1:8080", AnnotationValueTerm: "92523339",
			AnnotationPriority: "5", AnnotationPriorityTerm: "92523339",
		}},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: &holder, LeaseTransitions: &term, LeaseDurationSeconds: &secs, AcquireTime: &now, RenewTime: &now},
	}
	if _, err := leases.Create(ctx, old, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	rec, err := lock.Get(ctx, "leader")
	if err != nil || rec.Holder != "web-1" || rec.Term != 92523339 || rec.Session != "9f2c4e1a7b3d5e60" || rec.Value != "http://web-1:8080" || rec.Priority != 5 {
		t.Fatalf("Get of a Lease of the earlier format: %+v, %v; want web-1, term 92523339, with its session, value and priority", rec, err)
	}
	// Its holder renews it with this version: the count is kept, the term written beside it.
	if rec, err = lock.Update(ctx, "leader", rec); err != nil || rec.Term != 92523339 || rec.Session != "9f2c4e1a7b3d5e60" {
		t.Fatalf("renewal: %+v, %v; want term 92523339 and the session", rec, err)
	}
	lease, err := leases.Get(ctx, "leader", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if a := lease.Annotations; transitionsOf(lease) != 92523339 || a[AnnotationTerm] != "92523339" || a[AnnotationTermTransitions] != "92523339" {
		t.Fatalf("after the renewal: leaseTransitions %d, annotations %v; want 92523339 kept and the term written beside it", transitionsOf(lease), a)
	}
	taken := rec
	taken.Holder, taken.Session, taken.Term, taken.Value, taken.ValueTerm, taken.Priority, taken.PriorityTerm = "web-2", "0a1b2c3d4e5f6071", 92600000, "", 0, 0, 0
	if rec, err = lock.Update(ctx, "leader", taken); err != nil || rec.Term != 92600000 {
		t.Fatalf("takeover: %+v, %v; want term 92600000", rec, err)
	}
	if lease, err = leases.Get(ctx, "leader", metav1.GetOptions{}); err != nil {
		t.Fatal(err)
	}
	if a := lease.Annotations; transitionsOf(lease) != 92523340 || a[AnnotationTerm] != "92600000" || a[AnnotationTermTransitions] != "92523340" {
		t.Fatalf("after the takeover: leaseTransitions %d, annotations %v; want one change of holder more, 92523340, and the term 92600000 beside it", transitionsOf(lease), a)
	}

	// An instance of the earlier version takes it over (a rolling upgrade): it writes its term,
	// above the 92523340 it read, into leaseTransitions, with its session, and keeps the
	// annotations it does not know. Its term and session read as they are.
	web3, term3 := "web-3", int32(92600007)
	lease.Spec.HolderIdentity, lease.Spec.LeaseTransitions = &web3, &term3
	lease.Annotations[AnnotationSession], lease.Annotations[AnnotationSessionTerm] = "5e6f708192a3b4c5", "92600007"
	if _, err := leases.Update(ctx, lease, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if rec, err = lock.Get(ctx, "leader"); err != nil || rec.Holder != "web-3" || rec.Term != 92600007 || rec.Session != "5e6f708192a3b4c5" {
		t.Fatalf("Get of the earlier version's takeover: %+v, %v; want web-3, term 92600007, with its session", rec, err)
	}
}

// TestLeaseTransitionsBesideClientGo: leasehold instances and client-go electors hand one
// Lease over to each other, in both directions and between leasehold instances, and the Lease
// is deleted once: leaseTransitions grows by exactly 1 at each change of holder, whoever
// writes it, and is 0 on the Lease created again; each leasehold leadership's term is above
// every term before, client-go's takeovers move the term on too, and the term of the Lease
// created again is above those of the deleted one. At no moment do two instances lead.
func TestLeaseTransitionsBesideClientGo(t *testing.T) {
	s := api(t)
	m := newMixed(t, s)
	h := m.hist
	lock, admin := newLock(t, m.ns)
	ctx := context.Background()
	lh := map[string]*lhNode{"lh-a": m.leasehold("lh-a", mixedL, mixedR)}
	_, from := h.waitHolder(0, 10*time.Second, "lh-a's Lease", func(h string) bool { return h == "lh-a" })
	current := "lh-a"
	// handTo asks the leasehold holder to hand over to next (R1-R3: no other leasehold
	// instance takes the reserved Lease; client-go knows no reservation, but waits for nothing
	// else) and waits until next holds the Lease.
	handTo := func(next string) {
		t.Helper()
		if _, err := cluster.Resign(ctx, lock, "leader", next); err != nil {
			t.Fatal(err)
		}
		_, from = h.waitHolder(from, 2*mixedR+jittered(goT.retry)+slack+time.Second, next+" holding the Lease", func(h string) bool { return h == next })
		current = next
	}
	// released waits until a leasehold instance other than current takes the Lease after it
	// was released, and returns that instance. client-go's release on cancel can itself be
	// cut by the cancel ("Failed to update lease ... context canceled", seen in CI): the
	// Lease is then a crashed holder's, taken over once its duration has run out, plus R.
	// This test counts transitions; the takeover bounds are mixed_test.go's.
	released := func() string {
		t.Helper()
		lease, f := h.waitHolder(from, goT.lease+mixedL+mixedR+slack+time.Second, "a leasehold instance holding the Lease", func(h string) bool { return lh[h] != nil && h != current })
		from, current = f, holderOf(lease)
		return current
	}

	cg1 := m.clientGo("cg-1", goT, true)
	m.steady(cg1.wire)
	handTo("cg-1") // client-go takes over from leasehold
	lh["lh-b"] = m.leasehold("lh-b", mixedL, mixedR)
	m.steady(lh["lh-b"].wire)
	cg1.stop()
	first := released() // leasehold takes over the Lease client-go released
	other := "lh-a"
	if first == "lh-a" {
		other = "lh-b"
	}
	handTo(other) // leasehold to leasehold
	cg2 := m.clientGo("cg-2", goT, false)
	m.steady(cg2.wire)
	handTo("cg-2")

	// client-go's holder stops without releasing, the Lease is deleted: a leasehold follower,
	// which saw the terms of the deleted Lease, creates it again above them.
	cg2.stop()
	<-cg2.done
	if err := admin.CoordinationV1().Leases(m.ns).Delete(ctx, "leader", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	current = ""
	released()
	cg3 := m.clientGo("cg-3", goT, true)
	m.steady(cg3.wire)
	handTo("cg-3")
	cg3.stop()
	released()

	changes := m.finish()
	var got []string
	for _, c := range changes {
		got = append(got, fmt.Sprintf("%s by %s: %d", c.holder, c.writer, c.transitions))
	}
	// Who took each Lease and what leaseTransitions it wrote; the leasehold instances after a
	// release are the ones the test saw.
	want := []string{"lh-a by leasehold: 0", "cg-1 by client-go: 1", first + " by leasehold: 2", other + " by leasehold: 3", "cg-2 by client-go: 4"}
	if len(changes) == 8 {
		want = append(want, changes[5].holder+" by leasehold: 0", "cg-3 by client-go: 1", changes[7].holder+" by leasehold: 2")
	}
	if strings.Join(got, ", ") != strings.Join(want, ", ") {
		t.Errorf("changes of holder:\n%s\nwant %s", strings.Join(got, ", "), strings.Join(want, ", "))
	}
}
