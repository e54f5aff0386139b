package file

import (
	"context"
	"path/filepath"
	"sync"

	"github.com/leasehold/leasehold/internal/filewatch"
	"github.com/leasehold/leasehold/store"
	"github.com/leasehold/leasehold/store/driver"
)

var _ driver.Watcher = (*backend)(nil)

// watchState holds the store's inotify hub (internal/filewatch), made at the first Watch and
// shared by all the store's watches.
type watchState struct {
	mu     sync.Mutex
	hub    *filewatch.Hub
	closed bool
}

// Watch implements driver.Watcher with inotify on the data file's directory: writers replace
// the file by a rename (IN_MOVED_TO), and a file written, created or removed by hand counts too.
// Every change of the file wakes every watch of the store with a Signal, for the Portable store
// to read the key: a read after the event sees the write that caused it, since the writer
// renames under the exclusive lock and Get takes the shared one.
func (s *backend) Watch(ctx context.Context, key string, fn func(driver.Notice) error) error {
	hub, err := s.watch.hubFor(s.path)
	if err != nil {
		return err
	}
	// Every read after the subscription, and after a wake, sees every write made before it.
	// Heartbeats (store.WithHeartbeat) are a ticker: see filewatch.Hub.Each.
	return hub.Each(ctx, store.HeartbeatEvery(ctx),
		func() error { return fn(driver.Notice{Signal: true}) },
		func() error { return fn(driver.Notice{Heartbeat: true}) })
}

func (w *watchState) hubFor(path string) (*filewatch.Hub, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return nil, ErrClosed
	}
	if w.hub == nil {
		w.hub = filewatch.NewHub(filepath.Dir(path), []string{filepath.Base(path)}, filewatch.Options{})
	}
	return w.hub, nil
}

// close ends the store's watches with ErrClosed, and returns once the hub's goroutine has.
func (w *watchState) close() {
	w.mu.Lock()
	w.closed = true
	hub := w.hub
	w.mu.Unlock()
	if hub != nil {
		hub.Close(ErrClosed)
	}
}
