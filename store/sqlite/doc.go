// Package sqlite is a [store.Store] kept in a table of an SQLite database file, through
// modernc.org/sqlite (pure Go, no cgo). Several processes on one host may use the same file at
// once: SQLite's file locks serialize their writes, and each write is one statement, so
// conditions hold across processes (StoreClusterService can elect a leader among processes
// sharing the file). The file must be on a local file system: SQLite's locks, and WAL's shared
// memory, do not work over NFS.
//
// # Opening
//
// Open takes a URL with an absolute path (importing the package registers the sqlite:// scheme
// with [store.Open]):
//
//	sqlite:///var/lib/app/registry.db?table=leasehold_registry&busy_timeout=5s
//
// The store reads these query parameters:
//
//   - table: the table's name, letters, digits and underscores; default leasehold_registry.
//   - busy_timeout: how long a statement waits for another connection's or process's write
//     lock before failing with SQLITE_BUSY, as a Go duration or milliseconds; default 5s.
//   - synchronous: SQLite's synchronous setting, FULL (default: a committed write survives a
//     power loss) or NORMAL (faster; in WAL mode a power loss may undo the last writes, never
//     corrupt the file).
//   - max_open_conns: the connection pool's size in this process; default 1. One connection
//     makes the process's own operations queue in Go instead of polling SQLite's lock, which is
//     faster under contention; reads do not block on writes in WAL mode either way.
//   - mode: rwc (default) or ro. With ro, for tools that only read, the store neither creates
//     nor changes the database: a missing file is an error, a missing table reads as no
//     documents, and every write fails. (SQLite still creates the -wal and -shm files beside
//     a WAL database that has none, as for any reader.)
//
// Open creates the file if it is missing (not its directory), switches it to WAL mode (a
// persistent setting of the file), and creates the table if it is missing; several processes
// may do so at once.
//
// As a service of an application, the type Webda/SQLiteStore takes the parameters url and table
// (when given, it replaces the URL's table parameter); name it Registry to make it the
// application's Registry:
//
//	{"services": {"Registry": {"type": "Webda/SQLiteStore", "url": "sqlite:///var/lib/app/registry.db"}}}
//
// # Storage
//
// The table has two columns: id (TEXT, the primary key, compared byte for byte) and doc (TEXT,
// the document's JSON). Each operation is one statement: Create is INSERT ... ON CONFLICT DO
// NOTHING, Patch an UPDATE, Delete a DELETE. The condition and the merge are two SQL functions
// the package registers with the driver, leasehold_doc_matches and leasehold_doc_patch, written
// in Go with the store package's JSON-value semantics (1 equals 1.0, "1" does not equal 1,
// objects and arrays by value; a patched field is replaced whole, and null is a value). SQLite's
// own json_patch cannot serve: it merges nested objects and deletes fields set to null; and its
// json_extract returns SQL values (true as 1, null as NULL) that cannot compare JSON values
// exactly. The functions run inside the statement, under SQLite's write lock, so the check and
// the write are one atomic step.
//
// When a conditional Patch or Delete affects no row, the store reads the row to tell
// ErrNotFound from ErrConditionFailed (see [Store.Patch]).
//
// # Errors
//
// Errors name the key, and for Open the URL. A row whose document is not a JSON object is an
// error naming its key, and is left as it is. SQLite's error (*sqlite.Error) stays reachable
// with errors.As.
package sqlite
