package fence

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"
)

// F4: bad input is refused before any statement runs, with an error naming what is at fault.
// Check's tx is nil here: every case below must fail on its input, not reach the database.
func TestF4BadInput(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		name     string
		table    Table
		resource string
		term     uint64
		want     string
	}{
		{"no dialect", Table{}, "r", 1, "dialect 0 is none of"},
		{"unknown dialect", Table{Dialect: 7}, "r", 1, "dialect 7 is none of"},
		{"empty resource", Table{Dialect: PostgreSQL}, "", 1, "resource name is empty"},
		{"long resource", Table{Dialect: MySQL}, strings.Repeat("a", 256), 1, "256 bytes, more than 255"},
		{"invalid UTF-8", Table{Dialect: SQLite}, "r\xff", 1, `resource "r\xff": not valid UTF-8`},
		{"NUL", Table{Dialect: PostgreSQL}, "r\x00", 1, `resource "r\x00": contains a NUL byte`},
		{"term 0", Table{Dialect: PostgreSQL}, "r", 0, `resource "r": term 0 is no leadership's term`},
		{"term above int64", Table{Dialect: MySQL}, "r", math.MaxInt64 + 1, `resource "r": term 9223372036854775808 is above 9223372036854775807`},
		{"nil tx", Table{Dialect: SQLite}, "r", 1, `resource "r": tx is nil`},
		{"table name with a quote", Table{Dialect: PostgreSQL, Name: `f"; DROP TABLE x; --`}, "r", 1, `table name "f\"; DROP TABLE x; --"`},
		{"table name with three parts", Table{Dialect: MySQL, Name: "a.b.c"}, "r", 1, `table name "a.b.c": more than one dot`},
		{"table name starting with a digit", Table{Dialect: SQLite, Name: "1fences"}, "r", 1, `table name "1fences": "1fences" is not`},
		{"empty schema", Table{Dialect: PostgreSQL, Name: ".fences"}, "r", 1, `table name ".fences": "" is not`},
		{"table name too long", Table{Dialect: PostgreSQL, Name: strings.Repeat("t", 64)}, "r", 1, "1 to 63 bytes"},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := c.table.Check(ctx, nil, c.resource, c.term)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Check: %v, want an error containing %q", err, c.want)
			}
			if errors.Is(err, ErrStale) {
				t.Errorf("Check: %v wraps ErrStale", err)
			}
		})
	}
	if err := (Table{Dialect: PostgreSQL, Name: "bad name"}).Create(ctx, nil); err == nil || !strings.Contains(err.Error(), `table name "bad name"`) {
		t.Errorf("Create with a bad name: %v", err)
	}
	if err := Create(ctx, nil, SQLite); err == nil || !strings.Contains(err.Error(), "creating table leasehold_fences: db is nil") {
		t.Errorf("Create with a nil db: %v", err)
	}
	if _, err := (Table{}).DDL(); err == nil || !strings.Contains(err.Error(), "dialect 0") {
		t.Errorf("DDL without a dialect: %v", err)
	}
}

// F1: the refusal names the resource and both terms, and wraps ErrStale.
func TestF1StaleError(t *testing.T) {
	var err error = &StaleError{Resource: "report", Term: 7, Stored: 9}
	if !errors.Is(err, ErrStale) {
		t.Errorf("%v does not wrap ErrStale", err)
	}
	for _, want := range []string{`"report"`, "term 7", "term 9", "stale"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q does not contain %q", err, want)
		}
	}
	var se *StaleError
	if !errors.As(error(errors.Join(errors.New("tx"), err)), &se) || se.Stored != 9 {
		t.Errorf("errors.As through a join: %v", se)
	}
}

// The statements quote the table's name for each dialect, a schema-qualified one part by part.
func TestF3StatementsQuoteTheTable(t *testing.T) {
	for _, c := range []struct {
		table Table
		ddl   string
	}{
		{Table{Dialect: PostgreSQL}, `CREATE TABLE IF NOT EXISTS "leasehold_fences" (`},
		{Table{Dialect: PostgreSQL, Name: "app.Fences"}, `CREATE TABLE IF NOT EXISTS "app"."Fences" (`},
		{Table{Dialect: MySQL, Name: "app.fences"}, "CREATE TABLE IF NOT EXISTS `app`.`fences` (name VARBINARY(255)"},
		{Table{Dialect: SQLite, Name: "f"}, `CREATE TABLE IF NOT EXISTS "f" (`},
	} {
		ddl, err := c.table.DDL()
		if err != nil || !strings.HasPrefix(ddl, c.ddl) {
			t.Errorf("%+v: DDL %q, %v; want it to start with %q", c.table, ddl, err, c.ddl)
		}
		q, _ := c.table.quoted()
		if up := c.table.Dialect.upsert(q); !strings.HasPrefix(up, "INSERT INTO "+q+" ") {
			t.Errorf("%+v: upsert %q does not insert into %s", c.table, up, q)
		}
	}
}
