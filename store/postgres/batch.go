package postgres

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Group commit of writes. A notifying write takes PostgreSQL's database-wide notification lock
// at commit (PreCommit_Notify) and holds it through the commit's WAL flush, so notifying
// transactions commit one at a time, whatever the pool's size: one process renewing thousands
// of leases every R could not keep up. The batcher coalesces a store's concurrent writes into
// one transaction, so that the lock (and the flush) is taken once per batch.
//
// A write arriving while fewer than maxInFlight writes or batches are in flight, and none is
// queued, is sent at once, alone, under its caller's context: exactly the statement it was
// before, with no added latency. Otherwise it queues; when an in-flight one returns, everything
// queued (see take) is sent as one pgx Batch. pgx sends a Batch as one pipeline ended by a
// single Sync, which PostgreSQL runs as one implicit transaction: one round trip, all or
// nothing, committed at the Sync. An explicit BEGIN/COMMIT would say the same in two more
// statements.
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

// writeCall is one queued write.
type writeCall struct {
	ctx  context.Context
	key  string
	stmt string
	args []any

	// Guarded by batcher.mu.
	state callState
	sent  *sentBatch // its batch, once sent

	// Set before done is closed.
	rows  int64
	err   error
	alone bool // the batch committed nothing: the caller runs its statement alone
	done  chan struct{}
}

type callState int

const (
	queued callState = iota
	inBatch
	left // the caller's context ended; nobody reads its answer
)

// sentBatch is a batch in flight.
type sentBatch struct {
	cancel  context.CancelFunc
	waiting int // its callers still waiting for the answer, guarded by batcher.mu
}

// batcher queues a store's writes and sends them in batches.
type batcher struct {
	pool        *pgxpool.Pool
	maxInFlight int

	// ctx ends when the store closes: a batch runs under it, not under any one caller's
	// context, which would cut the others' writes short.
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup // the goroutines sending batches

	mu       sync.Mutex
	closed   bool
	inFlight int // lone writes and batches
	queue    []*writeCall

	// hook, when set (tests), is told of each lone write ("alone", 1), queued write
	// ("queued", 1) and batch ("batch", its size). It is called with mu held: it must not
	// block or call the store.
	hook func(event string, n int)
}

func newBatcher(pool *pgxpool.Pool) *batcher {
	// Fewer in flight than the pool's connections, so that reads (Get, a conditional write's
	// follow-up read, a watch's marker) always find one. Two lets a batch run its statements
	// while the one before it commits, which one at a time cannot.
	n := int(pool.Config().MaxConns) / 2
	n = max(1, min(n, 2))
	ctx, cancel := context.WithCancel(context.Background())
	return &batcher{pool: pool, maxInFlight: n, ctx: ctx, cancel: cancel}
}

func (b *batcher) event(name string, n int) {
	if b.hook != nil {
		b.hook(name, n)
	}
}

// exec runs a write statement, alone or in a batch, and returns the rows it affected (for
// driver.Inserted and driver.WriteOrExplain) or its error, which the caller explains.
func (b *batcher) exec(ctx context.Context, key, stmt string, args ...any) (int64, error) {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return 0, errStoreClosed
	}
	if b.inFlight < b.maxInFlight && len(b.queue) == 0 {
		b.inFlight++
		b.event("alone", 1)
		b.mu.Unlock()
		tag, err := b.pool.Exec(ctx, stmt, args...)
		b.mu.Lock()
		b.inFlight--
		b.startLocked()
		b.mu.Unlock()
		return tag.RowsAffected(), err
	}
	c := &writeCall{ctx: ctx, key: key, stmt: stmt, args: args, done: make(chan struct{})}
	b.queue = append(b.queue, c)
	b.event("queued", 1)
	b.mu.Unlock()

	select {
	case <-c.done:
	case <-ctx.Done():
		b.mu.Lock()
		switch c.state {
		case queued:
			// Never sent: the caller leaves with its context's error, as a lone write whose
			// context ended before it started would.
			b.queue = slices.DeleteFunc(b.queue, func(q *writeCall) bool { return q == c })
			c.state = left
			b.mu.Unlock()
			return 0, ctx.Err()
		case inBatch:
			select {
			case <-c.done:
				// The answer came as the context ended: it is true, give it.
				b.mu.Unlock()
				return b.answer(ctx, c)
			default:
			}
			c.state = left
			c.sent.waiting--
			if c.sent.waiting == 0 {
				// Nobody waits for the batch any more: cut it short, as a lone write is
				// when its caller's context ends.
				c.sent.cancel()
			}
			b.mu.Unlock()
			// Sent, not answered: the outcome is unknown (T7), as a lone write's is when its
			// context ends under it.
			return 0, fmt.Errorf("postgres: write sent in a batch, no answer: %w", ctx.Err())
		}
		b.mu.Unlock()
		<-c.done // closed (the store's Close failed it); c.err says why
	}
	return b.answer(ctx, c)
}

// answer is a queued write's answer once its batch returned.
func (b *batcher) answer(ctx context.Context, c *writeCall) (int64, error) {
	if c.alone {
		// Nothing of the batch committed (see send): running the statement alone is safe, and
		// gives this caller its own answer. It does not go through the queue again: it is
		// rare, and must not wait behind another batch.
		tag, err := b.pool.Exec(ctx, c.stmt, c.args...)
		return tag.RowsAffected(), err
	}
	return c.rows, c.err
}

// startLocked sends what is queued, while fewer than maxInFlight are in flight.
func (b *batcher) startLocked() {
	for !b.closed && len(b.queue) > 0 && b.inFlight < b.maxInFlight {
		calls := b.take()
		bctx, cancel := batchContext(b.ctx, calls)
		sb := &sentBatch{cancel: cancel, waiting: len(calls)}
		for _, c := range calls {
			c.state = inBatch
			c.sent = sb
		}
		b.inFlight++
		b.event("batch", len(calls))
		b.wg.Add(1)
		go b.send(bctx, cancel, calls)
	}
}

// take removes a batch from the queue: in the order of arrival, at most maxBatch writes and
// maxPerKey of a key; the others keep their place. It returns them ordered by key, stably.
func (b *batcher) take() []*writeCall {
	perKey := map[string]int{}
	var calls []*writeCall
	rest := b.queue[:0]
	for _, c := range b.queue {
		if len(calls) < maxBatch && perKey[c.key] < maxPerKey {
			perKey[c.key]++
			calls = append(calls, c)
		} else {
			rest = append(rest, c)
		}
	}
	clear(b.queue[len(rest):])
	b.queue = rest
	slices.SortStableFunc(calls, func(x, y *writeCall) int { return strings.Compare(x.key, y.key) })
	return calls
}

// batchContext is the context a batch runs under: it ends when the store closes, and at the
// latest of its callers' deadlines (when every caller has one), after which nobody waits for
// the answer; a batch whose callers all left is cancelled (exec). It never ends with one
// caller's context: the others' writes would be cut short with it.
func batchContext(parent context.Context, calls []*writeCall) (context.Context, context.CancelFunc) {
	var latest time.Time
	for _, c := range calls {
		d, ok := c.ctx.Deadline()
		if !ok {
			return context.WithCancel(parent)
		}
		if d.After(latest) {
			latest = d
		}
	}
	return context.WithDeadline(parent, latest)
}

// send runs a batch and gives each caller its answer.
func (b *batcher) send(ctx context.Context, cancel context.CancelFunc, calls []*writeCall) {
	defer b.wg.Done()
	defer cancel()
	if len(calls) == 1 {
		// One statement: exactly a lone write, under the batch's context.
		tag, err := b.pool.Exec(ctx, calls[0].stmt, calls[0].args...)
		calls[0].rows, calls[0].err = tag.RowsAffected(), err
	} else {
		b.sendBatch(ctx, calls)
	}
	b.mu.Lock()
	for _, c := range calls {
		close(c.done)
	}
	b.inFlight--
	b.startLocked()
	b.mu.Unlock()
}

func (b *batcher) sendBatch(ctx context.Context, calls []*writeCall) {
	pb := &pgx.Batch{}
	for _, c := range calls {
		pb.Queue(c.stmt, c.args...)
	}
	br := b.pool.SendBatch(ctx, pb)
	var first error
	for _, c := range calls {
		tag, err := br.Exec()
		c.rows = tag.RowsAffected()
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
		return
	}
	if rolledBack(first) {
		// The server refused a statement (or the commit): the implicit transaction rolled
		// back, nothing of the batch is done. A statement error is one caller's, and the
		// statements after it did not run: each caller runs its own statement alone, and so
		// gets its own true answer.
		for _, c := range calls {
			c.alone = true
		}
		return
	}
	// The connection failed or the batch's context ended: whether the transaction committed is
	// unknown, to every caller alike, as it is to a lone write's caller (T7).
	for _, c := range calls {
		c.rows, c.err = 0, first
	}
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
func (b *batcher) close() {
	b.mu.Lock()
	b.closed = true
	for _, c := range b.queue {
		c.err = errStoreClosed
		c.state = left
		close(c.done)
	}
	b.queue = nil
	b.mu.Unlock()
}

// wait cancels the batches still in flight and waits for their goroutines: none outlives Close.
func (b *batcher) wait() {
	b.cancel()
	b.wg.Wait()
}
