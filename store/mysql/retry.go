package mysql

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/go-sql-driver/mysql"
)

// InnoDB rolls a statement back when it picks it as the victim of a deadlock (error 1213),
// which concurrent writers of one key meet often enough (about one INSERT in seven with 12
// writers on MariaDB 10.11: two INSERTs holding shared locks on a row a DELETE had locked both
// ask for its exclusive lock), and MariaDB does when innodb_snapshot_isolation finds that a
// locking read would see a row changed since the transaction's read view (error 1020). Each
// statement of the store is a transaction of its own, so either error means that nothing
// happened: the statement runs again, a few times, after a short random pause, within the
// call's context.
const (
	maxAttempts = 10
	maxPause    = 2 * time.Millisecond
)

// rolledBack reports whether err is a statement InnoDB rolled back for another to go on.
func rolledBack(err error) bool {
	var me *mysql.MySQLError
	return errors.As(err, &me) && (me.Number == 1213 || me.Number == 1020)
}

// retry runs f until it succeeds, fails otherwise than by a rollback (see rolledBack), has
// been rolled back maxAttempts times, or ctx ends during a pause (the error then holds the
// context's as well: the call has no answer, since the statement has not run again).
func retry(ctx context.Context, f func() error) error {
	for attempt := 1; ; attempt++ {
		err := f()
		if !rolledBack(err) {
			return err
		}
		if attempt == maxAttempts {
			return fmt.Errorf("rolled back %d times: %w", attempt, err)
		}
		pause := time.NewTimer(rand.N(maxPause * time.Duration(min(attempt, 4)) / 4))
		select {
		case <-ctx.Done():
			pause.Stop()
			return fmt.Errorf("%w: %w", ctx.Err(), err)
		case <-pause.C:
		}
	}
}
