package filewatch

import (
	"context"
	"sync"

	"github.com/leasehold/leasehold/store"
	"github.com/leasehold/leasehold/store/driver"
)

// Shared is the hub of a store kept in local files (the file store, SQLite): made at the
// store's first watch, shared by all its watches, closed with the store. The zero value is
// ready to use.
type Shared struct {
	mu     sync.Mutex
	hub    *Hub
	closed bool
}

// Watch is a store watch (driver.Watcher's Watch) over the shared hub, which newHub makes at
// the first watch: fn gets a Signal once the subscription is in place and after each change of
// the files, for the Portable store to read the key, and a Heartbeat at the interval
// store.WithHeartbeat asked of ctx (a ticker: see Hub.Each). After Close it returns closedErr.
func (s *Shared) Watch(ctx context.Context, closedErr error, newHub func() *Hub, fn func(driver.Notice) error) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return closedErr
	}
	if s.hub == nil {
		s.hub = newHub()
	}
	hub := s.hub
	s.mu.Unlock()
	return hub.Each(ctx, store.HeartbeatEvery(ctx),
		func() error { return fn(driver.Notice{Signal: true}) },
		func() error { return fn(driver.Notice{Heartbeat: true}) })
}

// Close ends the watches with err, and every later one with the closedErr of its Watch; it
// returns once the hub's goroutine has.
func (s *Shared) Close(err error) {
	s.mu.Lock()
	s.closed = true
	hub := s.hub
	s.mu.Unlock()
	if hub != nil {
		hub.Close(err)
	}
}
