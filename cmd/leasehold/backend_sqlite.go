//go:build (!leasehold_minimal || leasehold_sqlite) && !leasehold_no_sqlite

package main

import _ "github.com/leasehold/leasehold/store/sqlite" // sqlite://, Webda/SQLiteStore
