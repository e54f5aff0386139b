package main

import (
	"context"
	"sync"

	"github.com/leasehold/leasehold/store"
)

// crashStore is the store of one demo instance. Once crash is called, every call (and every
// call in flight that has not reached the inner store) hangs until its context ends: to the
// instance's Elector the store never answers again, as if its process had died. The Elector
// has no crash method, and this is what a crash looks like from the election's point of view:
// no attempt succeeds, nothing is renewed and nothing is released, so the others must wait for
// the lease to expire (E6), while the crashed Elector itself stops leading at its deadline
// (E5).
type crashStore struct {
	inner   store.Store
	once    sync.Once
	crashed chan struct{}
}

func newCrashStore(inner store.Store) *crashStore {
	return &crashStore{inner: inner, crashed: make(chan struct{})}
}

func (c *crashStore) crash() { c.once.Do(func() { close(c.crashed) }) }

// hang blocks until ctx ends when the store has crashed.
func (c *crashStore) hang(ctx context.Context) error {
	select {
	case <-c.crashed:
		<-ctx.Done()
		return ctx.Err()
	default:
		return nil
	}
}

func (c *crashStore) Get(ctx context.Context, key string) (map[string]any, error) {
	if err := c.hang(ctx); err != nil {
		return nil, err
	}
	return c.inner.Get(ctx, key)
}

func (c *crashStore) Create(ctx context.Context, key string, doc map[string]any) error {
	if err := c.hang(ctx); err != nil {
		return err
	}
	return c.inner.Create(ctx, key, doc)
}

func (c *crashStore) Patch(ctx context.Context, key string, fields map[string]any, cond *store.Condition) error {
	if err := c.hang(ctx); err != nil {
		return err
	}
	return c.inner.Patch(ctx, key, fields, cond)
}

// Watch forwards the inner store's watch until the crash: from then on the watch delivers
// nothing more and ends only with ctx, as a dead process's connection would.
func (c *crashStore) Watch(ctx context.Context, key string, fn func(store.Change)) error {
	if err := c.hang(ctx); err != nil {
		return err
	}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-c.crashed:
			cancel()
		case <-wctx.Done():
		}
	}()
	err := store.Watch(wctx, c.inner, key, func(ch store.Change) {
		select {
		case <-c.crashed:
		default:
			fn(ch)
		}
	})
	if herr := c.hang(ctx); herr != nil {
		return herr
	}
	return err
}

func (c *crashStore) Delete(ctx context.Context, key string, cond *store.Condition) error {
	if err := c.hang(ctx); err != nil {
		return err
	}
	return c.inner.Delete(ctx, key, cond)
}
