package sqlite

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/leasehold/leasehold/internal/sqltest"
	"github.com/leasehold/leasehold/store"
	"github.com/leasehold/leasehold/store/storetest"
)

// TestConformance runs the store conformance suite (T5), with the default single connection and
// with a pool of several, whose writes then contend for SQLite's lock.
func TestConformance(t *testing.T) {
	t.Parallel()
	for _, params := range []string{"", "max_open_conns=4&table=other_table"} {
		t.Run("params="+params, func(t *testing.T) {
			s := openTest(t, params)
			storetest.Run(t, func(*testing.T) store.Store { return s })
		})
	}
}

// TestOpenThroughRegistry: store.Open knows the sqlite scheme (T4), and the file is in WAL mode.
func TestOpenThroughRegistry(t *testing.T) {
	t.Parallel()
	st, err := store.Open(t.Context(), fileURL(t, "table=mine"))
	if err != nil {
		t.Fatal(err)
	}
	s, ok := st.(*Store)
	if !ok {
		t.Fatalf("store.Open returned %T, want *sqlite.Store", st)
	}
	t.Cleanup(func() { s.Close() })
	if s.Table() != "mine" {
		t.Errorf("table = %q, want mine", s.Table())
	}
	if err := st.Create(t.Context(), "k", map[string]any{"a": 1}); err != nil {
		t.Fatal(err)
	}
	var mode string
	if err := rawDB(t, s.Path()).QueryRow(`PRAGMA journal_mode`).Scan(&mode); err != nil {
		t.Fatal(err)
	}
	if mode != "wal" {
		t.Errorf("journal_mode = %q, want wal", mode)
	}
}

// TestConcurrentOpen: several stores opening a new file at once (switching it to WAL, creating
// the table) all succeed.
func TestConcurrentOpen(t *testing.T) {
	t.Parallel()
	raw := fileURL(t, "")
	sqltest.ConcurrentOpen(t, 8, func() (store.Store, error) { return Open(t.Context(), raw) })
}

// TestLockedFile: an operation waiting for a write lock another connection holds (another
// process, in production) returns when its context ends, not after busy_timeout.
func TestLockedFile(t *testing.T) {
	t.Parallel()
	s := openTest(t, "busy_timeout=60s")
	ctx := t.Context()
	if err := s.Create(ctx, "k", map[string]any{"rev": 1}); err != nil {
		t.Fatal(err)
	}
	conn, err := rawDB(t, s.Path()).Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, `BEGIN IMMEDIATE`); err != nil {
		t.Fatal(err)
	}
	opCtx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	err = s.Patch(opCtx, "k", map[string]any{"rev": 2}, &store.Condition{Field: "rev", Value: 1})
	elapsed := time.Since(start)
	if err == nil {
		t.Fatal("Patch succeeded while another connection held the write lock")
	}
	t.Log(err)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("error %v, want one wrapping context.DeadlineExceeded", err)
	}
	if elapsed > 5*time.Second {
		t.Errorf("Patch returned after %v, want soon after its 300ms deadline", elapsed)
	}
	if _, err := conn.ExecContext(ctx, `ROLLBACK`); err != nil {
		t.Fatal(err)
	}
	doc, err := s.Get(ctx, "k")
	if err != nil || doc["rev"] != 1.0 {
		t.Errorf("after the failed Patch: %v, %v; want rev 1", doc, err)
	}
}
