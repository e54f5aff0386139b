package postgres

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/leasehold/leasehold/internal/testenv"
)

// serverURL returns the test server's URL (skipping when it is unreachable, see testenv).
func serverURL(t testing.TB) string {
	t.Helper()
	return testenv.Postgres.URL(t)
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
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
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
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	u.Host = hostport
	return u.String()
}

// openTest opens a store on a fresh table, dropped (and the store closed) when the test ends.
func openTest(t testing.TB, extra ...string) *Store {
	t.Helper()
	table := tableName(t)
	s, err := Open(t.Context(), withParams(t, serverURL(t), append([]string{"table", table}, extra...)...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dropTable(t, s) })
	return s
}

// dropTable closes the store and drops its table, through a connection of its own (the store
// may be closed already).
func dropTable(t testing.TB, s *Store) {
	t.Helper()
	s.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, serverURL(t))
	if err != nil {
		t.Errorf("drop table %s: %v", s.Table(), err)
		return
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `DROP TABLE IF EXISTS `+pgx.Identifier{s.Table()}.Sanitize()); err != nil {
		t.Errorf("drop table %s: %v", s.Table(), err)
	}
}

func mustParse(t testing.TB, raw string) *url.URL {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	return u
}
