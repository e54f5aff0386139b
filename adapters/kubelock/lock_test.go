package kubelock_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/leaderelection/resourcelock"

	"github.com/leasehold/leasehold/adapters/kubelock"
	"github.com/leasehold/leasehold/store"
)

func record(holder string, transitions int) resourcelock.LeaderElectionRecord {
	now := metav1.NewTime(time.Now())
	return resourcelock.LeaderElectionRecord{HolderIdentity: holder, LeaseDurationSeconds: 2,
		AcquireTime: now, RenewTime: now, LeaderTransitions: transitions}
}

func TestNewRefusesBadArguments(t *testing.T) {
	st := openFile(t)
	for _, c := range []struct {
		desc, name, id string
		st             store.Store
		opts           []kubelock.Option
		want           string
	}{
		{"nil store", "x", "a", nil, nil, "store is nil"},
		{"empty name", "", "a", st, nil, "name is empty"},
		{"space in name", "my lock", "a", st, nil, `name "my lock" holds a space`},
		{"control in name", "x\n", "a", st, nil, "control character"},
		{"long name", strings.Repeat("n", 201), "a", st, nil, "more than 200"},
		{"bad UTF-8 name", "x\xff", "a", st, nil, "not valid UTF-8"},
		{"empty identity", "x", "", st, nil, "identity is empty"},
		{"bad UTF-8 identity", "x", "a\xff", st, nil, "identity"},
		{"nil option", "x", "a", st, []kubelock.Option{nil}, "option 0 is nil"},
	} {
		l, err := kubelock.New(c.st, c.name, c.id, c.opts...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: New = %v, %v; want an error with %q", c.desc, l, err, c.want)
		}
	}
}

// The elector creates the record when Get says it is missing, as an API server's NotFound
// would; a second Create fails as AlreadyExists.
func TestGetMissingThenCreate(t *testing.T) {
	st := openFile(t)
	a, b := newLock(t, st, "x", "a"), newLock(t, st, "x", "b")
	ctx := t.Context()
	_, _, err := a.Get(ctx)
	if !apierrors.IsNotFound(err) || !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("Get of a missing record = %v, want NotFound with store.ErrNotFound in its chain", err)
	}
	if err := a.Create(ctx, record("a", 0)); err != nil {
		t.Fatal(err)
	}
	if err := b.Create(ctx, record("b", 0)); !apierrors.IsAlreadyExists(err) || !errors.Is(err, store.ErrExists) {
		t.Fatalf("second Create = %v, want AlreadyExists", err)
	}
	r, _, err := b.Get(ctx)
	if err != nil || r.HolderIdentity != "a" || r.LeaseDurationSeconds != 2 {
		t.Fatalf("Get = %+v, %v; want a's record", r, err)
	}
}

// Update is a compare-and-swap on the record last read or written: a write by another lock in
// between makes it a conflict, which client-go's release retries on.
func TestUpdateConflictsWithAnotherWrite(t *testing.T) {
	st := openFile(t)
	a, b := newLock(t, st, "x", "a"), newLock(t, st, "x", "b")
	ctx := t.Context()
	if err := a.Update(ctx, record("a", 0)); err == nil || !strings.Contains(err.Error(), "before any Get or Create") {
		t.Fatalf("Update before Get = %v, want an error", err)
	}
	if err := a.Create(ctx, record("a", 0)); err != nil {
		t.Fatal(err)
	}
	_, rawB, err := b.Get(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// The leader's fast path: an Update on the revision of its own last write.
	if err := a.Update(ctx, record("a", 0)); err != nil {
		t.Fatalf("Update after Create = %v", err)
	}
	err = b.Update(ctx, record("b", 1))
	if !apierrors.IsConflict(err) || !errors.Is(err, store.ErrConditionFailed) {
		t.Fatalf("Update over a stale read = %v, want Conflict with store.ErrConditionFailed in its chain", err)
	}
	r, raw, err := b.Get(ctx)
	if err != nil || r.HolderIdentity != "a" {
		t.Fatalf("Get after the conflict = %+v, %v; want a's record", r, err)
	}
	if string(raw) == string(rawB) {
		t.Fatal("Get returned the same raw bytes after a's renewal: the elector would not see the change")
	}
	if err := b.Update(ctx, record("b", 1)); err != nil {
		t.Fatalf("Update after a fresh Get = %v", err)
	}
	if n, ok := b.Term(); !ok || n != 1 {
		t.Fatalf("b.Term() = %d, %v; want 1, true", n, ok)
	}
	if _, _, err := a.Get(ctx); err != nil {
		t.Fatal(err)
	}
	if n, ok := a.Term(); ok {
		t.Fatalf("a.Term() = %d, true after reading b's record; want false", n)
	}
}

// Even a write that repeats the record word for word is a change to the elector: otherwise a
// follower would time the lease from an older read and take over early.
func TestRawBytesChangeWithEveryWrite(t *testing.T) {
	st := openFile(t)
	a, b := newLock(t, st, "x", "a"), newLock(t, st, "x", "b")
	ctx := t.Context()
	rec := record("a", 0)
	if err := a.Create(ctx, rec); err != nil {
		t.Fatal(err)
	}
	_, raw1, err := b.Get(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Update(ctx, rec); err != nil {
		t.Fatal(err)
	}
	_, raw2, err := b.Get(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if string(raw1) == string(raw2) {
		t.Fatalf("raw bytes %s unchanged by a write", raw1)
	}
}

func TestUpdateOfDeletedRecordIsNotFound(t *testing.T) {
	st := openFile(t)
	a := newLock(t, st, "x", "a")
	ctx := t.Context()
	if err := a.Create(ctx, record("a", 0)); err != nil {
		t.Fatal(err)
	}
	if err := st.Delete(ctx, a.Key(), nil); err != nil {
		t.Fatal(err)
	}
	if err := a.Update(ctx, record("a", 0)); !apierrors.IsNotFound(err) {
		t.Fatalf("Update of a deleted record = %v, want NotFound", err)
	}
}

// A LeaseDuration under a second is stored by client-go as 0 seconds, which every other
// candidate reads as expired: the lock refuses to write it.
func TestRefusesSubSecondLease(t *testing.T) {
	st := openFile(t)
	a := newLock(t, st, "x", "a")
	rec := record("a", 0)
	rec.LeaseDurationSeconds = 0
	err := a.Create(t.Context(), rec)
	if err == nil || !strings.Contains(err.Error(), "at least 1s") {
		t.Fatalf("Create with leaseDurationSeconds 0 = %v, want a refusal", err)
	}
	if _, err := st.Get(t.Context(), a.Key()); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("document after the refusal: %v, want none", err)
	}
	// A release writes no holder and a duration of one second; no holder and none is fine too.
	rec.HolderIdentity = ""
	if err := a.Create(t.Context(), rec); err != nil {
		t.Fatalf("Create of a released record = %v", err)
	}
}

// A document the lock cannot read is an error naming the key and the field, never a record
// the elector could take over.
func TestMalformedDocumentIsAnError(t *testing.T) {
	st := openFile(t)
	a := newLock(t, st, "x", "a")
	ctx := t.Context()
	for _, c := range []struct {
		field string
		value any
	}{
		{"revision", ""},
		{"holderIdentity", 3},
		{"leaseDurationSeconds", -1},
		{"leaderTransitions", 1.5},
		{"renewTime", "yesterday"},
		{"strategy", true},
	} {
		t.Run(c.field, func(t *testing.T) {
			if err := st.Delete(ctx, a.Key(), nil); err != nil && !errors.Is(err, store.ErrNotFound) {
				t.Fatal(err)
			}
			doc := map[string]any{"holderIdentity": "b", "leaseDurationSeconds": 2, "acquireTime": "", "renewTime": "",
				"leaderTransitions": 0, "revision": "r1"}
			doc[c.field] = c.value
			if err := st.Create(ctx, a.Key(), doc); err != nil {
				t.Fatal(err)
			}
			_, _, err := a.Get(ctx)
			if err == nil || !strings.Contains(err.Error(), `"kubelock:x"`) || !strings.Contains(err.Error(), `"`+c.field+`"`) {
				t.Fatalf("Get = %v, want an error naming the key and the field %q", err, c.field)
			}
			if apierrors.IsNotFound(err) {
				t.Fatal("a malformed document reads as NotFound: the elector would try to create it")
			}
		})
	}
}

func TestRecordEvent(t *testing.T) {
	var got []string
	l, err := kubelock.New(openFile(t), "x", "a", kubelock.WithEvents(func(e string) { got = append(got, e) }))
	if err != nil {
		t.Fatal(err)
	}
	l.RecordEvent("became leader")
	newLock(t, openFile(t), "x", "b").RecordEvent("ignored") // without WithEvents
	if len(got) != 1 || got[0] != "a became leader" {
		t.Fatalf("events %q, want [a became leader]", got)
	}
	if d := l.Describe(); !strings.Contains(d, "kubelock:x") {
		t.Fatalf("Describe() = %q, want the key", d)
	}
}
