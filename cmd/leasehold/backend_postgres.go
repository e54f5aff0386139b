//go:build (!leasehold_minimal || leasehold_postgres) && !leasehold_no_postgres

package main

import _ "github.com/leasehold/leasehold/store/postgres" // postgres://, postgresql://, Webda/PostgresStore
