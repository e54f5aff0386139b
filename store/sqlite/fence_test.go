package sqlite

import (
	"database/sql"
	"path/filepath"
	"testing"

	"github.com/leasehold/leasehold/cluster"
	"github.com/leasehold/leasehold/fence"
	"github.com/leasehold/leasehold/internal/fencetest"
)

// The fence's tests over SQLite (F1–F4 in docs/design.md), through database/sql and the
// driver this module uses, as a user's code would call fence.Check.

// fenceDB opens a new database file in WAL mode, whose connections wait up to 5 s for
// another's write lock.
func fenceDB(t *testing.T) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", filepath.Join(tempDir(t), "app.db")+"?_pragma=busy_timeout(5000)&_pragma=journal_mode(WAL)")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func TestF1FenceSemantics(t *testing.T) {
	fencetest.Semantics(t, fencetest.NewSQL(t, fenceDB(t), fence.SQLite, isBusy))
}

// Transactions of many connections to one file: each begins with the check, which takes the
// write lock, so they run one after the other.
func TestF2FenceRace(t *testing.T) {
	fencetest.Race(t, fencetest.NewSQL(t, fenceDB(t), fence.SQLite, isBusy), 16, 3)
}

// F2: a holder frozen past its lease writes after its successor: refused. The election runs
// over this module's store, in a file of its own.
func TestF2FenceFrozenHolder(t *testing.T) {
	s := fencetest.NewSQL(t, fenceDB(t), fence.SQLite, isBusy)
	fencetest.FrozenHolder(t, cluster.NewStoreLock(openTest(t, "")), s.Resource(t, "report"))
}
