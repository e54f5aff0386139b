package sqlite_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log"

	_ "modernc.org/sqlite"

	"github.com/leasehold/leasehold/fence"
)

// memoryDB returns a database in memory: one connection, since each has a database of its own.
func memoryDB() *sql.DB {
	db, err := sql.Open("sqlite", ":memory:")
	if err != nil {
		log.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	return db
}

// Writes through a fence, in SQLite: the check and the write in one transaction. The holder of
// term 41, paused past its lease, writes after its successor (term 42): refused.
func Example_fence() {
	db := memoryDB()
	defer db.Close()
	ctx := context.Background()
	if err := fence.Create(ctx, db, fence.SQLite); err != nil {
		log.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, "CREATE TABLE reports (month TEXT PRIMARY KEY, body TEXT NOT NULL)"); err != nil {
		log.Fatal(err)
	}

	save := func(term uint64, body string) error {
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		defer tx.Rollback()
		if err := fence.Check(ctx, tx, fence.SQLite, "report-2026-12", term); err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `INSERT INTO reports (month, body) VALUES ('2026-12', ?)
			ON CONFLICT (month) DO UPDATE SET body = excluded.body`, body)
		if err != nil {
			return err
		}
		return tx.Commit()
	}
	fmt.Println(save(41, "by the holder of term 41"))
	fmt.Println(save(42, "by its successor"))
	err := save(41, "late, by the paused holder")
	fmt.Println(errors.Is(err, fence.ErrStale), err)

	var body string
	if err := db.QueryRowContext(ctx, "SELECT body FROM reports").Scan(&body); err != nil {
		log.Fatal(err)
	}
	fmt.Println(body)
	// Output:
	// <nil>
	// <nil>
	// true fence: resource "report-2026-12": term 41 is stale: a later holding wrote under term 42
	// by its successor
}

// The term as a column of the row written, with no table of fences: one conditional UPDATE,
// which changes no row when a later holding has written.
func Example_fenceColumn() {
	db := memoryDB()
	defer db.Close()
	ctx := context.Background()
	for _, stmt := range []string{
		"CREATE TABLE reports (month TEXT PRIMARY KEY, body TEXT NOT NULL, term INTEGER NOT NULL)",
		"INSERT INTO reports VALUES ('2026-12', '', 0)",
	} {
		if _, err := db.ExecContext(ctx, stmt); err != nil {
			log.Fatal(err)
		}
	}

	save := func(term uint64, body string) (bool, error) {
		res, err := db.ExecContext(ctx, `UPDATE reports SET body = ?, term = ?
			WHERE month = '2026-12' AND term <= ?`, body, term, term)
		if err != nil {
			return false, err
		}
		n, err := res.RowsAffected()
		return n == 1, err
	}
	fmt.Println(save(41, "by the holder of term 41"))
	fmt.Println(save(42, "by its successor"))
	fmt.Println(save(41, "late, by the paused holder"))

	var body string
	if err := db.QueryRowContext(ctx, "SELECT body FROM reports").Scan(&body); err != nil {
		log.Fatal(err)
	}
	fmt.Println(body)
	// Output:
	// true <nil>
	// true <nil>
	// false <nil>
	// by its successor
}
