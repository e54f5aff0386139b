package postgres

import (
	"context"
	"database/sql"
	"errors"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	_ "github.com/jackc/pgx/v5/stdlib"

	"github.com/leasehold/leasehold/cluster"
	"github.com/leasehold/leasehold/fence"
	"github.com/leasehold/leasehold/internal/fencetest"
	"github.com/leasehold/leasehold/internal/testenv"
)

// The fence's tests over PostgreSQL (F1–F4 in docs/design.md), through database/sql and pgx's
// driver, as a user's code would call fence.Check.

// sqlDB opens the test server through database/sql, with the connection parameters params
// (name, value, ...): search_path, default_transaction_isolation.
func sqlDB(t *testing.T, params ...string) *sql.DB {
	t.Helper()
	u, err := url.Parse(serverURL(t))
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	for i := 0; i+1 < len(params); i += 2 {
		q.Set(params[i], params[i+1])
	}
	u.RawQuery = strings.ReplaceAll(q.Encode(), "+", "%20") // pgx reads + as itself
	db, err := sql.Open("pgx", u.String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// retryable is a serialization failure or a deadlock: the transaction may run again.
func retryable(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && (pe.Code == "40001" || pe.Code == "40P01")
}

func TestF1FenceSemantics(t *testing.T) {
	fencetest.Semantics(t, fencetest.NewSQL(t, sqlDB(t), fence.PostgreSQL, retryable))
}

func TestF2FenceRace(t *testing.T) {
	fencetest.Race(t, fencetest.NewSQL(t, sqlDB(t), fence.PostgreSQL, retryable), 16, 3)
}

// Under REPEATABLE READ a check that meets a concurrent change fails with a serialization
// error rather than wait: retried, the race ends as under READ COMMITTED.
func TestF2FenceRaceRepeatableRead(t *testing.T) {
	s := fencetest.NewSQL(t, sqlDB(t), fence.PostgreSQL, retryable)
	s.DB = sqlDB(t, "default_transaction_isolation", "repeatable read")
	var level string
	if err := s.DB.QueryRowContext(t.Context(), "SHOW transaction_isolation").Scan(&level); err != nil || level != "repeatable read" {
		t.Fatalf("isolation %q, %v", level, err)
	}
	fencetest.Race(t, s, 16, 2)
}

// Create from many processes at once on a new table: PostgreSQL may refuse all but one
// CREATE TABLE IF NOT EXISTS with a duplicate key in its catalog; each Create succeeds.
func TestF3FenceConcurrentCreate(t *testing.T) {
	db := sqlDB(t)
	table := fence.Table{Dialect: fence.PostgreSQL, Name: testenv.TableName(t)}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		db.ExecContext(ctx, `DROP TABLE IF EXISTS "`+table.Name+`"`)
	})
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for i := range errs {
		wg.Go(func() { errs[i] = table.Create(t.Context(), db) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("Create #%d: %v", i, err)
		}
	}
}

// F2: a holder frozen past its lease writes a report after its successor: refused. The
// resource is saveReport's, in a schema of the test's own, where fence.Create made the
// default table; the election runs over this module's store on the same server.
func TestF2FenceFrozenHolder(t *testing.T) {
	schema := testenv.TableName(t)
	admin := sqlDB(t)
	ctx := t.Context()
	if _, err := admin.ExecContext(ctx, `CREATE SCHEMA "`+schema+`"`); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if _, err := admin.ExecContext(ctx, `DROP SCHEMA "`+schema+`" CASCADE`); err != nil {
			t.Errorf("drop schema %s: %v", schema, err)
		}
	})
	db := sqlDB(t, "search_path", schema)
	if err := fence.Create(ctx, db, fence.PostgreSQL); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, "CREATE TABLE reports (month TEXT PRIMARY KEY, body TEXT NOT NULL)"); err != nil {
		t.Fatal(err)
	}
	fencetest.FrozenHolder(t, cluster.NewStoreLock(openTest(t)), fencetest.Resource{
		Write: func(ctx context.Context, term uint64, value string) error {
			return saveReport(ctx, db, term, "2026-12", value)
		},
		Read: func(ctx context.Context) (string, error) {
			var body string
			err := db.QueryRowContext(ctx, "SELECT body FROM reports WHERE month = '2026-12'").Scan(&body)
			return body, err
		},
	})
	var term int64
	if err := db.QueryRowContext(ctx, "SELECT term FROM leasehold_fences WHERE name = 'report-2026-12'").Scan(&term); err != nil || term < 2 {
		t.Errorf("the default table's fence of report-2026-12: %d, %v", term, err)
	}
}

// saveReport writes a month's report under the holding's term, in one transaction with the
// fence's check: a holder paused past its lease, whose successor has written since, writes
// nothing. (README.md shows it.)
func saveReport(ctx context.Context, db *sql.DB, term uint64, month, body string) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback() // after Commit, a no-op
	if err := fence.Check(ctx, tx, fence.PostgreSQL, "report-"+month, term); err != nil {
		return err // errors.Is(err, fence.ErrStale): a later holding has written
	}
	_, err = tx.ExecContext(ctx, `INSERT INTO reports (month, body) VALUES ($1, $2)
		ON CONFLICT (month) DO UPDATE SET body = EXCLUDED.body`, month, body)
	if err != nil {
		return err
	}
	return tx.Commit()
}
