package gocronlock_test

import (
	"context"
	"errors"
	"sync/atomic"

	"github.com/leasehold/leasehold/cluster"
)

// cutLock is a Lock that a test can cut off from its store, as a crash would: the holder's
// record is left unchanged, neither renewed nor released.
type cutLock struct {
	cluster.Lock
	cut  atomic.Bool
	hang bool // cut requests wait for their context's end instead of failing at once
}

var errCut = errors.New("cut off")

func (c *cutLock) fail(ctx context.Context) error {
	if c.hang {
		<-ctx.Done()
	}
	return errCut
}

func (c *cutLock) Get(ctx context.Context, name string) (cluster.Record, error) {
	if c.cut.Load() {
		return cluster.Record{}, c.fail(ctx)
	}
	return c.Lock.Get(ctx, name)
}

func (c *cutLock) Create(ctx context.Context, name string, r cluster.Record) (cluster.Record, error) {
	if c.cut.Load() {
		return cluster.Record{}, c.fail(ctx)
	}
	return c.Lock.Create(ctx, name, r)
}

func (c *cutLock) Update(ctx context.Context, name string, r cluster.Record) (cluster.Record, error) {
	if c.cut.Load() {
		return cluster.Record{}, c.fail(ctx)
	}
	return c.Lock.Update(ctx, name, r)
}
