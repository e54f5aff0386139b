package storetest_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/leasehold/leasehold/store"
	"github.com/leasehold/leasehold/store/driver"
	"github.com/leasehold/leasehold/store/memory"
)

// broken is a memory store with one defect, to show that the suite catches it.
type broken struct {
	*memory.Store
	defect string

	mu   sync.Mutex
	refs map[string]map[string]any // documents handed out or taken in by reference

	log watchLog // the writes, for the watch defects (broken_watch_test.go)
}

func newBroken(defect string) *broken {
	return &broken{Store: memory.New(), defect: defect, refs: map[string]map[string]any{}}
}

func (b *broken) key(k string) string {
	if b.defect == "KeysCaseInsensitive" {
		return strings.ToLower(k)
	}
	return k
}

func (b *broken) ctx(ctx context.Context) context.Context {
	if b.defect == "IgnoresContext" {
		return context.Background()
	}
	return ctx
}

func (b *broken) bare(err error) error {
	var ke *store.KeyError
	if b.defect == "BareErrors" && errors.As(err, &ke) {
		return ke.Err
	}
	return err
}

// late is the defect JoinsContextError: an answer that comes after the call's deadline is
// joined with the context's error, as driver.ContextError once made it (T7 forbids it).
func (b *broken) late(ctx context.Context, err error) error {
	dl, ok := ctx.Deadline()
	if b.defect != "JoinsContextError" || !ok || err == nil {
		return err
	}
	time.Sleep(time.Until(dl))
	if errors.Is(err, ctx.Err()) {
		return err
	}
	return fmt.Errorf("%w: %w", ctx.Err(), err)
}

func (b *broken) forget(key string) {
	b.mu.Lock()
	delete(b.refs, key)
	b.mu.Unlock()
}

func (b *broken) Get(ctx context.Context, key string) (map[string]any, error) {
	key = b.key(key)
	if b.defect == "SharesDocuments" || b.defect == "KeepsInput" {
		b.mu.Lock()
		doc, ok := b.refs[key]
		b.mu.Unlock()
		if ok {
			return doc, nil
		}
	}
	doc, err := b.Store.Get(b.ctx(ctx), key)
	if err == nil && b.defect == "SharesDocuments" {
		b.mu.Lock()
		b.refs[key] = doc
		b.mu.Unlock()
	}
	return doc, b.late(ctx, b.bare(err))
}

func (b *broken) Create(ctx context.Context, key string, doc map[string]any) (err error) {
	key = b.key(key)
	defer b.logged(key, &err)()
	if b.defect == "AcceptsUnencodable" && doc != nil {
		clean := map[string]any{}
		for k, v := range doc {
			if _, err := driver.Normalize(v); err == nil {
				clean[k] = v
			}
		}
		doc = clean
	}
	if b.defect == "CreateOverwrites" {
		_ = b.Store.Delete(ctx, key, nil)
	}
	err = b.Store.Create(b.ctx(ctx), key, doc)
	if err == nil && b.defect == "KeepsInput" {
		b.mu.Lock()
		b.refs[key] = doc
		b.mu.Unlock()
	}
	return b.late(ctx, b.bare(err))
}

// holdsLoosely is the condition check of the defects that replace the store's own.
func (b *broken) holdsLoosely(doc map[string]any, cond *store.Condition) (decided, holds bool) {
	switch b.defect {
	case "MissingFieldIsNull":
		if _, ok := doc[cond.Field]; !ok && cond.Value == nil {
			return true, true
		}
	case "ComparesText":
		return true, fmt.Sprint(doc[cond.Field]) == fmt.Sprint(cond.Value)
	}
	return false, false
}

func (b *broken) cond(ctx context.Context, key string, cond *store.Condition) (*store.Condition, error) {
	if cond == nil {
		return nil, nil
	}
	switch b.defect {
	case "IgnoresCondition":
		return nil, nil
	case "SkipsFalsyCondition": // what Webda does, and T2 forbids
		switch cond.Value {
		case nil, false, 0, 0.0, "":
			return nil, nil
		}
	case "MissingFieldIsNull", "ComparesText":
		doc, err := b.Store.Get(ctx, key)
		if err != nil {
			return cond, nil
		}
		if decided, holds := b.holdsLoosely(doc, cond); decided {
			if !holds {
				return nil, driver.WrapKey("patch", key, store.ErrConditionFailed)
			}
			return nil, nil
		}
	}
	return cond, nil
}

func (b *broken) Patch(ctx context.Context, key string, fields map[string]any, cond *store.Condition) (err error) {
	key = b.key(key)
	defer b.logged(key, &err)()
	b.forget(key)
	cond, err = b.cond(ctx, key, cond)
	if err != nil {
		return err
	}
	if err := b.Store.Patch(b.ctx(ctx), key, fields, cond); err != nil {
		return b.late(ctx, b.bare(err))
	}
	if b.defect == "NullRemovesField" { // as JSON merge patch does
		doc, _ := b.Store.Get(ctx, key)
		for k, v := range fields {
			if v == nil {
				delete(doc, k)
			}
		}
		_ = b.Store.Delete(ctx, key, nil)
		_ = b.Store.Create(ctx, key, doc)
	}
	return nil
}

func (b *broken) Delete(ctx context.Context, key string, cond *store.Condition) (err error) {
	key = b.key(key)
	defer b.logged(key, &err)()
	b.forget(key)
	cond, err = b.cond(ctx, key, cond)
	if err != nil {
		return driver.WrapKey("delete", key, store.ErrConditionFailed)
	}
	return b.late(ctx, b.bare(b.Store.Delete(b.ctx(ctx), key, cond)))
}
