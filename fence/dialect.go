package fence

import (
	"fmt"
	"strings"
)

// Dialect is the SQL of a database: its placeholders, its upsert, its quotes.
type Dialect int

const (
	PostgreSQL Dialect = iota + 1
	MySQL              // MySQL and MariaDB
	SQLite
)

func (d Dialect) String() string {
	switch d {
	case PostgreSQL:
		return "PostgreSQL"
	case MySQL:
		return "MySQL"
	case SQLite:
		return "SQLite"
	}
	return fmt.Sprintf("Dialect(%d)", int(d))
}

func (d Dialect) check() error {
	if d < PostgreSQL || d > SQLite {
		return fmt.Errorf("fence: dialect %d is none of fence.PostgreSQL, fence.MySQL, fence.SQLite", int(d))
	}
	return nil
}

// quote returns the table name name (checked by checkTableName) quoted for d, each part of a
// schema-qualified name on its own, so that it is never read as SQL.
func (d Dialect) quote(name string) string {
	q := `"`
	if d == MySQL {
		q = "`"
	}
	parts := strings.Split(name, ".")
	for i, p := range parts {
		parts[i] = q + p + q
	}
	return strings.Join(parts, ".")
}

// ddl returns the statement that creates the table quoted as table when absent. MySQL's name is
// VARBINARY so that names compare byte for byte: its default collations fold case and ignore
// trailing spaces, which would give two resources one fence.
func (d Dialect) ddl(table string) string {
	switch d {
	case PostgreSQL:
		return "CREATE TABLE IF NOT EXISTS " + table + " (name TEXT PRIMARY KEY, term BIGINT NOT NULL)"
	case MySQL:
		return "CREATE TABLE IF NOT EXISTS " + table + " (name VARBINARY(255) NOT NULL PRIMARY KEY, term BIGINT NOT NULL)"
	default:
		return "CREATE TABLE IF NOT EXISTS " + table + " (name TEXT NOT NULL PRIMARY KEY, term INTEGER NOT NULL)"
	}
}

// upsert returns the statement that raises the fence of a name to a term, inserting it when
// absent, and locks its row until the transaction ends. On PostgreSQL and SQLite it returns the
// term stored after it: the larger of the two. Its arguments are upsertArgs'.
func (d Dialect) upsert(table string) string {
	switch d {
	case PostgreSQL:
		// An update to the same value still locks the row, and RETURNING reads the row as
		// locked, after any concurrent transaction that held it has ended.
		return "INSERT INTO " + table + " AS f (name, term) VALUES ($1, $2) ON CONFLICT (name) DO UPDATE SET term = GREATEST(f.term, EXCLUDED.term) RETURNING term"
	case MySQL:
		// No RETURNING here: the term is read by lockedRead. VALUES() in the update is
		// deprecated on MySQL, and the alias syntax that replaces it is not MariaDB's: the
		// term is passed twice.
		return "INSERT INTO " + table + " (name, term) VALUES (?, ?) ON DUPLICATE KEY UPDATE term = GREATEST(term, ?)"
	default:
		return "INSERT INTO " + table + " (name, term) VALUES (?, ?) ON CONFLICT (name) DO UPDATE SET term = max(term, excluded.term) RETURNING term"
	}
}

func (d Dialect) upsertArgs(name string, term int64) []any {
	if d == MySQL {
		return []any{name, term, term}
	}
	return []any{name, term}
}

// lockedRead returns MySQL's statement that reads the term upsert stored. FOR UPDATE reads the
// row's latest version, which upsert has locked: a plain SELECT under REPEATABLE READ could read
// the transaction's older snapshot.
func (d Dialect) lockedRead(table string) string {
	return "SELECT term FROM " + table + " WHERE name = ? FOR UPDATE"
}
