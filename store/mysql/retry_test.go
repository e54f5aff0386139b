package mysql

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/leasehold/leasehold/store"
)

// TestRetry: a statement InnoDB rolled back (a deadlock's victim, 1213; a locking read under
// innodb_snapshot_isolation, 1020) runs again, at most maxAttempts times, and not after its
// context ended; any other answer is the answer.
func TestRetry(t *testing.T) {
	t.Parallel()
	deadlock := &mysql.MySQLError{Number: 1213, Message: "Deadlock found when trying to get lock; try restarting transaction"}
	changed := &mysql.MySQLError{Number: 1020, Message: "Record has changed since last read"}
	duplicate := &mysql.MySQLError{Number: 1062, Message: "Duplicate entry"}
	answers := func(errs ...error) (func() error, *int) {
		n := 0
		return func() error {
			n++
			if n <= len(errs) {
				return errs[n-1]
			}
			return nil
		}, &n
	}

	f, n := answers(deadlock, changed, deadlock)
	if err := retry(t.Context(), f); err != nil || *n != 4 {
		t.Errorf("rolled back three times, then done: %v after %d attempts, want nil after 4", err, *n)
	}
	f, n = answers(deadlock, duplicate)
	if err := retry(t.Context(), f); !errors.Is(err, duplicate) || *n != 2 {
		t.Errorf("a duplicate after a deadlock: %v after %d attempts, want the duplicate after 2", err, *n)
	}
	always := make([]error, maxAttempts+5)
	for i := range always {
		always[i] = deadlock
	}
	f, n = answers(always...)
	err := retry(t.Context(), f)
	var me *mysql.MySQLError
	if !errors.As(err, &me) || me.Number != 1213 || *n != maxAttempts || !strings.Contains(err.Error(), "rolled back 10 times") {
		t.Errorf("always rolled back: %v after %d attempts, want the deadlock after %d", err, *n, maxAttempts)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	f, n = answers(deadlock, deadlock)
	if err := retry(ctx, f); !errors.Is(err, context.Canceled) || !errors.Is(err, deadlock) || *n != 1 {
		t.Errorf("rolled back, context ended: %v after %d attempts, want the context's error and the deadlock after 1", err, *n)
	}
}

// lockWaits returns the number of statements on table that have been running for a while,
// which an uncontended statement of these tests never is: they wait for a lock. The server's
// list of threads tells it as it is; information_schema.INNODB_TRX, a cache the server
// refreshes only when nobody read it for a while, showed lock waits that had ended seconds
// before while tests polled it.
func lockWaits(t *testing.T, db *sql.DB, table string) int {
	t.Helper()
	count := func() int {
		var n int
		err := db.QueryRowContext(t.Context(), `SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE COMMAND = 'Query' AND INFO LIKE ?`,
			"%`"+table+"`%").Scan(&n)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	first := count()
	time.Sleep(20 * time.Millisecond)
	return min(first, count())
}

// waitLockWaits waits until n statements on table wait for a lock.
func waitLockWaits(t *testing.T, db *sql.DB, table string, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for lockWaits(t, db, table) < n {
		if time.Now().After(deadline) {
			t.Fatalf("fewer than %d statements wait for a lock on %s after 10s; the threads: %s", n, table, threads(t, db))
		}
	}
}

// threads describes the server's threads at work, for a failure message.
func threads(t *testing.T, db *sql.DB) string {
	rows, err := db.QueryContext(t.Context(), `SELECT ID, COALESCE(STATE, ''), COALESCE(LEFT(INFO, 100), '') FROM information_schema.PROCESSLIST WHERE COMMAND != 'Sleep'`)
	if err != nil {
		return err.Error()
	}
	defer rows.Close()
	var b strings.Builder
	for rows.Next() {
		var id, state, query string
		if err := rows.Scan(&id, &state, &query); err != nil {
			return err.Error()
		}
		fmt.Fprintf(&b, "\n\tthread %s %s: %s", id, state, query)
	}
	return b.String()
}

// TestDeadlockVictimRunsAgain provokes a deadlock whose victim is a Create: three inserters of
// one key, A first (holding the row), then the store and C waiting for a shared lock on it; A
// rolls back, and the store and C, each holding the shared lock, both ask for the exclusive one.
// InnoDB rolls back the lighter transaction, the store's (C inserted another row first), with
// error 1213; the store runs its INSERT again, which waits for C, and answers ErrExists once C
// commits, instead of the deadlock.
func TestDeadlockVictimRunsAgain(t *testing.T) {
	t.Parallel()
	s := openTest(t)
	db := rawDB(t)
	ctx := t.Context()
	table := "`" + s.Table() + "`"
	conns := make([]*sql.Conn, 2)
	for i := range conns {
		c, err := db.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		conns[i] = c
	}
	a, c := conns[0], conns[1]
	exec := func(conn *sql.Conn, stmt string) error { _, err := conn.ExecContext(ctx, stmt); return err }
	for _, stmt := range []string{"BEGIN", "INSERT INTO " + table + ` (id, doc) VALUES ('k', '{"by": "a"}')`} {
		if err := exec(a, stmt); err != nil {
			t.Fatal(err)
		}
	}
	created, cInserted := make(chan error, 1), make(chan error, 1)
	go func() { created <- s.Create(ctx, "k", map[string]any{"by": "store"}) }()
	waitLockWaits(t, db, s.Table(), 1)
	for _, stmt := range []string{"BEGIN", "INSERT INTO " + table + ` (id, doc) VALUES ('other', '{"by": "c"}')`} {
		if err := exec(c, stmt); err != nil {
			t.Fatal(err)
		}
	}
	go func() { cInserted <- exec(c, "INSERT INTO "+table+` (id, doc) VALUES ('k', '{"by": "c"}')`) }()
	waitLockWaits(t, db, s.Table(), 2)
	if err := exec(a, "ROLLBACK"); err != nil {
		t.Fatal(err)
	}
	if err := <-cInserted; err != nil {
		t.Fatalf("C's INSERT: %v (the store's INSERT, the lighter transaction, should have been the deadlock's victim)", err)
	}
	// The store's INSERT, run again after the deadlock, waits for C's row.
	for deadline := time.Now().Add(10 * time.Second); lockWaits(t, db, s.Table()) == 0; {
		select {
		case err := <-created:
			t.Fatalf("Create returned before C committed: %v", err)
		case <-time.After(5 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("Create neither returned nor waited for C's row within 10s; the threads: %s", threads(t, db))
		}
	}
	if err := exec(c, "COMMIT"); err != nil {
		t.Fatal(err)
	}
	err := <-created
	if !errors.Is(err, store.ErrExists) || strings.Contains(err.Error(), "1213") {
		t.Fatalf("Create, the deadlock's victim, then C's row committed: %v, want ErrExists", err)
	}
	doc, err := s.Get(ctx, "k")
	if err != nil || doc["by"] != "c" {
		t.Errorf("Get: %v, %v; want C's document", doc, err)
	}
}

// TestGetWaitsForWriter: Get is a locking read. It waits for a transaction that changed the row
// and returns the row it committed, as the writes do, rather than the snapshot a plain read
// returns at once: a snapshot can miss a row that the writes, and the INSERT that answered a
// duplicate key, already take for committed (see the package documentation).
func TestGetWaitsForWriter(t *testing.T) {
	t.Parallel()
	s := openTest(t)
	db := rawDB(t)
	ctx := t.Context()
	if err := s.Create(ctx, "k", map[string]any{"v": 1}); err != nil {
		t.Fatal(err)
	}
	w, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	for _, stmt := range []string{"BEGIN", "UPDATE `" + s.Table() + "` SET doc = '{\"v\": 2}' WHERE id = 'k'"} {
		if _, err := w.ExecContext(ctx, stmt); err != nil {
			t.Fatal(err)
		}
	}
	got := make(chan any, 1)
	go func() {
		doc, err := s.Get(ctx, "k")
		if err != nil {
			got <- err
			return
		}
		got <- doc["v"]
	}()
	for deadline := time.Now().Add(10 * time.Second); lockWaits(t, db, s.Table()) == 0; {
		select {
		case v := <-got:
			t.Fatalf("Get returned %v while a transaction held the row (a plain read of its snapshot)", v)
		case <-time.After(5 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("Get neither returned nor waited for the writer's lock within 10s; the threads: %s", threads(t, db))
		}
	}
	if _, err := w.ExecContext(ctx, "COMMIT"); err != nil {
		t.Fatal(err)
	}
	if v := <-got; v != 2.0 {
		t.Errorf("Get after the writer committed: %v, want 2", v)
	}
}
