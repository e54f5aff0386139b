// Package faultstore wraps a store.Store with faults for the tests of the election and of
// what is built on it: latency, errors, hangs, lost answers and writes made between a read
// and the write that follows it. Several Stores over one memory store model instances that
// see one backend through connections of their own.
package faultstore

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/leasehold/leasehold/store"
)

// Store wraps a store with faults for one instance: latency, errors, hangs and
// partitions. Several Stores over one memory store model instances that see one backend
// through connections of their own.
type Store struct {
	inner store.Store

	mu      sync.Mutex    // guards the fields below: change them through Set
	release chan struct{} // closed to let calls blocked by Ignore go on
	calls   int

	Latency time.Duration // added before every call
	Err     error         // returned by every call, when set
	Hang    bool          // every call blocks until its context ends
	Ignore  bool          // with Hang: block even past the context (a lock that ignores ctx)
	// WriteThenHang: the next write is applied, then the call hangs as with Hang: the
	// answer of a successful write is lost.
	WriteThenHang bool
	// BeforeWrite, when set, runs before each write reaches the store: a test uses it to
	// change the record between an attempt's read and its write (a lost race).
	BeforeWrite func()
}

// ErrInjected is the error a Store returns when its Err is set to it, or for a call it
// blocked past its context.
var ErrInjected = errors.New("injected fault")

// New returns a Store over inner, with no fault.
func New(inner store.Store) *Store {
	return &Store{inner: inner, release: make(chan struct{})}
}

// Set changes the Store's faults under its lock: fn sets the exported fields.
func (f *Store) Set(fn func(f *Store)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fn(f)
}

// Heal removes every fault and lets calls blocked past their context go on.
func (f *Store) Heal() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.Latency, f.Err, f.Hang, f.Ignore, f.WriteThenHang = 0, nil, false, false, false
	close(f.release)
	f.release = make(chan struct{})
}

func (f *Store) before(ctx context.Context) error {
	f.mu.Lock()
	f.calls++
	latency, err, hang, ignore, release := f.Latency, f.Err, f.Hang, f.Ignore, f.release
	f.mu.Unlock()
	if hang {
		if ignore {
			<-release
			return ErrInjected
		}
		<-ctx.Done()
		return ctx.Err()
	}
	if latency > 0 {
		t := time.NewTimer(latency)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return err
}

func (f *Store) runBeforeWrite() {
	f.mu.Lock()
	hook := f.BeforeWrite
	f.mu.Unlock()
	if hook != nil {
		hook()
	}
}

func (f *Store) afterWrite(ctx context.Context, err error) error {
	f.mu.Lock()
	wth := f.WriteThenHang
	f.WriteThenHang = false
	f.mu.Unlock()
	if wth {
		<-ctx.Done()
		return ctx.Err()
	}
	return err
}

func (f *Store) Get(ctx context.Context, key string) (map[string]any, error) {
	if err := f.before(ctx); err != nil {
		return nil, err
	}
	return f.inner.Get(ctx, key)
}

func (f *Store) Create(ctx context.Context, key string, doc map[string]any) error {
	if err := f.before(ctx); err != nil {
		return err
	}
	f.runBeforeWrite()
	return f.afterWrite(ctx, f.inner.Create(ctx, key, doc))
}

func (f *Store) Patch(ctx context.Context, key string, fields map[string]any, cond *store.Condition) error {
	if err := f.before(ctx); err != nil {
		return err
	}
	f.runBeforeWrite()
	return f.afterWrite(ctx, f.inner.Patch(ctx, key, fields, cond))
}

func (f *Store) Delete(ctx context.Context, key string, cond *store.Condition) error {
	if err := f.before(ctx); err != nil {
		return err
	}
	return f.inner.Delete(ctx, key, cond)
}

// State is what a Store's faults are at one instant.
type State struct {
	Latency       time.Duration
	Err           error
	Hang          bool
	WriteThenHang bool
	// Released is closed by the next Heal: a call blocked past its context goes on then.
	Released <-chan struct{}
}

// State returns the Store's faults now.
func (f *Store) State() State {
	f.mu.Lock()
	defer f.mu.Unlock()
	return State{Latency: f.Latency, Err: f.Err, Hang: f.Hang, WriteThenHang: f.WriteThenHang, Released: f.release}
}

// Clear reports whether no fault is set (BeforeWrite aside, which is no fault of the store).
func (f *Store) Clear() bool {
	s := f.State()
	return s.Latency == 0 && s.Err == nil && !s.Hang && !s.WriteThenHang
}

// Calls returns how many calls the Store has had.
func (f *Store) Calls() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls
}

// Inner returns the store the Store wraps.
func (f *Store) Inner() store.Store { return f.inner }
