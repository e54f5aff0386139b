// Package fencetest holds the tests every form of package fence runs against a real server:
// a holder frozen past its lease whose late write is refused (FrozenHolder), the check's
// semantics in SQL (Semantics) and transactions racing with different terms (Race).
package fencetest

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/leasehold/leasehold/cluster"
	"github.com/leasehold/leasehold/cluster/locker"
	"github.com/leasehold/leasehold/fence"
)

// Resource is a value written through a fence.
type Resource struct {
	// Write writes value under term through the fence, or returns the fence's error.
	Write func(ctx context.Context, term uint64, value string) error
	// Read returns the value last written.
	Read func(ctx context.Context) (string, error)
}

// The lease of FrozenHolder's Lockers: short, so that the test's takeover comes within a
// second of real time.
const (
	leaseDuration = 300 * time.Millisecond
	renewInterval = 100 * time.Millisecond
)

// FrozenHolder is the fence's reason to be (F2): two Lockers over lock contend for one key.
// A takes it under term tA and writes; then A freezes (its Lock's calls block, as those of a
// process paused or cut off do) and B takes the key over once A's lease has expired, under a
// higher term tB, and writes. A, thawed and still believing it holds, writes under tA: the fence
// refuses it with a *fence.StaleError naming both terms, and the resource keeps B's write. B
// writes again under tB: an equal term passes.
func FrozenHolder(t *testing.T, lock cluster.Lock, r Resource) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute) // a bound on a hang, not a timing
	defer cancel()
	frozen := &freezable{Lock: lock}
	a, b := newLocker(t, "a", frozen), newLocker(t, "b", lock)

	heldA, err := a.Acquire(ctx, "report")
	if err != nil {
		t.Fatalf("a: Acquire: %v", err)
	}
	defer heldA.Release(context.Background())
	tA := heldA.Term()
	if err := r.Write(ctx, tA, "a1"); err != nil {
		t.Fatalf("a: write under term %d while holding: %v", tA, err)
	}

	frozen.freeze()
	heldB, err := b.Acquire(ctx, "report") // once A's lease has expired for B: within L + R
	if err != nil {
		t.Fatalf("b: Acquire: %v", err)
	}
	defer heldB.Release(context.Background())
	tB := heldB.Term()
	if tB <= tA {
		t.Fatalf("b took the key under term %d, not above a's %d", tB, tA)
	}
	if err := r.Write(ctx, tB, "b1"); err != nil {
		t.Fatalf("b: write under term %d: %v", tB, err)
	}

	frozen.thaw()
	err = r.Write(ctx, tA, "a2") // a wakes up and writes, under the term it had
	var stale *fence.StaleError
	if !errors.Is(err, fence.ErrStale) || !errors.As(err, &stale) {
		t.Fatalf("a's late write under term %d after b's under %d: %v, want a *fence.StaleError", tA, tB, err)
	}
	if stale.Term != tA || stale.Stored != tB {
		t.Errorf("refusal %+v: want Term %d (a's) and Stored %d (b's)", stale, tA, tB)
	}
	if v, err := r.Read(ctx); err != nil || v != "b1" {
		t.Fatalf("after a's refused write: read %q, %v; want b's write, b1", v, err)
	}

	if err := r.Write(ctx, tB, "b2"); err != nil {
		t.Fatalf("b: second write under its term %d: %v", tB, err)
	}
	if v, err := r.Read(ctx); err != nil || v != "b2" {
		t.Fatalf("after b's second write: read %q, %v; want b2", v, err)
	}
}

func newLocker(t *testing.T, id string, lock cluster.Lock) *locker.Locker {
	t.Helper()
	l, err := locker.New(locker.Config{
		Lock:          lock,
		InstanceID:    id,
		LeaseDuration: leaseDuration,
		RenewInterval: renewInterval,
		Logger:        slog.New(slog.DiscardHandler),
	})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// freezable is a Lock whose calls block while it is frozen, until thawed or until their
// context ends: the Lock of a paused process, whose renewals never reach the store.
type freezable struct {
	cluster.Lock
	mu     sync.Mutex
	frozen chan struct{} // non-nil while frozen, closed by thaw
}

func (f *freezable) freeze() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.frozen = make(chan struct{})
}

func (f *freezable) thaw() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.frozen != nil {
		close(f.frozen)
		f.frozen = nil
	}
}

func (f *freezable) wait(ctx context.Context) error {
	f.mu.Lock()
	ch := f.frozen
	f.mu.Unlock()
	if ch == nil {
		return nil
	}
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (f *freezable) Get(ctx context.Context, name string) (cluster.Record, error) {
	if err := f.wait(ctx); err != nil {
		return cluster.Record{}, err
	}
	return f.Lock.Get(ctx, name)
}

func (f *freezable) Create(ctx context.Context, name string, r cluster.Record) (cluster.Record, error) {
	if err := f.wait(ctx); err != nil {
		return cluster.Record{}, err
	}
	return f.Lock.Create(ctx, name, r)
}

func (f *freezable) Update(ctx context.Context, name string, r cluster.Record) (cluster.Record, error) {
	if err := f.wait(ctx); err != nil {
		return cluster.Record{}, err
	}
	return f.Lock.Update(ctx, name, r)
}
