package fence_test

import (
	"errors"
	"fmt"
	"log"

	"github.com/leasehold/leasehold/fence"
)

// The statement Create runs, for a migration tool.
func ExampleTable_DDL() {
	for _, d := range []fence.Dialect{fence.PostgreSQL, fence.MySQL, fence.SQLite} {
		ddl, err := fence.Table{Dialect: d}.DDL()
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(ddl)
	}
	// Output:
	// CREATE TABLE IF NOT EXISTS "leasehold_fences" (name TEXT PRIMARY KEY, term BIGINT NOT NULL)
	// CREATE TABLE IF NOT EXISTS `leasehold_fences` (name VARBINARY(255) NOT NULL PRIMARY KEY, term BIGINT NOT NULL)
	// CREATE TABLE IF NOT EXISTS "leasehold_fences" (name TEXT NOT NULL PRIMARY KEY, term INTEGER NOT NULL)
}

// A write refused by a fence: a holder paused past its lease, under term 41, after its
// successor wrote under term 42.
func ExampleStaleError() {
	var err error = &fence.StaleError{Resource: "report-2026-12", Term: 41, Stored: 42}
	fmt.Println(err)
	fmt.Println(errors.Is(err, fence.ErrStale))
	// Output:
	// fence: resource "report-2026-12": term 41 is stale: a later holding wrote under term 42
	// true
}
