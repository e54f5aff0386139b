package memory

import (
	"context"

	"github.com/leasehold/leasehold/store/driver"
)

var _ driver.Watcher = (*backend)(nil)

// Watch implements driver.Watcher in process: every write to key wakes the watch, which then
// reads the latest state, so bursts of writes coalesce and nothing waits on a slow watcher.
// It starts no goroutine, so it runs inside testing/synctest bubbles.
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
	for {
		s.mu.Lock()
		doc, found := s.docs[key]
		n := driver.Notice{Found: found}
		if found {
			n.Doc = driver.CopyDoc(doc)
		}
		s.mu.Unlock()
		if err := fn(n); err != nil {
			return err
		}
		select {
		case <-wake:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
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
