//go:build (!leasehold_minimal || leasehold_mysql) && !leasehold_no_mysql

package main

import (
	gomysql "github.com/go-sql-driver/mysql"

	_ "github.com/leasehold/leasehold/store/mysql" // mysql://, Webda/MySQLStore
)

// The MySQL driver prints some connection errors on stderr itself ("[mysql] ... unexpected
// EOF"), beside the error it returns, which the command reports once, in its log format.
func init() { _ = gomysql.SetLogger(discardMySQLLog{}) }

type discardMySQLLog struct{}

func (discardMySQLLog) Print(...any) {}
