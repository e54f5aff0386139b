// Package mysql is a [store.Store] kept in a MySQL or MariaDB table, so that an application
// whose replicas already share such a database can elect a leader over it (StoreClusterService)
// with nothing else to deploy. It uses github.com/go-sql-driver/mysql and needs MariaDB 10.7 or
// later (for JSON_EQUALS) or MySQL 8.0 or later. The tests run against MariaDB; the MySQL
// dialect (JSON comparison by CAST(... AS JSON)) is chosen when the server's version does not
// say MariaDB.
//
// # Opening
//
// Open takes a URL (importing the package registers the mysql:// scheme with [store.Open]):
//
//	mysql://user:password@host:3306/database?table=leasehold_registry&max_open_conns=8
//
// The store reads these query parameters:
//
//   - table: the table's name, letters, digits and underscores, at most 64; default
//     leasehold_registry.
//   - max_open_conns, max_idle_conns: the connection pool's limits (database/sql's
//     SetMaxOpenConns, SetMaxIdleConns); default 8 and 8.
//   - conn_max_lifetime, conn_max_idle_time: Go durations ("5m"); default 30m and 5m.
//   - socket: a Unix socket path, used instead of the URL's host.
//   - tls, ca, cert, key, servername: TLS with a private authority (ca, a PEM file), a client
//     certificate (cert and key, PEM files, for a user created with REQUIRE X509), and the name
//     the server's certificate must hold when it is not the host of the URL; any of them implies
//     tls=true, which verifies the server's certificate for the URL's host. The driver's other
//     tls values (skip-verify, preferred) still go to it, without these parameters.
//   - password_file: a file holding the password of the URL's user, instead of the URL.
//
// A user with a client certificate and a password kept in a file:
//
//	mysql://leasehold@db:3306/app?ca=/etc/leasehold/ca.pem&cert=/etc/leasehold/client.pem&key=/etc/leasehold/client-key.pem&password_file=/run/secrets/db-password
//
// The driver's own parameters go to it as in its DSN (timeout, readTimeout, writeTimeout,
// charset, collation, loc, parseTime, ...; see github.com/go-sql-driver/mysql), and time_zone,
// a server setting. Any other parameter is an error naming it and listing the known ones (the
// driver would send it to the server as a session variable). The store sets
// timeout (the dial timeout) to 10s unless given, interpolateParams to true unless given (the
// statement then travels in one round trip, instead of a prepare, an execute and a close), and
// clientFoundRows to true always (an UPDATE must count the rows it matched, not only those it
// changed, to tell a met condition from a failed one).
//
// Open connects, checks the server's dialect, and creates the table if it is missing (several
// processes may do so at once).
//
// As a service of an application, the type Webda/MySQLStore takes the parameters url and table
// (when given, it replaces the URL's table parameter); name it Registry to make it the
// application's Registry:
//
//	{"services": {"Registry": {"type": "Webda/MySQLStore",
//	    "url": "mysql://app:secret@db:3306/app", "table": "leasehold_registry"}}}
//
// # Storage
//
// The table has two columns: id (VARBINARY(1024), the primary key, so keys compare byte for byte
// whatever the collation) and doc (JSON). Each operation is one statement: Create is an INSERT
// (a duplicate key is ErrExists), Patch an UPDATE setting the fields with JSON_SET (top-level
// fields are replaced whole and a field set to null stays, as null, which JSON_MERGE_PATCH would
// not do), Delete a DELETE; a condition is a WHERE clause comparing the field as a JSON value
// (MariaDB: JSON_EQUALS; MySQL: = CAST(? AS JSON)), so 1 equals 1.0 and "1" does not equal 1.
// InnoDB evaluates an UPDATE's or DELETE's WHERE clause on the latest committed version of the
// row, under the row's lock, so of concurrent writers holding the same condition exactly one
// wins.
//
// When a conditional Patch or Delete affects no row, the store reads the row to tell
// ErrNotFound from ErrConditionFailed (see [Store.Patch]).
//
// # Consistency
//
// Get, and the read that tells ErrNotFound from ErrConditionFailed, are locking reads (SELECT
// ... LOCK IN SHARE MODE): they wait for a transaction that changed the row and read its latest
// committed version, as INSERT, UPDATE and DELETE do. A plain SELECT reads a snapshot, and
// InnoDB does not make a commit visible to snapshots and to lock checks at one instant: the
// committing transaction is first marked committed, which lets the lock checks of other
// statements through (an INSERT of the same key then fails with a duplicate key at once), and
// only afterwards leaves the list of active transactions whose changes new snapshots do not
// see. When the committing thread is descheduled in between, for a fraction of a millisecond on
// a busy host, a Create answered ErrExists while Gets that started after that answer still
// found no document. That is the server's own behaviour (seen on MariaDB 10.11 with plain reads
// in 3 of 105 runs of the linearizability check with 12 clients on a loaded two-core machine,
// in READ COMMITTED as in REPEATABLE READ: the isolation level does not change how a
// statement's snapshot is taken), and locking reads, which see commits as the lock checks do,
// do not show it (none in 45 such runs). What they cost: a Get waits for a concurrent write of
// its row to commit, and in REPEATABLE READ the Get of a missing key locks the gap where it
// would be for the statement's duration, so that an INSERT into that gap waits for it.
//
// Each statement is a transaction of its own (autocommit). A statement InnoDB rolled back as the
// victim of a deadlock (error 1213: concurrent writers of one key meet them, two INSERTs holding
// a shared lock on a row both asking for its exclusive lock), or, on MariaDB with
// innodb_snapshot_isolation, a locking read that found its row changed since its snapshot
// (error 1020), had no effect, and runs again after a pause of a millisecond or two, up to 10
// times, within the call's context; when the context ends first, the call fails with the
// context's error, an unknown outcome.
//
// # Errors
//
// Errors name the key and, for Open, the URL with its password redacted; the password is never
// given to the driver inside a string it could quote. The driver's *mysql.MySQLError stays
// reachable with errors.As. The driver's own log lines go to log/slog at debug level. Operations
// honour their context: when the connection is cut, an operation returns once its context is
// done (the driver closes the connection), so callers that need a bound (the Elector does) pass
// a context with a deadline.
package mysql
