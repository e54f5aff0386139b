package postgres

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// TestWriteAfterServerRestart is a regression test found by the fault campaign: a worker's
// clean stop came just after a restart of PostgreSQL (189 ms), and its release failed with
// "FATAL: terminating connection due to administrator command (SQLSTATE 57P01)": the pool
// handed out a connection the restart had ended, as pgxpool checks a connection only when it
// has been idle for over a second. A store whose server is back must not fail a write on a
// connection the server has closed.
//
// The restart is played by pg_terminate_backend, which ends the store's sessions with the
// same FATAL a shutdown sends. No restart ends sooner than checkAfterIdle after the shutdown,
// so the test lets the connections idle that long before writing.
func TestWriteAfterServerRestart(t *testing.T) {
	s := openTest(t, "notify", "false")
	ctx := t.Context()
	if err := s.Create(ctx, "k", map[string]any{"n": 1}); err != nil {
		t.Fatal(err)
	}
	admin, err := pgx.Connect(ctx, serverURL(t))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(context.Background())
	var pids []int64
	for _, c := range s.rawPool().AcquireAllIdle(ctx) {
		pids = append(pids, int64(c.Conn().PgConn().PID()))
		c.Release()
	}
	if len(pids) == 0 {
		t.Fatal("the store's pool holds no idle connection after a write")
	}
	if _, err := admin.Exec(ctx, "select pg_terminate_backend(pid::int) from unnest($1::int8[]) as pid", pids); err != nil {
		t.Fatal(err)
	}
	// The sessions are gone when the server no longer lists them.
	for {
		var n int
		if err := admin.QueryRow(ctx, "select count(*) from pg_stat_activity where pid = any($1::int8[])", pids).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("sessions %v still listed after pg_terminate_backend", pids)
		case <-time.After(5 * time.Millisecond):
		}
	}
	time.Sleep(checkAfterIdle + 10*time.Millisecond) // the scenario: connections idle past the check
	if err := s.Patch(ctx, "k", map[string]any{"n": 2}, nil); err != nil {
		t.Fatalf("patch on a server whose sessions ended while the pool held them: %v", err)
	}
}
