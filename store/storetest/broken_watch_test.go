package storetest_test

import (
	"context"
	"strings"
	"sync"

	"github.com/leasehold/leasehold/store"
	"github.com/leasehold/leasehold/store/driver"
)

// The watch defects of the broken store (T8). Without one, the broken store's Watch is the
// memory store's. With one, it is a watch of its own over a log of every write the broken store
// made, which delivers every logged state (none coalesced), so that what the defect does to the
// sequence is the same whatever the scheduling:
//
//   - WatchOutOfOrder: after each new state, the one before it again, then the new one.
//   - WatchMissesLastWrite: each state only once a later one was written, so never the last.
//   - WatchOtherKeys: also the states of every key that starts with the watched one.
//   - WatchCallsAfterCancel: once its context ends it returns, but the later writes to the key
//     still call fn, from the writer's goroutine, before the write returns.
//   - WatchReturnsNil: nil when its context ends, instead of the context's error.

// watchLog is the broken store's log of writes. wmu makes each write and its entry one step.
type watchLog struct {
	wmu sync.Mutex

	mu      sync.Mutex
	entries []logEntry
	wake    chan struct{} // closed and replaced at each entry
	zombies map[string][]func(store.Change)
}

type logEntry struct {
	key   string
	state store.Change
}

func (b *broken) watchDefect() bool { return strings.HasPrefix(b.defect, "Watch") }

// logged serializes a write and, once it succeeded, logs the key's new state. Use as
// defer b.logged(key, &err)() in a method whose result is err.
func (b *broken) logged(key string, err *error) func() {
	if !b.watchDefect() {
		return func() {}
	}
	b.log.wmu.Lock()
	return func() {
		defer b.log.wmu.Unlock()
		if *err != nil {
			return
		}
		state := b.state(key)
		b.log.mu.Lock()
		b.log.entries = append(b.log.entries, logEntry{key, state})
		if b.log.wake != nil {
			close(b.log.wake)
			b.log.wake = nil
		}
		zombies := b.log.zombies[key]
		b.log.mu.Unlock()
		for _, fn := range zombies {
			fn(copyChange(state))
		}
	}
}

// state reads key as the memory store has it.
func (b *broken) state(key string) store.Change {
	doc, err := b.Store.Get(context.Background(), key)
	if err != nil {
		return store.Change{}
	}
	return store.Change{Found: true, Doc: doc}
}

// since returns the entries from i on and a channel closed at the next one.
func (l *watchLog) since(i int) ([]logEntry, chan struct{}) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.wake == nil {
		l.wake = make(chan struct{})
	}
	return l.entries[i:], l.wake
}

func copyChange(c store.Change) store.Change {
	if c.Doc != nil {
		c.Doc = driver.CopyDoc(c.Doc)
	}
	return c
}

// Watch implements store.Watcher: the memory store's, or a defect's.
func (b *broken) Watch(ctx context.Context, key string, fn func(store.Change)) error {
	key = b.key(key)
	if !b.watchDefect() {
		return b.Store.Watch(ctx, key, fn)
	}
	if fn == nil {
		return driver.WrapKey("watch", key, store.ErrInvalid)
	}
	if ctx.Err() != nil {
		return b.watchEnd(ctx, key, fn)
	}
	b.log.wmu.Lock() // no write between the first state and the log's position
	first := b.state(key)
	b.log.mu.Lock()
	next := len(b.log.entries)
	b.log.mu.Unlock()
	b.log.wmu.Unlock()
	fn(copyChange(first))
	prev := first
	var held *store.Change // WatchMissesLastWrite: the state not delivered yet
	for {
		entries, wake := b.log.since(next)
		next += len(entries)
		for _, e := range entries {
			if e.key != key && (b.defect != "WatchOtherKeys" || !strings.HasPrefix(e.key, key)) {
				continue
			}
			switch b.defect {
			case "WatchOutOfOrder":
				fn(copyChange(e.state))
				fn(copyChange(prev))
				fn(copyChange(e.state))
			case "WatchMissesLastWrite":
				if held != nil {
					fn(copyChange(*held))
				}
				held = &e.state
			default:
				fn(copyChange(e.state))
			}
			prev = e.state
		}
		select {
		case <-wake:
		case <-ctx.Done():
			return b.watchEnd(ctx, key, fn)
		}
	}
}

// watchEnd is what the watch of key returns once ctx ended.
func (b *broken) watchEnd(ctx context.Context, key string, fn func(store.Change)) error {
	switch b.defect {
	case "WatchReturnsNil":
		return nil
	case "WatchCallsAfterCancel":
		b.log.mu.Lock()
		if b.log.zombies == nil {
			b.log.zombies = map[string][]func(store.Change){}
		}
		b.log.zombies[key] = append(b.log.zombies[key], fn)
		b.log.mu.Unlock()
	}
	return driver.WrapKey("watch", key, ctx.Err())
}
