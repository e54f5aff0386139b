// Package postgres is a [store.Store] kept in a PostgreSQL table, so that an application whose
// replicas already share a PostgreSQL database can elect a leader over it (StoreClusterService)
// with nothing else to deploy.
//
// # Opening
//
// Open takes a URL (importing the package registers the postgres:// and postgresql:// schemes
// with [store.Open]):
//
//	postgres://user:password@host:5432/database?sslmode=disable&table=leasehold_registry
//
// The query parameters pgx (github.com/jackc/pgx/v5/pgxpool) documents are passed to it:
// libpq's connection parameters (sslmode, connect_timeout in seconds, 10 when absent so that an
// unreachable host fails Open instead of hanging, target_session_attrs, ...), pgx's and
// pgxpool's (pool_max_conns, pool_min_conns, pool_max_conn_lifetime, pool_max_conn_idle_time,
// pool_health_check_period, statement_cache_capacity, ...), and the server settings
// application_name, search_path, options, timezone, client_encoding, statement_timeout,
// lock_timeout and idle_in_transaction_session_timeout; other server settings go in options,
// as -c name=value. Any other parameter is an error naming it and listing the known ones (pgx
// would send it to the server, which refuses the connection). The store reads three
// parameters of its own and removes them before handing the URL to pgx:
//
//   - table: the table's name, an unquoted SQL identifier (letters, digits, underscores, at most
//     63 bytes); default leasehold_registry. Use search_path to pick the schema.
//   - password_file: a file holding the password of the URL's user, instead of the URL.
//   - notify: true (default) or false. With true, every write also sends a notification
//     (pg_notify, in the same statement) and Watch follows keys through one LISTENing
//     connection per store (see watch.go). Set false behind a proxy that pools connections
//     per transaction (PgBouncer's transaction mode), where LISTEN does not work: writes then
//     send nothing and Watch answers store.ErrWatchUnsupported, so the Elector polls.
//     Notifying writes take PostgreSQL's database-wide notification lock at commit, which
//     serializes their commits: the store sends a write that arrives while others are in
//     flight in one transaction with the other writes queued then (see Storage), so that the
//     lock is taken once per batch.
//
// TLS is libpq's parameters, which pgx reads: sslmode (verify-full to check the server's
// certificate and name), sslrootcert (the authority, a PEM file), sslcert and sslkey (a client
// certificate, PEM files), and sslpassword for an encrypted key:
//
//	postgres://leasehold@db:5432/app?sslmode=verify-full&sslrootcert=/etc/leasehold/ca.pem&sslcert=/etc/leasehold/client.pem&sslkey=/etc/leasehold/client-key.pem&password_file=/run/secrets/db-password
//
// Open connects, and creates the table if it is missing (several processes may do so at once).
//
// As a service of an application, the type Webda/PostgresStore takes the parameters url and
// table (when given, it replaces the URL's table parameter); name it Registry to make it the
// application's Registry:
//
//	{"services": {"Registry": {"type": "Webda/PostgresStore",
//	    "url": "postgres://app@db:5432/app?sslmode=require", "table": "leasehold_registry"}}}
//
// # A primary with standbys
//
// With streaming replication, name every server in libpq's multi-host form and ask for the one
// that accepts writes:
//
//	postgres://leasehold@db1:5432,db2:5432/app?target_session_attrs=read-write
//
// pgx tries the hosts in turn and keeps the first whose session is read-write, for the pool's
// connections and for the listening connection of the watches alike (a standby cannot LISTEN).
// When the primary fails, its connections fail: the operations in flight answer an error, the
// Elector stops leading (E4), and the next connections go to the promoted standby once it
// accepts writes; the watches end with the listening connection and are opened again there.
// Asynchronous replication (the default) may promote a standby that lacks the last writes the
// old primary acknowledged, renewals included: the lease record goes back to an older revision,
// which every instance counts as a new revision first seen then (E6): leadership may pause
// until it expires, but two instances never lead at once. With synchronous_commit on (or
// remote_apply) and synchronous_standby_names naming the standbys, a write is answered only
// once a standby has it: while none answers, writes wait until their context ends (an unknown
// outcome; statement_timeout does not end that wait) and the Elector stops leading, and no
// acknowledged write is lost by a failover. A failed primary that comes back as a second
// primary (PostgreSQL's own split brain) is not handled: fence it, or rebuild it as a standby
// (pg_rewind, pg_basebackup), before it accepts connections.
//
// # Storage
//
// The table has two columns: id (text, the primary key) and doc (jsonb). Each operation is one
// statement: Create is INSERT ... ON CONFLICT DO NOTHING, Patch an UPDATE merging the fields
// with jsonb's || (top-level fields are replaced whole; a field set to null stays, as null),
// Delete a DELETE; a condition is a WHERE clause comparing doc -> field with the value as jsonb,
// which compares JSON values (1 = 1.0, "1" <> 1, objects by value). jsonb cannot hold the NUL
// character, so strings (and field names) containing U+0000 or U+E000 are stored with U+0000
// written as U+E000 '0' and U+E000 as U+E000 U+E000, and decoded on the way back; equality is
// preserved, as the encoding is one-to-one.
//
// A write that arrives while others are in flight (two lone writes or batches; one with a pool
// of fewer than four connections) waits, and the writes waiting then go together, ordered by
// key, in one transaction of one round trip (group commit: one commit for all). The statements
// are the same, each caller gets its own answer, and the statements of a batch the server
// refuses are run again one at a time (batch.go).
//
// When a conditional Patch or Delete affects no row, the store reads the row to tell
// ErrNotFound from ErrConditionFailed (see [Store.Patch]).
//
// # Errors
//
// Errors name the key and, for Open, the URL with its password redacted; pgx's own errors never
// carry the password. The pgx error (*pgconn.PgError, *pgconn.ConnectError) stays reachable with
// errors.As. Operations honour their context: when the connection is cut, an operation returns
// once its context is done (pgx closes the connection), so callers that need a bound (the
// Elector does) pass a context with a deadline.
package postgres
