package memory

import (
	"context"
	"time"

	"github.com/leasehold/leasehold/store"
	"github.com/leasehold/leasehold/store/driver"
)

var _ driver.Watcher = (*backend)(nil)

// Watch implements driver.Watcher in process: every write to key wakes the watch, which then
// reads the latest state, so bursts of writes coalesce and nothing waits on a slow watcher.
// It starts no goroutine, so it runs inside testing/synctest bubbles.
//
// Heartbeats (store.WithHeartbeat) are a ticker: an in-process watch cannot go half-open, as a
// network connection can, and a write wakes its watches before it returns, so a heartbeat is
// true when it is sent. A write that woke the watch is delivered before the heartbeat.
func (s *backend) Watch(ctx context.Context, key string, fn func(driver.Notice) error) error {
	wake := make(chan struct{}, 1)
	s.mu.Lock()
	if s.watchers == nil {
		s.watchers = map[string]map[chan struct{}]struct{}{}
	}
	if s.watchers[key] == nil {
		s.watchers[key] = map[chan struct{}]struct{}{}
	}
	s.watchers[key][wake] = struct{}{}
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.watchers[key], wake)
		if len(s.watchers[key]) == 0 {
			delete(s.watchers, key)
		}
		s.mu.Unlock()
	}()
	var tick <-chan time.Time
	if d := store.HeartbeatEvery(ctx); d > 0 {
		t := time.NewTicker(d)
		defer t.Stop()
		tick = t.C
	}
	if err := s.deliver(key, fn); err != nil {
		return err
	}
	for {
		select {
		case <-wake:
		case <-tick:
			select {
			case <-wake: // a write came first: deliver it, then the heartbeat
				if err := s.deliver(key, fn); err != nil {
					return err
				}
			default:
			}
			if err := fn(driver.Notice{Heartbeat: true}); err != nil {
				return err
			}
			continue
		case <-ctx.Done():
			return ctx.Err()
		}
		if err := s.deliver(key, fn); err != nil {
			return err
		}
	}
}

// deliver calls fn with the state of key.
func (s *backend) deliver(key string, fn func(driver.Notice) error) error {
	s.mu.Lock()
	doc, found := s.docs[key]
	n := driver.Notice{Found: found}
	if found {
		n.Doc = driver.CopyDoc(doc)
	}
	s.mu.Unlock()
	return fn(n)
}

// notify wakes the watches of key. The caller holds s.mu.
func (s *backend) notify(key string) {
	for wake := range s.watchers[key] {
		select {
		case wake <- struct{}{}:
		default: // already woken: it will read the latest state
		}
	}
}
