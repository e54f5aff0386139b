package mysql

import (
	"context"
	"database/sql"
	"testing"
	"time"

	"github.com/leasehold/leasehold/internal/testenv"
	"github.com/leasehold/leasehold/internal/testurl"
)

// serverURL returns the test server's URL (skipping when it is unreachable, see testenv).
func serverURL(t testing.TB) string {
	t.Helper()
	return testenv.MySQL.URL(t)
}

// openTest opens a store on a fresh table, dropped (and the store closed) when the test ends.
func openTest(t testing.TB, extra ...string) *Store {
	t.Helper()
	s, err := Open(t.Context(), testurl.With(t, serverURL(t), append([]string{"table", testenv.TableName(t)}, extra...)...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dropTable(t, s.Table()); s.Close() })
	return s
}

// rawDB returns a connection pool to the test server, for statements the store would not run.
func rawDB(t testing.TB) *sql.DB {
	t.Helper()
	c, err := parseURL(testurl.Parse(t, serverURL(t)))
	if err != nil {
		t.Fatal(err)
	}
	c.driver.InterpolateParams = false
	db, err := sql.Open("mysql", c.driver.FormatDSN())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// dropTable drops a table through a connection of its own (the store may be closed already).
func dropTable(t testing.TB, table string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := parseURL(testurl.Parse(t, serverURL(t)))
	if err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("mysql", c.driver.FormatDSN())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.ExecContext(ctx, "DROP TABLE IF EXISTS `"+table+"`"); err != nil {
		t.Errorf("drop table %s: %v", table, err)
	}
}
