package postgres

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/leasehold/leasehold/internal/testenv"
	"github.com/leasehold/leasehold/internal/testurl"
)

// serverURL returns the test server's URL (skipping when it is unreachable, see testenv).
func serverURL(t testing.TB) string {
	t.Helper()
	return testenv.Postgres.URL(t)
}

// openTest opens a store on a fresh table, dropped (and the store closed) when the test ends.
func openTest(t testing.TB, extra ...string) *Store {
	t.Helper()
	table := testenv.TableName(t)
	s, err := Open(t.Context(), testurl.With(t, serverURL(t), append([]string{"table", table}, extra...)...))
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
