package mysql

import (
	"database/sql"
	"errors"
	"testing"

	"github.com/go-sql-driver/mysql"

	"github.com/leasehold/leasehold/cluster"
	"github.com/leasehold/leasehold/fence"
	"github.com/leasehold/leasehold/internal/fencetest"
	"github.com/leasehold/leasehold/internal/testurl"
)

// The fence's tests over MariaDB (F1–F4 in docs/design.md), through database/sql and the
// driver this module uses, as a user's code would call fence.Check.

// retryable is a deadlock or a lock wait timeout: InnoDB rolls such a transaction (or its
// statement) back, and it may run again. Racing inserts of one new key can deadlock.
func retryable(err error) bool {
	var me *mysql.MySQLError
	return errors.As(err, &me) && (me.Number == 1213 || me.Number == 1205)
}

func TestF1FenceSemantics(t *testing.T) {
	fencetest.Semantics(t, fencetest.NewSQL(t, rawDB(t), fence.MySQL, retryable))
}

func TestF2FenceRace(t *testing.T) {
	fencetest.Race(t, fencetest.NewSQL(t, rawDB(t), fence.MySQL, retryable), 16, 3)
}

// The same race with every statement's arguments interpolated by the driver, as a DSN with
// interpolateParams=true does: the check's terms are numbers in the text.
func TestF2FenceRaceInterpolated(t *testing.T) {
	s := fencetest.NewSQL(t, rawDB(t), fence.MySQL, retryable)
	c, err := parseURL(testurl.Parse(t, serverURL(t)))
	if err != nil {
		t.Fatal(err)
	}
	c.driver.InterpolateParams = true
	if s.DB, err = sql.Open("mysql", c.driver.FormatDSN()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.DB.Close() })
	fencetest.Race(t, s, 8, 1)
}

// F2: a holder frozen past its lease writes after its successor: refused. The election runs
// over this module's store on the same server.
func TestF2FenceFrozenHolder(t *testing.T) {
	s := fencetest.NewSQL(t, rawDB(t), fence.MySQL, retryable)
	fencetest.FrozenHolder(t, cluster.NewStoreLock(openTest(t)), s.Resource(t, "report"))
}
