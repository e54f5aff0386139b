package linearize_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/leasehold/leasehold/store"
	"github.com/leasehold/leasehold/store/driver"
)

// latency is the time the wrappers take per call, half before the store under them sees it
// and half after it answered, as across a network: without it, calls on the memory store end
// before any short deadline could cut them.
const latency = 200 * time.Microsecond

// slow is a store whose every call takes latency longer, and then answers what the store
// under it answered; with a defect, it breaks one rule.
type slow struct {
	store.Store
	defect string
}

// The defects.
const (
	// sound: none (the wrapper's own soundness: what fails with a defect fails by it).
	sound = ""
	// nonAtomic: a conditional Patch or Delete reads, compares, then writes unconditionally: a
	// compare-and-swap that another writer can slip into (T2).
	nonAtomic = "non-atomic compare-and-swap"
	// failsApplied: one successful Create or Patch in four is answered with ErrExists or
	// ErrConditionFailed, after it was applied (a definite answer that is false).
	failsApplied = "reports an applied write as failed"
	// joinsDeadline: an answer that arrives after the call's deadline is the sentinel joined
	// with the context's error, as driver.ContextError used to make it (T7: both definite and
	// unknown).
	joinsDeadline = "joins a sentinel with the deadline"
	// existsOnDeadline: a Create whose deadline passes during the call answers ErrExists
	// without having looked, as nats.go's KV Create does when its deadline cuts the read of a
	// deleted key's marker.
	existsOnDeadline = "answers ErrExists when the deadline cuts a Create"
)

func (s *slow) wait() { time.Sleep(latency / 2) }

func (s *slow) Get(ctx context.Context, key string) (map[string]any, error) {
	s.wait()
	doc, err := s.Store.Get(ctx, key)
	return doc, s.answer(ctx, err)
}

func (s *slow) Create(ctx context.Context, key string, doc map[string]any) error {
	s.wait()
	if s.defect == existsOnDeadline && ctx.Err() != nil {
		s.wait()
		return driver.WrapKey("create", key, store.ErrExists)
	}
	err := s.Store.Create(ctx, key, doc)
	if err == nil && s.defect == failsApplied && rand.IntN(4) == 0 {
		err = driver.WrapKey("create", key, store.ErrExists)
	}
	return s.answer(ctx, err)
}

func (s *slow) Patch(ctx context.Context, key string, fields map[string]any, cond *store.Condition) error {
	s.wait()
	var err error
	if s.defect == nonAtomic && cond != nil {
		err = s.readThenWrite(ctx, key, cond, func() error { return s.Store.Patch(ctx, key, fields, nil) })
	} else {
		err = s.Store.Patch(ctx, key, fields, cond)
	}
	if err == nil && s.defect == failsApplied && rand.IntN(4) == 0 {
		err = driver.WrapKey("patch", key, store.ErrConditionFailed)
	}
	return s.answer(ctx, err)
}

func (s *slow) Delete(ctx context.Context, key string, cond *store.Condition) error {
	s.wait()
	var err error
	if s.defect == nonAtomic && cond != nil {
		err = s.readThenWrite(ctx, key, cond, func() error { return s.Store.Delete(ctx, key, nil) })
	} else {
		err = s.Store.Delete(ctx, key, cond)
	}
	return s.answer(ctx, err)
}

// readThenWrite checks cond on a read, then writes after a pause in which another writer may
// write too.
func (s *slow) readThenWrite(ctx context.Context, key string, cond *store.Condition, write func() error) error {
	doc, err := s.Store.Get(ctx, key)
	if err != nil {
		return err
	}
	if !driver.JSONEqual(doc[cond.Field], cond.Value) {
		return driver.WrapKey("patch", key, store.ErrConditionFailed)
	}
	time.Sleep(latency)
	return write()
}

// answer is the store's answer err as the caller gets it, latency/2 later.
func (s *slow) answer(ctx context.Context, err error) error {
	s.wait()
	if s.defect == joinsDeadline && err != nil && ctx.Err() != nil && !errors.Is(err, ctx.Err()) {
		return fmt.Errorf("%w: %w", ctx.Err(), err)
	}
	return err
}
