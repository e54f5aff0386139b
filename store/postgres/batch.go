package postgres

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/leasehold/leasehold/store/driver"
)

// Group commit of writes. A notifying write takes PostgreSQL's database-wide notification lock
// at commit (PreCommit_Notify) and holds it through the commit's WAL flush, so notifying
// transactions commit one at a time, whatever the pool's size: one process renewing thousands
// of leases every R could not keep up. The batcher coalesces a store's concurrent writes into
// one transaction, so that the lock (and the flush) is taken once per batch.
//
// driver.Batcher decides what goes alone and what queues (a write sent alone is exactly the
// statement it was before, with no added latency), and what a batch holds. A batch goes as one
// pgx Batch, which pgx sends as one pipeline ended by a single Sync, which PostgreSQL runs as
// one implicit transaction: one round trip, all or nothing, committed at the Sync. An explicit
// BEGIN/COMMIT would say the same in two more statements.
//
// The statements of a batch are ordered by key (stably, so two writes of one key keep their
// order and the second sees the first's effect): two processes' batches lock rows in the same
// order and cannot deadlock each other.
//
// The same rules apply with notify=false: the batch still shares one commit (one WAL flush)
// among its writes, and one code path serves both.

// maxPerKey is how many writes of one key a batch holds; more wait for the next one.
// PostgreSQL delivers only one of a transaction's notifications that have the same channel and
// payload: with writes of states A, B, A in one transaction, a watch would end on B. With at
// most two, a dropped duplicate is the state the watch already has.
const maxPerKey = 2

// maxBatch bounds a batch's statements, so that one transaction stays of a reasonable size.
const maxBatch = 2000

// pgWrite is one write statement.
type pgWrite struct {
	key  string
	stmt string
	args []any
}

// pgAnswer is a write's answer.
type pgAnswer struct {
	rows  int64
	err   error
	alone bool // its batch committed nothing: the caller runs its statement alone
}

// batcher queues a store's writes and sends them in batches.
type batcher struct {
	*driver.Batcher[pgWrite, pgAnswer]
	pool *pgxpool.Pool
}

func newBatcher(pool *pgxpool.Pool) *batcher {
	// Fewer in flight than the pool's connections, so that reads (Get, a conditional write's
	// follow-up read, a watch's marker) always find one. Two lets a batch run its statements
	// while the one before it commits, which one at a time cannot.
	n := int(pool.Config().MaxConns) / 2
	b := &batcher{pool: pool}
	b.Batcher = &driver.Batcher[pgWrite, pgAnswer]{
		MaxInFlight: max(1, min(n, 2)),
		MaxBatch:    maxBatch,
		Key:         func(w pgWrite) string { return w.key },
		MaxPerKey:   maxPerKey,
		SortByKey:   true,
		Lone:        b.lone,
		Send:        b.send,
		Closed:      errStoreClosed,
		Name:        "postgres",
	}
	return b
}

// exec runs a write statement, alone or in a batch, and returns the rows it affected (for
// driver.Inserted and driver.WriteOrExplain) or its error, which the caller explains.
func (b *batcher) exec(ctx context.Context, key, stmt string, args ...any) (int64, error) {
	a, err := b.Do(ctx, pgWrite{key: key, stmt: stmt, args: args})
	if err != nil {
		return 0, err
	}
	if a.alone {
		// Nothing of the batch committed (see sendBatch): running the statement alone is safe,
		// and gives this caller its own answer. It does not go through the queue again: it is
		// rare, and must not wait behind another batch.
		a = b.lone(ctx, pgWrite{key: key, stmt: stmt, args: args})
	}
	return a.rows, a.err
}

func (b *batcher) lone(ctx context.Context, w pgWrite) pgAnswer {
	tag, err := b.pool.Exec(ctx, w.stmt, w.args...)
	return pgAnswer{rows: tag.RowsAffected(), err: err}
}

// send runs a batch. One statement is exactly a lone write, under the batch's context.
func (b *batcher) send(ctx context.Context, ws []pgWrite) []pgAnswer {
	if len(ws) == 1 {
		return []pgAnswer{b.lone(ctx, ws[0])}
	}
	return b.sendBatch(ctx, ws)
}

func (b *batcher) sendBatch(ctx context.Context, ws []pgWrite) []pgAnswer {
	pb := &pgx.Batch{}
	for _, w := range ws {
		pb.Queue(w.stmt, w.args...)
	}
	as := make([]pgAnswer, len(ws))
	br := b.pool.SendBatch(ctx, pb)
	var first error
	for i := range ws {
		tag, err := br.Exec()
		as[i].rows = tag.RowsAffected()
		if err != nil && first == nil {
			first = err
		}
	}
	// Close reads up to the Sync's answer: the transaction committed only when it returns no
	// error, and no caller is answered before.
	if err := br.Close(); err != nil && first == nil {
		first = err
	}
	if first == nil {
		return as
	}
	if rolledBack(first) {
		// The server refused a statement (or the commit): the implicit transaction rolled
		// back, nothing of the batch is done. A statement error is one caller's, and the
		// statements after it did not run: each caller runs its own statement alone, and so
		// gets its own true answer.
		for i := range as {
			as[i] = pgAnswer{alone: true}
		}
		return as
	}
	// The connection failed or the batch's context ended: whether the transaction committed is
	// unknown, to every caller alike, as it is to a lone write's caller (T7).
	for i := range as {
		as[i] = pgAnswer{err: first}
	}
	return as
}

// rolledBack reports whether err is the server's refusal of a statement or of the commit, an
// ERROR: PostgreSQL then aborts the transaction (once a commit is durable, a failure is a
// PANIC, not an ERROR). A FATAL error ends the session, perhaps mid-commit: not known.
func rolledBack(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && (pe.SeverityUnlocalized == "ERROR" || (pe.SeverityUnlocalized == "" && pe.Severity == "ERROR"))
}

// close fails the queued writes and refuses new ones; the batches in flight go on until the
// pool closes under them (backend.Close), then wait ends them.
func (b *batcher) close() { b.Close() }

// wait cancels the batches still in flight and waits for their goroutines: none outlives Close.
func (b *batcher) wait() { b.Wait() }

// Coalesced reads. A lease's first attempt, and every attempt after a failed one, reads its
// record: at 10,000 leases, when attempts fail, reads go one query (and one pooled
// connection) each. Gets queued behind the reads in flight go as one query,
// `WHERE id = ANY($1)`, which reads every row of the batch in one snapshot: each caller gets
// its row, or not found. A batch that fails is run again one read at a time, so that each
// caller gets its own answer (a cancelled batch cannot cancel a caller whose context is live).

// maxReadBatch bounds the keys of a batched read.
const maxReadBatch = 2000

// pgRead is a read's answer: the row's document text, or none (found is false).
type pgRead struct {
	raw   []byte
	found bool
	err   error
	alone bool // the batch failed: the caller reads alone
}

// readBatcher coalesces a store's Gets.
type readBatcher struct {
	*driver.Batcher[string, pgRead]
	pool            *pgxpool.Pool
	getOne, getMany string
}

func newReadBatcher(pool *pgxpool.Pool, getOne, getMany string) *readBatcher {
	// With the writes' two (newBatcher), fewer in flight than the pool's connections, so that
	// a watch's marker and the conditional writes' follow-up reads find one.
	n := int(pool.Config().MaxConns) / 4
	b := &readBatcher{pool: pool, getOne: getOne, getMany: getMany}
	b.Batcher = &driver.Batcher[string, pgRead]{
		MaxInFlight: max(1, min(n, 2)),
		MaxBatch:    maxReadBatch,
		Lone:        b.lone,
		Send:        b.send,
		Closed:      errStoreClosed,
		Name:        "postgres",
	}
	return b
}

// get reads key's document text, alone or in a batch.
func (b *readBatcher) get(ctx context.Context, key string) ([]byte, bool, error) {
	r, err := b.Do(ctx, key)
	if err != nil {
		return nil, false, err
	}
	if r.alone {
		r = b.lone(ctx, key)
	}
	return r.raw, r.found, r.err
}

func (b *readBatcher) lone(ctx context.Context, key string) pgRead {
	var raw []byte
	err := b.pool.QueryRow(ctx, b.getOne, key).Scan(&raw)
	if errors.Is(err, pgx.ErrNoRows) {
		return pgRead{}
	}
	return pgRead{raw: raw, found: err == nil, err: err}
}

func (b *readBatcher) send(ctx context.Context, keys []string) []pgRead {
	if len(keys) == 1 {
		return []pgRead{b.lone(ctx, keys[0])}
	}
	rs := make([]pgRead, len(keys))
	rows, err := b.pool.Query(ctx, b.getMany, keys)
	if err == nil {
		found := make(map[string][]byte, len(keys))
		var (
			id  string
			raw []byte
		)
		_, err = pgx.ForEachRow(rows, []any{&id, &raw}, func() error {
			found[id] = raw
			raw = nil // the next row scans into a new slice
			return nil
		})
		if err == nil {
			for i, k := range keys {
				rs[i].raw, rs[i].found = found[k]
			}
			return rs
		}
	}
	for i := range rs {
		rs[i].alone = true
	}
	return rs
}
