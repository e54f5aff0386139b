// Package fence makes the resources a lease holder writes to refuse the writes of earlier
// holdings: the check that turns a term (locker's Held.Term, cluster.TermOf) into a fencing
// token.
//
// # Why
//
// A lease ends on the holder's clock, not on the resource's. A holder paused past its lease (a
// long garbage collection, SIGSTOP, a virtual machine migrated, a network cut off and back)
// wakes up believing it still holds: its next write lands after its successor's, over its
// successor's work. The election cannot prevent that write; the resource can, if it knows which
// holding is the latest. Every holding carries a term larger than every earlier holding's of
// that lease (E11 in docs/design.md): the resource keeps the highest term it has seen and
// refuses a write that carries a lower one.
//
// The check must be atomic with the write it guards: a check, then a pause, then a write is the
// same race again. So each form below checks and writes in one step: in the writer's own
// SQL transaction (the fence's row stays locked until that transaction ends), in one Redis
// script, or in one conditional write of an object.
//
// # In a SQL database
//
// A table of fences, (name, term), keeps the highest term seen for each resource. Check,
// called inside the transaction that writes the resource, raises the resource's term to the
// one given, or refuses with an error wrapping ErrStale (a *StaleError naming the resource,
// the term given and the higher term stored) when a later holding has written. An equal term
// is the same holding: accepted. Check the fence first in the transaction, then write, then
// commit; on any error roll back:
//
//	tx, err := db.BeginTx(ctx, nil)
//	...
//	defer tx.Rollback()
//	if err := fence.Check(ctx, tx, fence.PostgreSQL, "report-2026-12", held.Term()); err != nil {
//		return err // errors.Is(err, fence.ErrStale): a later holding wrote; nothing is written
//	}
//	... the transaction's writes ...
//	return tx.Commit()
//
// The check is one upsert that takes the fence's row lock (INSERT ... ON CONFLICT DO UPDATE
// on PostgreSQL and SQLite, INSERT ... ON DUPLICATE KEY UPDATE then SELECT ... FOR UPDATE on
// MySQL and MariaDB), held until the transaction ends: a concurrent transaction's check waits
// for it, then sees its term. So transactions that passed the check commit in the order of
// their terms, and none commits a write after a higher term's. Checking first also takes the
// locks in one order (the fence's, then the resource's), which keeps two writers from
// deadlocking on them. Under REPEATABLE READ or SERIALIZABLE, a check that meets a concurrent
// change may fail with the database's serialization error instead of waiting: retry the
// transaction, with the same term. On SQLite a transaction is one writer at a time: check first
// (or begin with BEGIN IMMEDIATE) so that it takes the write lock before reading anything, or
// an upgrade can fail with SQLITE_BUSY.
//
// Create makes the table if absent (Table.DDL gives its statement, for a migration tool). The
// dialect is given, never guessed: PostgreSQL, MySQL (MySQL and MariaDB) or SQLite. Check and
// Create use the table DefaultTable; a Table value names another, and has the same methods.
//
// # A term column on your own row
//
// A resource that is one row can hold its own term, with no table of fences: a term column,
// written by every write, and a write conditional on it,
//
//	UPDATE reports SET body = $1, term = $2 WHERE id = $3 AND term <= $2
//
// which changes no row when a later holding wrote (or the row is missing): read the row to
// tell which. On MySQL and MariaDB, the rows affected count only rows whose values changed
// unless the connection sets clientFoundRows=true: a write of the same values under the same
// term reports 0. The same pattern fits a document store's conditional update.
//
// # In Redis
//
// Module store/redis, package redisfence: Set writes a value and its term in one hash, in one
// Lua script, only if the term is not lower than the stored one, and refuses with an error
// wrapping this package's ErrStale otherwise.
//
// # In an object store (S3, Google Cloud Storage, Azure Blob Storage)
//
// Keep the term in the object's metadata (x-amz-meta-term, a GCS object's metadata, an Azure
// blob's metadata) and write with a conditional put: read the object's metadata with its ETag
// (or its generation on GCS); if its term is above yours, a later holding wrote: stop. Else put
// the new object, with your term in its metadata, conditional on that ETag (If-Match on S3 and
// Azure, ifGenerationMatch on GCS; If-None-Match: * when it did not exist). A put refused
// (412 Precondition Failed) means another writer came in between: read again and check again.
// A stale writer either sees the higher term, or loses the conditional put to the writer that
// wrote it.
package fence
