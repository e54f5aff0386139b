package sqlite

import (
	"context"
	"errors"
	"fmt"
	"time"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// SQLite's busy handler (busy_timeout) sleeps without looking at the statement's context: a
// statement waiting for another process's write lock would hold its caller for the whole
// timeout, even after the caller's deadline. So each connection waits only briefly in SQLite
// (sqliteBusyWait), and the store retries a statement that failed with SQLITE_BUSY, sleeping
// between attempts, until the URL's busy_timeout has passed or the context is done. A statement
// that failed with SQLITE_BUSY did not run (it could not take the lock), so it is safe to run
// again.
const sqliteBusyWait = 20 * time.Millisecond

// maxBackoff caps the sleep between attempts.
const maxBackoff = 20 * time.Millisecond

func isBusy(err error) bool {
	var se *sqlite.Error
	return errors.As(err, &se) && se.Code()&0xff == sqlite3.SQLITE_BUSY
}

// retryBusy runs f until it succeeds, fails otherwise than with SQLITE_BUSY, busy has passed,
// or ctx is done.
func retryBusy(ctx context.Context, busy time.Duration, f func() error) error {
	deadline := time.Now().Add(busy)
	wait := time.Millisecond
	for {
		err := f()
		if !isBusy(err) {
			return err
		}
		if !time.Now().Before(deadline) {
			return fmt.Errorf("the database stayed locked by another connection for busy_timeout (%v): %w", busy, err)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("%w: %w", ctx.Err(), err)
		case <-t.C:
		}
		wait = min(2*wait, maxBackoff)
	}
}
