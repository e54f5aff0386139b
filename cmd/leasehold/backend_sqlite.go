//go:build (!leasehold_minimal || leasehold_sqlite) && !leasehold_no_sqlite

package main

import "github.com/leasehold/leasehold/store/sqlite" // sqlite://, Webda/SQLiteStore

// A SQLite store whose file does not exist is not opened by the commands that only read
// (absentStore): its URL is checked all the same.
func init() { urlChecks["sqlite"] = sqlite.CheckURL }
