package kubernetes

import (
	"context"
	"errors"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/leasehold/leasehold/cluster"
)

// notice is one call of a watch's fn.
type notice struct {
	rec cluster.Record
	err error
}

// watchRun is a Watch running on a goroutine: its notices, and its result once done closes.
type watchRun struct {
	notices chan notice
	done    chan struct{}
	err     error // Watch's result, set before done closes
}

// watching runs lock's Watch of name on a goroutine until the test ends.
func watching(t *testing.T, lock cluster.Lock, name string) (*watchRun, context.CancelFunc) {
	t.Helper()
	w, ok := lock.(cluster.Watcher)
	if !ok {
		t.Fatalf("%T does not implement cluster.Watcher", lock)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &watchRun{notices: make(chan notice, 64), done: make(chan struct{})}
	go func() {
		defer close(r.done)
		r.err = w.Watch(ctx, name, func(rec cluster.Record, err error) { r.notices <- notice{rec, err} })
	}()
	t.Cleanup(func() {
		cancel()
		<-r.done
	})
	return r, cancel
}

// next returns the next notice, failing the test when the watch ends or nothing comes.
func (r *watchRun) next(t *testing.T, what string) notice {
	t.Helper()
	select {
	case n := <-r.notices:
		return n
	case <-r.done:
		t.Fatalf("waiting for %s: Watch returned %v", what, r.err)
	case <-time.After(10 * time.Second):
		t.Fatalf("no notice of %s within 10s", what)
	}
	return notice{}
}

// result returns Watch's result, failing the test when it does not come within 10s.
func (r *watchRun) result(t *testing.T, after string) error {
	t.Helper()
	select {
	case <-r.done:
		return r.err
	case n := <-r.notices:
		t.Fatalf("waiting for the end of the watch after %s: notice %+v, %v", after, n.rec, n.err)
	case <-time.After(10 * time.Second):
		t.Fatalf("Watch did not return within 10s after %s", after)
	}
	return nil
}

func wantRecord(t *testing.T, n notice, want cluster.Record) {
	t.Helper()
	if n.err != nil {
		t.Fatalf("notice %v, want the record %+v", n.err, want)
	}
	if n.rec.Holder != want.Holder || n.rec.Term != want.Term || n.rec.Revision != want.Revision {
		t.Fatalf("notice %+v, want holder %q, term %d, revision %s", n.rec, want.Holder, want.Term, want.Revision)
	}
}

// TestWatchSeesChanges (T8 over K1): a watch begun before the Lease exists reports its absence
// first, then the Lease's creation and an update by another Lock, each with the revision the
// writer got, then its deletion, and ends with the context's error when cancelled.
func TestWatchSeesChanges(t *testing.T) {
	s := api(t)
	ns := grant(t, s, "get", "create", "update", "watch")
	watcher, admin := newLock(t, ns)
	writer, _ := newLock(t, ns)
	ctx := context.Background()

	run, cancel := watching(t, watcher, "leader")
	if n := run.next(t, "the first state"); !errors.Is(n.err, cluster.ErrNotFound) {
		t.Fatalf("first notice %+v, %v; want ErrNotFound (no Lease yet)", n.rec, n.err)
	}
	created, err := writer.Create(ctx, "leader", cluster.Record{Holder: "pod-a", Term: 1, Duration: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	wantRecord(t, run.next(t, "the creation"), created)
	updated, err := writer.Update(ctx, "leader", cluster.Record{Holder: "pod-b", Term: 2, Duration: time.Second, Revision: created.Revision})
	if err != nil {
		t.Fatal(err)
	}
	wantRecord(t, run.next(t, "the update"), updated)
	if err := admin.CoordinationV1().Leases(ns).Delete(ctx, "leader", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if n := run.next(t, "the deletion"); !errors.Is(n.err, cluster.ErrNotFound) {
		t.Fatalf("notice of the deletion %+v, %v; want ErrNotFound", n.rec, n.err)
	}
	cancel()
	if err := run.result(t, "its context's cancellation"); !errors.Is(err, context.Canceled) {
		t.Fatalf("Watch after cancel: %v, want context.Canceled", err)
	}
}

// TestWatchBeginsWithTheLease: a watch of an existing Lease reports it first, with its
// revision, and then only the writes after it.
func TestWatchBeginsWithTheLease(t *testing.T) {
	s := api(t)
	ns := grant(t, s, "get", "create", "update", "watch")
	watcher, _ := newLock(t, ns)
	writer, _ := newLock(t, ns)
	ctx := context.Background()
	created, err := writer.Create(ctx, "leader", cluster.Record{Holder: "pod-a", Term: 4, Duration: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	run, _ := watching(t, watcher, "leader")
	wantRecord(t, run.next(t, "the first state"), created)
	// Another Lease in the namespace is not this watch's business.
	if _, err := writer.Create(ctx, "other", cluster.Record{Holder: "pod-x", Term: 1, Duration: time.Second}); err != nil {
		t.Fatal(err)
	}
	renewed, err := writer.Update(ctx, "leader", cluster.Record{Holder: "pod-a", Term: 4, Duration: time.Second, RenewedAt: time.Now(), Revision: created.Revision})
	if err != nil {
		t.Fatal(err)
	}
	wantRecord(t, run.next(t, "the renewal"), renewed)
}

// TestWatchWithoutTheVerb: under the minimal Role (get, create, update), Watch answers
// ErrWatchUnsupported without calling fn, and the Lock still gets, creates and updates (K1).
func TestWatchWithoutTheVerb(t *testing.T) {
	s := api(t)
	ns := grant(t, s, "get", "create", "update")
	lock, _ := newLock(t, ns)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	called := false
	err := lock.(cluster.Watcher).Watch(ctx, "leader", func(cluster.Record, error) { called = true })
	if !errors.Is(err, cluster.ErrWatchUnsupported) {
		t.Fatalf("Watch without the watch verb: %v, want ErrWatchUnsupported", err)
	}
	var status apierrors.APIStatus
	if !errors.As(err, &status) || !apierrors.IsForbidden(err) {
		t.Errorf("Watch's error %v does not hold the API server's Forbidden", err)
	}
	if called {
		t.Error("Watch called fn although the watch was refused")
	}
	created, err := lock.Create(ctx, "leader", cluster.Record{Holder: "pod-a", Term: 1, Duration: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	got, err := lock.Get(ctx, "leader")
	if err != nil || got.Revision != created.Revision {
		t.Fatalf("Get: %+v, %v; want revision %s", got, err, created.Revision)
	}
	if _, err := lock.Update(ctx, "leader", cluster.Record{Holder: "pod-a", Term: 1, Duration: time.Second, Revision: created.Revision}); err != nil {
		t.Fatal(err)
	}
}

// fakeLock is a Lease lock over client-go's fake clientset whose watches are fw.
func fakeLock(t *testing.T, fw *watch.FakeWatcher, objects ...runtime.Object) cluster.Lock {
	t.Helper()
	client := fake.NewClientset(objects...)
	client.PrependWatchReactor("leases", func(k8stesting.Action) (bool, watch.Interface, error) { return true, fw, nil })
	return NewLeaseLock(client.CoordinationV1(), "ns", time.Second)
}

func fakeLease(name, holder, rv string) *coordinationv1.Lease {
	term := int32(1)
	return &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", ResourceVersion: rv},
		Spec:       coordinationv1.LeaseSpec{HolderIdentity: &holder, LeaseTransitions: &term},
	}
}

// TestWatchEndsOnAnErrorEvent: an ERROR event (410 Gone: the resourceVersion is too old) ends
// the watch with an error that is neither the context's nor ErrWatchUnsupported, so the caller
// watches again.
func TestWatchEndsOnAnErrorEvent(t *testing.T) {
	fw := watch.NewFakeWithChanSize(4, false)
	lock := fakeLock(t, fw, fakeLease("leader", "pod-a", "7"))
	run, _ := watching(t, lock, "leader")
	wantRecord(t, run.next(t, "the first state"), cluster.Record{Holder: "pod-a", Term: 1, Revision: "7"})
	fw.Modify(fakeLease("leader", "pod-b", "8"))
	wantRecord(t, run.next(t, "the update"), cluster.Record{Holder: "pod-b", Term: 1, Revision: "8"})
	fw.Error(&apierrors.NewResourceExpired("too old resource version: 7 (9)").ErrStatus)
	if err := run.result(t, "an ERROR event"); err == nil || errors.Is(err, context.Canceled) || errors.Is(err, cluster.ErrWatchUnsupported) || !apierrors.IsResourceExpired(err) {
		t.Fatalf("Watch after an ERROR event: %v, want the 410 error", err)
	}
}

// TestWatchEndsWhenTheServerClosesIt: a watch the server closes ends with an error; the
// DELETED is ErrNotFound.
func TestWatchEndsWhenTheServerClosesIt(t *testing.T) {
	fw := watch.NewFakeWithChanSize(4, false)
	lock := fakeLock(t, fw)
	run, _ := watching(t, lock, "leader")
	if n := run.next(t, "the first state"); !errors.Is(n.err, cluster.ErrNotFound) {
		t.Fatalf("first notice %+v, %v; want ErrNotFound", n.rec, n.err)
	}
	fw.Add(fakeLease("leader", "pod-a", "3"))
	wantRecord(t, run.next(t, "the creation"), cluster.Record{Holder: "pod-a", Term: 1, Revision: "3"})
	fw.Delete(fakeLease("leader", "pod-a", "4"))
	if n := run.next(t, "the deletion"); !errors.Is(n.err, cluster.ErrNotFound) {
		t.Fatalf("notice of the deletion %+v, %v; want ErrNotFound", n.rec, n.err)
	}
	fw.Stop()
	if err := run.result(t, "the server closed it"); err == nil || errors.Is(err, context.Canceled) || errors.Is(err, cluster.ErrWatchUnsupported) {
		t.Fatalf("Watch after the server closed it: %v, want an error to watch again", err)
	}
}

// TestWatchRefusesAnotherLease: an event for another Lease than the one watched (which the
// field selector should have filtered) ends the watch rather than reach fn.
func TestWatchRefusesAnotherLease(t *testing.T) {
	fw := watch.NewFakeWithChanSize(4, false)
	lock := fakeLock(t, fw, fakeLease("leader", "pod-a", "7"))
	run, _ := watching(t, lock, "leader")
	wantRecord(t, run.next(t, "the first state"), cluster.Record{Holder: "pod-a", Term: 1, Revision: "7"})
	fw.Modify(fakeLease("other", "pod-x", "8"))
	if err := run.result(t, "another Lease's event"); err == nil || errors.Is(err, context.Canceled) {
		t.Fatalf("Watch after another Lease's event: %v", err)
	}
}
