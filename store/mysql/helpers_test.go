package mysql

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"net/url"
	"testing"
	"time"

	"github.com/leasehold/leasehold/internal/testenv"
)

// serverURL returns the test server's URL (skipping when it is unreachable, see testenv).
func serverURL(t testing.TB) string {
	t.Helper()
	return testenv.MySQL.URL(t)
}

// tableName returns a table name unique to this run, so that tests can run in parallel and
// against a database holding other tests' tables.
func tableName(t testing.TB) string {
	t.Helper()
	b := make([]byte, 6)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return "lh_test_" + hex.EncodeToString(b)
}

// withParams returns raw with the query parameters set.
func withParams(t testing.TB, raw string, kv ...string) string {
	t.Helper()
	u := mustParse(t, raw)
	q := u.Query()
	for i := 0; i+1 < len(kv); i += 2 {
		q.Set(kv[i], kv[i+1])
	}
	u.RawQuery = q.Encode()
	return u.String()
}

// withHost returns raw pointing at host:port instead of its own address.
func withHost(t testing.TB, raw, hostport string) string {
	t.Helper()
	u := mustParse(t, raw)
	u.Host = hostport
	return u.String()
}

func mustParse(t testing.TB, raw string) *url.URL {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// openTest opens a store on a fresh table, dropped (and the store closed) when the test ends.
func openTest(t testing.TB, extra ...string) *Store {
	t.Helper()
	s, err := Open(t.Context(), withParams(t, serverURL(t), append([]string{"table", tableName(t)}, extra...)...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dropTable(t, s.Table()); s.Close() })
	return s
}

// rawDB returns a connection pool to the test server, for statements the store would not run.
func rawDB(t testing.TB) *sql.DB {
	t.Helper()
	c, err := parseURL(mustParse(t, serverURL(t)))
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
	c, err := parseURL(mustParse(t, serverURL(t)))
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
