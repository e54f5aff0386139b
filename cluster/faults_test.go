package cluster

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/leasehold/leasehold/store"
)

// faultStore wraps a store with faults for one instance: latency, errors, hangs and
// partitions. Several faultStores over one memory store model instances that see one backend
// through connections of their own.
type faultStore struct {
	inner store.Store

	mu      sync.Mutex
	latency time.Duration // added before every call
	err     error         // returned by every call, when set
	hang    bool          // every call blocks until its context ends
	ignore  bool          // with hang: block even past the context (a lock that ignores ctx)
	release chan struct{} // closed to let calls blocked by ignore go on
	calls   int
	// writeThenHang: the next write is applied, then the call hangs as with hang: the
	// answer of a successful write is lost.
	writeThenHang bool
	// beforeWrite, when set, runs before each write reaches the store: a test uses it to
	// change the record between an attempt's read and its write (a lost race).
	beforeWrite func()
}

var errInjected = errors.New("injected fault")

func newFaultStore(inner store.Store) *faultStore {
	return &faultStore{inner: inner, release: make(chan struct{})}
}

func (f *faultStore) set(fn func(f *faultStore)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fn(f)
}

// heal removes every fault and lets calls blocked past their context go on.
func (f *faultStore) heal() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.latency, f.err, f.hang, f.ignore, f.writeThenHang = 0, nil, false, false, false
	close(f.release)
	f.release = make(chan struct{})
}

func (f *faultStore) before(ctx context.Context) error {
	f.mu.Lock()
	f.calls++
	latency, err, hang, ignore, release := f.latency, f.err, f.hang, f.ignore, f.release
	f.mu.Unlock()
	if hang {
		if ignore {
			<-release
			return errInjected
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

func (f *faultStore) runBeforeWrite() {
	f.mu.Lock()
	hook := f.beforeWrite
	f.mu.Unlock()
	if hook != nil {
		hook()
	}
}

func (f *faultStore) afterWrite(ctx context.Context, err error) error {
	f.mu.Lock()
	wth := f.writeThenHang
	f.writeThenHang = false
	f.mu.Unlock()
	if wth {
		<-ctx.Done()
		return ctx.Err()
	}
	return err
}

func (f *faultStore) Get(ctx context.Context, key string) (map[string]any, error) {
	if err := f.before(ctx); err != nil {
		return nil, err
	}
	return f.inner.Get(ctx, key)
}

func (f *faultStore) Create(ctx context.Context, key string, doc map[string]any) error {
	if err := f.before(ctx); err != nil {
		return err
	}
	f.runBeforeWrite()
	return f.afterWrite(ctx, f.inner.Create(ctx, key, doc))
}

func (f *faultStore) Patch(ctx context.Context, key string, fields map[string]any, cond *store.Condition) error {
	if err := f.before(ctx); err != nil {
		return err
	}
	f.runBeforeWrite()
	return f.afterWrite(ctx, f.inner.Patch(ctx, key, fields, cond))
}

func (f *faultStore) Delete(ctx context.Context, key string, cond *store.Condition) error {
	if err := f.before(ctx); err != nil {
		return err
	}
	return f.inner.Delete(ctx, key, cond)
}
