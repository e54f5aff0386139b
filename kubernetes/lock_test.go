package kubernetes

import (
	"context"
	"errors"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8s "k8s.io/client-go/kubernetes"

	"github.com/leasehold/leasehold/cluster"
)

func TestLeaseSecondsRoundsUp(t *testing.T) { // K1: leaseDurationSeconds is L rounded up, at least 1
	for _, c := range []struct {
		d    time.Duration
		want int32
	}{{0, 1}, {time.Millisecond, 1}, {time.Second, 1}, {1500 * time.Millisecond, 2}, {2 * time.Second, 2}, {15 * time.Second, 15}, {15*time.Second + 1, 16}} {
		if got := leaseSeconds(c.d); got != c.want {
			t.Errorf("leaseSeconds(%v) = %d, want %d", c.d, got, c.want)
		}
	}
}

// TestTransitionsAfter: leaseTransitions grows by 1 at each change of holder and at no other
// write, as client-go's leaderelection writes it (tryAcquireOrRenew): a takeover, of a
// released Lease too, adds 1; a renewal, a release and a new leadership of the same holder
// keep it.
func TestTransitionsAfter(t *testing.T) {
	spec := func(holder *string, n *int32) coordinationv1.LeaseSpec {
		return coordinationv1.LeaseSpec{HolderIdentity: holder, LeaseTransitions: n}
	}
	str := func(s string) *string { return &s }
	num := func(n int32) *int32 { return &n }
	for _, c := range []struct {
		what   string
		prev   coordinationv1.LeaseSpec
		holder string
		want   int32
	}{
		{"a renewal", spec(str("a"), num(4)), "a", 4},
		{"a takeover", spec(str("a"), num(4)), "b", 5},
		{"a release", spec(str("a"), num(4)), "", 4},
		{"a takeover of a released Lease", spec(str(""), num(4)), "a", 5},
		{"a release of a released Lease", spec(str(""), num(4)), "", 4},
		{"a Lease without a holder", spec(nil, nil), "a", 1},
		{"a Lease without leaseTransitions", spec(str("a"), nil), "b", 1},
		{"the largest count", spec(str("a"), num(math.MaxInt32)), "b", math.MaxInt32},
	} {
		if got := transitionsAfter(c.prev, c.holder); got != c.want {
			t.Errorf("%s: leaseTransitions %d, want %d", c.what, got, c.want)
		}
	}
}

// TestTermOf: the term of a Lease is its annotation while leaseTransitions is the count it was
// written with; once a writer that does not know it took the Lease over, it is above it, and
// leaseTransitions when an earlier leasehold wrote its term there; a Lease without it (an
// earlier leasehold's, or client-go's) has leaseTransitions for its term; an annotation that
// does not fit is an error naming it.
func TestTermOf(t *testing.T) {
	lease := func(n *int32, kv ...string) (metav1.ObjectMeta, coordinationv1.LeaseSpec) {
		m := metav1.ObjectMeta{Annotations: map[string]string{"team": "infra"}}
		for i := 0; i < len(kv); i += 2 {
			m.Annotations[kv[i]] = kv[i+1]
		}
		return m, coordinationv1.LeaseSpec{LeaseTransitions: n}
	}
	num := func(n int32) *int32 { return &n }
	for _, c := range []struct {
		what string
		n    *int32
		kv   []string
		want uint64
	}{
		{"as leasehold wrote it", num(3), []string{AnnotationTerm, "92523339", AnnotationTermTransitions, "3"}, 92523339},
		{"a takeover by client-go since", num(4), []string{AnnotationTerm, "92523339", AnnotationTermTransitions, "3"}, 92523340},
		{"two takeovers by client-go since", num(5), []string{AnnotationTerm, "92523339", AnnotationTermTransitions, "3"}, 92523340},
		{"a takeover by an earlier leasehold since", num(92600000), []string{AnnotationTerm, "92523339", AnnotationTermTransitions, "3"}, 92600000},
		{"leaseTransitions lowered since", num(1), []string{AnnotationTerm, "92523339", AnnotationTermTransitions, "3"}, 92523340},
		{"leaseTransitions removed since", nil, []string{AnnotationTerm, "92523339", AnnotationTermTransitions, "3"}, 92523340},
		{"the largest term, taken over", num(1), []string{AnnotationTerm, "9223372036854775807", AnnotationTermTransitions, "0"}, 9223372036854775808},
		{"a term beyond int32", num(0), []string{AnnotationTerm, "4294967296", AnnotationTermTransitions, "0"}, 4294967296},
		{"an earlier leasehold's Lease", num(92523339), nil, 92523339},
		{"client-go's Lease", num(2), nil, 2},
		{"client-go's new Lease", nil, nil, 0},
	} {
		m, s := lease(c.n, c.kv...)
		if got, err := termOf(m, s); err != nil || got != c.want {
			t.Errorf("%s: term %d, %v; want %d", c.what, got, err, c.want)
		}
	}
	for _, c := range []struct {
		what string
		n    int32
		kv   []string
		name string // what the error names
	}{
		{"a negative leaseTransitions", -1, nil, "spec.leaseTransitions"},
		{"a term without its count", 0, []string{AnnotationTerm, "7"}, AnnotationTermTransitions},
		{"a count without its term", 0, []string{AnnotationTermTransitions, "0"}, AnnotationTerm},
		{"a malformed term", 0, []string{AnnotationTerm, "x", AnnotationTermTransitions, "0"}, AnnotationTerm},
		{"a negative term", 0, []string{AnnotationTerm, "-7", AnnotationTermTransitions, "0"}, AnnotationTerm},
		{"a term beyond the largest", 0, []string{AnnotationTerm, "9223372036854775808", AnnotationTermTransitions, "0"}, AnnotationTerm},
		{"a negative count", 0, []string{AnnotationTerm, "7", AnnotationTermTransitions, "-1"}, AnnotationTermTransitions},
		{"a count beyond int32", 0, []string{AnnotationTerm, "7", AnnotationTermTransitions, "2147483648"}, AnnotationTermTransitions},
	} {
		m, s := lease(&c.n, c.kv...)
		if got, err := termOf(m, s); err == nil || !strings.Contains(err.Error(), c.name) {
			t.Errorf("%s: term %d, %v; want an error naming %s", c.what, got, err, c.name)
		}
	}
}

// newLock returns a Lease lock in ns as the restricted user, and an admin client to inspect
// the Leases it writes.
func newLock(t *testing.T, ns string) (cluster.Lock, k8s.Interface) {
	t.Helper()
	s := api(t)
	user, err := k8s.NewForConfig(s.Config(s.UserToken))
	if err != nil {
		t.Fatal(err)
	}
	admin, err := k8s.NewForConfig(s.Config(s.AdminToken))
	if err != nil {
		t.Fatal(err)
	}
	return NewLeaseLock(user.CoordinationV1(), ns, 5*time.Second), admin
}

// TestLeaseMapping checks the K1 mapping of a record onto the Lease's fields, read back with
// another client as kubectl would, and the errors of Get and Create (E2's lost races).
func TestLeaseMapping(t *testing.T) {
	s := api(t)
	ns := grant(t, s, "get", "create", "update")
	lock, admin := newLock(t, ns)
	ctx := context.Background()

	if _, err := lock.Get(ctx, "leader"); !errors.Is(err, cluster.ErrNotFound) {
		t.Fatalf("Get of a missing Lease: %v, want ErrNotFound", err)
	}
	acquired := time.Now().Add(-time.Minute).Truncate(time.Microsecond)
	renewed := time.Now().Truncate(time.Microsecond)
	rec, err := lock.Create(ctx, "leader", cluster.Record{Holder: "pod-a", Term: 3, AcquiredAt: acquired, RenewedAt: renewed, Duration: 1500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if rec.Revision == "" || rec.Holder != "pod-a" || rec.Term != 3 || !rec.AcquiredAt.Equal(acquired) || !rec.RenewedAt.Equal(renewed) || rec.Duration != 2*time.Second {
		t.Fatalf("Create returned %+v", rec)
	}
	lease, err := admin.CoordinationV1().Leases(ns).Get(ctx, "leader", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	sp := lease.Spec
	if *sp.HolderIdentity != "pod-a" || *sp.LeaseTransitions != 0 || *sp.LeaseDurationSeconds != 2 ||
		!sp.AcquireTime.Time.Equal(acquired) || !sp.RenewTime.Time.Equal(renewed) || lease.ResourceVersion != rec.Revision {
		t.Fatalf("Lease spec %+v (resourceVersion %s), want holder pod-a, transitions 0, 2 s, the times given, revision %s", sp, lease.ResourceVersion, rec.Revision)
	}
	if a := lease.Annotations; a[AnnotationTerm] != "3" || a[AnnotationTermTransitions] != "0" {
		t.Fatalf("Lease annotations %v, want the term 3, written with leaseTransitions 0", a)
	}

	_, err = lock.Create(ctx, "leader", cluster.Record{Holder: "pod-b", Term: 1})
	var status apierrors.APIStatus
	if !errors.Is(err, cluster.ErrConflict) || !errors.As(err, &status) || !apierrors.IsAlreadyExists(err) {
		t.Fatalf("Create of an existing Lease: %v, want ErrConflict wrapping AlreadyExists", err)
	}

	// A label put by someone else survives the holder's updates.
	lease.Labels = map[string]string{"team": "infra"}
	lease, err = admin.CoordinationV1().Leases(ns).Update(ctx, lease, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got, err := lock.Get(ctx, "leader")
	if err != nil || got.Revision != lease.ResourceVersion {
		t.Fatalf("Get: %+v, %v; want revision %s", got, err, lease.ResourceVersion)
	}
	// Release (E7) writes an empty holder.
	got.Holder = ""
	released, err := lock.Update(ctx, "leader", got)
	if err != nil {
		t.Fatal(err)
	}
	lease, err = admin.CoordinationV1().Leases(ns).Get(ctx, "leader", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if lease.Spec.HolderIdentity == nil || *lease.Spec.HolderIdentity != "" || lease.Labels["team"] != "infra" || released.Holder != "" {
		t.Fatalf("after release: holder %v, labels %v; want an empty holder and the label kept", lease.Spec.HolderIdentity, lease.Labels)
	}
}

// TestStaleResourceVersionIsALostRace: an update on a resourceVersion that changed is a
// 409 Conflict, which the lock reports as ErrConflict (E2: compare-and-swap, a lost race means
// follow). Of eight instances racing to update the same revision, exactly one wins; of eight
// racing to create the Lease, exactly one wins.
func TestStaleResourceVersionIsALostRace(t *testing.T) {
	s := api(t)
	ns := grant(t, s, "get", "create", "update")
	ctx := context.Background()
	const n = 8
	locks := make([]cluster.Lock, n)
	for i := range locks {
		locks[i], _ = newLock(t, ns)
	}

	race := func(op func(i int) error) (wins int, errs []error) {
		var mu sync.Mutex
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := range n {
			wg.Go(func() {
				<-start
				err := op(i)
				mu.Lock()
				defer mu.Unlock()
				if err == nil {
					wins++
				} else {
					errs = append(errs, err)
				}
			})
		}
		close(start)
		wg.Wait()
		return wins, errs
	}
	check := func(what string, wins int, errs []error) {
		t.Helper()
		if wins != 1 {
			t.Errorf("%s: %d winners, want 1", what, wins)
		}
		for _, err := range errs {
			if !errors.Is(err, cluster.ErrConflict) {
				t.Errorf("%s: a loser got %v, want ErrConflict", what, err)
			}
		}
	}

	wins, errs := race(func(i int) error {
		_, err := locks[i].Create(ctx, "leader", cluster.Record{Holder: string(rune('a' + i)), Term: 1, Duration: testL})
		return err
	})
	check("create", wins, errs)

	stale, err := locks[0].Get(ctx, "leader")
	if err != nil {
		t.Fatal(err)
	}
	wins, errs = race(func(i int) error {
		r := stale
		r.Holder, r.Term = string(rune('a'+i)), stale.Term+1
		_, err := locks[i].Update(ctx, "leader", r)
		return err
	})
	check("update", wins, errs)
	for _, err := range errs {
		if !apierrors.IsConflict(err) {
			t.Errorf("update: %v does not wrap the API server's 409 Conflict", err)
		}
	}

	// The winner's revision is current; the stale one stays refused.
	if _, err := locks[1].Update(ctx, "leader", stale); !errors.Is(err, cluster.ErrConflict) {
		t.Fatalf("update on a stale resourceVersion: %v, want ErrConflict", err)
	}
}
