package sqlite

import (
	"context"
	sqldriver "database/sql/driver"
	"errors"
	"path/filepath"

	"github.com/leasehold/leasehold/internal/filewatch"
	"github.com/leasehold/leasehold/store/driver"
)

var _ driver.Watcher = (*backend)(nil)

// errClosed ends the watches of a closed store.
var errClosed = errors.New("sqlite: store closed")

// watchState holds the store's inotify hub (internal/filewatch), made at the first Watch and
// shared by all the store's watches.
type watchState struct{ filewatch.Shared }

// Watch implements driver.Watcher with inotify on the database's directory: a commit writes the
// -wal file (the store keeps the database in WAL mode), a checkpoint the database file, and a
// file replaced or removed counts too. Every change wakes every watch of the store with a
// Signal, for the Portable store to read the key.
//
// The write that wakes the watches comes before the commit is visible: SQLite writes the
// frames to the -wal file, syncs it (synchronous=FULL), and only then publishes the commit in
// the -shm index, which no inotify event reports. So after each batch of events, before the
// watches read, the hub takes SQLite's write lock (BEGIN IMMEDIATE, then ROLLBACK): the writer
// held it through its commit, so the reads that follow see it. With mode=ro that lock cannot be
// taken, and a watch may miss a commit's state until the next change: it is a hint, and the
// Elector polls besides.
func (s *backend) Watch(ctx context.Context, key string, fn func(driver.Notice) error) error {
	return s.watch.Watch(ctx, errClosed, func() *filewatch.Hub {
		base := filepath.Base(s.path)
		return filewatch.NewHub(filepath.Dir(s.path), []string{base, base + "-wal"},
			filewatch.Options{Modify: true, Settle: s.settle})
	}, fn)
}

// settle waits for the writers whose writes woke the hub to finish their commits: it takes and
// releases SQLite's write lock. A failure (a busy database, a read-only store) leaves the
// watches to read what they can.
func (s *backend) settle(ctx context.Context) {
	if s.readOnly {
		return
	}
	retryBusy(ctx, s.busy, func() error {
		c, err := s.db.Conn(ctx)
		if err != nil {
			return err
		}
		defer c.Close()
		if _, err := c.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
			return err
		}
		if _, err = c.ExecContext(context.Background(), "ROLLBACK"); err != nil {
			// Never back to the pool inside a transaction.
			c.Raw(func(any) error { return sqldriver.ErrBadConn })
		}
		return err
	})
}

// closeWatches ends the store's watches, and returns once the hub's goroutine has.
func (s *backend) closeWatches() { s.watch.Close(errClosed) }
