package file

import (
	"context"
	"path/filepath"

	"github.com/leasehold/leasehold/internal/filewatch"
	"github.com/leasehold/leasehold/store/driver"
)

var _ driver.Watcher = (*backend)(nil)

// watchState holds the store's inotify hub (internal/filewatch), made at the first Watch and
// shared by all the store's watches.
type watchState struct{ filewatch.Shared }

// Watch implements driver.Watcher with inotify on the data file's directory: writers replace
// the file by a rename (IN_MOVED_TO), and a file written, created or removed by hand counts too.
// Every change of the file wakes every watch of the store with a Signal, for the Portable store
// to read the key: a read after the event sees the write that caused it, since the writer
// renames under the exclusive lock and Get takes the shared one. Every read after the
// subscription, and after a wake, sees every write made before it.
func (s *backend) Watch(ctx context.Context, key string, fn func(driver.Notice) error) error {
	return s.watch.Watch(ctx, ErrClosed, func() *filewatch.Hub {
		return filewatch.NewHub(filepath.Dir(s.path), []string{filepath.Base(s.path)}, filewatch.Options{})
	}, fn)
}

// close ends the store's watches with ErrClosed, and returns once the hub's goroutine has.
func (w *watchState) close() { w.Close(ErrClosed) }
