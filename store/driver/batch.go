package driver

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync"
	"time"
)

// Batcher coalesces a store's concurrent writes into batches, for a backend whose cost is per
// request (a round trip, a commit, a lock) more than per write: PostgreSQL's group commit,
// Redis's pipelines. W is a write, R its answer.
//
// A write arriving while fewer than MaxInFlight writes or batches are in flight, and none is
// queued, is sent at once by Lone, under its caller's context: no added latency when the store
// keeps up. Otherwise it queues, and when an in-flight one returns, what is queued goes to
// Send as one batch. The queue keeps the order of arrival, and a batch keeps it too unless
// SortByKey (stably: two writes of one key keep their order either way).
//
// A batch runs under a context of its own (see batchContext), never under one caller's: a
// caller whose context ends leaves, and the others' writes go on. A queued caller that leaves
// was never sent and gets its context's error; a sent one gets an error saying the outcome is
// unknown, wrapping its context's error (T7). A batch whose callers all left is cancelled.
//
// The fields are set before the first Do and not changed after.
type Batcher[W, R any] struct {
	// MaxInFlight bounds the lone writes and batches in flight (at least 1).
	MaxInFlight int
	// MaxBatch bounds a batch's writes (0: no bound).
	MaxBatch int
	// Key names a write's key, for MaxPerKey and SortByKey.
	Key func(W) string
	// MaxPerKey bounds the writes of one key in a batch (0: no bound); more wait for the next.
	MaxPerKey int
	// SortByKey orders a batch's writes by key (stably), for backends that lock what they
	// write: two batches then lock in the same order and cannot deadlock each other.
	SortByKey bool

	// Lone sends a write alone, under its caller's context.
	Lone func(ctx context.Context, w W) R
	// Send sends a batch and returns one answer per write, in the batch's order. A batch of
	// one is sent here too, under the batch's context.
	Send func(ctx context.Context, ws []W) []R

	// Closed is the error of a write made or still queued after Close.
	Closed error
	// Name starts the batcher's own error messages ("store/redis").
	Name string

	// Hook, when set (tests), is told of each lone write ("alone", 1), queued write
	// ("queued", 1) and batch ("batch", its size). It is called with the batcher's lock held:
	// it must not block or call the store.
	Hook func(event string, n int)

	once sync.Once
	// ctx ends when Wait is called: every batch runs under it.
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup // the goroutines sending batches

	mu       sync.Mutex
	closed   bool
	inFlight int
	queue    []*batchCall[W, R]
}

type batchCall[W, R any] struct {
	ctx context.Context
	w   W

	// Guarded by Batcher.mu.
	state batchState
	sent  *sentBatch

	// Set before done is closed.
	r    R
	err  error
	done chan struct{}
}

type batchState int

const (
	batchQueued batchState = iota
	batchSent
	batchLeft // the caller left; nobody reads its answer
)

// sentBatch is a batch in flight.
type sentBatch struct {
	cancel  context.CancelFunc
	waiting int // its callers still waiting for the answer, guarded by Batcher.mu
}

func (b *Batcher[W, R]) init() {
	b.once.Do(func() { b.ctx, b.cancel = context.WithCancel(context.Background()) })
}

func (b *Batcher[W, R]) event(name string, n int) {
	if b.Hook != nil {
		b.Hook(name, n)
	}
}

// Do sends w, alone or in a batch, and returns its answer. Its error is the batcher's own
// (the store closed, the caller's context ended), in which case R is the zero value and w's
// answer is unknown if the error says so, or w was not sent.
func (b *Batcher[W, R]) Do(ctx context.Context, w W) (R, error) {
	b.init()
	var zero R
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return zero, b.Closed
	}
	if b.inFlight < max(1, b.MaxInFlight) && len(b.queue) == 0 {
		b.inFlight++
		b.event("alone", 1)
		b.mu.Unlock()
		r := b.Lone(ctx, w)
		b.mu.Lock()
		b.inFlight--
		b.startLocked()
		b.mu.Unlock()
		return r, nil
	}
	c := &batchCall[W, R]{ctx: ctx, w: w, done: make(chan struct{})}
	b.queue = append(b.queue, c)
	b.event("queued", 1)
	b.mu.Unlock()

	select {
	case <-c.done:
		return c.r, c.err
	case <-ctx.Done():
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	switch c.state {
	case batchQueued:
		// Never sent: the caller leaves with its context's error, as a lone write whose
		// context ended before it started would.
		b.queue = slices.DeleteFunc(b.queue, func(q *batchCall[W, R]) bool { return q == c })
		c.state = batchLeft
		return zero, ctx.Err()
	case batchSent:
		select {
		case <-c.done:
			// The answer came as the context ended: it is true, give it.
			return c.r, c.err
		default:
		}
		c.state = batchLeft
		c.sent.waiting--
		if c.sent.waiting == 0 {
			// Nobody waits for the batch any more: cut it short, as a lone write is when its
			// caller's context ends.
			c.sent.cancel()
		}
		return zero, fmt.Errorf("%s: write sent in a batch, no answer: %w", b.Name, ctx.Err())
	}
	// Close failed it (batchLeft, done closed).
	<-c.done
	return c.r, c.err
}

// startLocked sends what is queued, while fewer than MaxInFlight are in flight.
func (b *Batcher[W, R]) startLocked() {
	for !b.closed && len(b.queue) > 0 && b.inFlight < max(1, b.MaxInFlight) {
		calls := b.take()
		bctx, cancel := batchContext(b.ctx, calls)
		sb := &sentBatch{cancel: cancel, waiting: len(calls)}
		for _, c := range calls {
			c.state = batchSent
			c.sent = sb
		}
		b.inFlight++
		b.event("batch", len(calls))
		b.wg.Add(1)
		go b.send(bctx, cancel, calls)
	}
}

// take removes a batch from the queue: in the order of arrival, at most MaxBatch writes and
// MaxPerKey of a key; the others keep their place.
func (b *Batcher[W, R]) take() []*batchCall[W, R] {
	var perKey map[string]int
	if b.MaxPerKey > 0 {
		perKey = map[string]int{}
	}
	var calls []*batchCall[W, R]
	rest := b.queue[:0]
	for _, c := range b.queue {
		if b.MaxBatch > 0 && len(calls) >= b.MaxBatch {
			rest = append(rest, c)
			continue
		}
		if perKey != nil {
			k := b.Key(c.w)
			if perKey[k] >= b.MaxPerKey {
				rest = append(rest, c)
				continue
			}
			perKey[k]++
		}
		calls = append(calls, c)
	}
	clear(b.queue[len(rest):])
	b.queue = rest
	if b.SortByKey {
		slices.SortStableFunc(calls, func(x, y *batchCall[W, R]) int { return cmp.Compare(b.Key(x.w), b.Key(y.w)) })
	}
	return calls
}

// batchContext is the context a batch runs under: it ends at Wait, and at the latest of its
// callers' deadlines (when every caller has one), after which nobody waits for the answer; a
// batch whose callers all left is cancelled (Do). It never ends with one caller's context: the
// others' writes would be cut short with it.
func batchContext[W, R any](parent context.Context, calls []*batchCall[W, R]) (context.Context, context.CancelFunc) {
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
func (b *Batcher[W, R]) send(ctx context.Context, cancel context.CancelFunc, calls []*batchCall[W, R]) {
	defer b.wg.Done()
	defer cancel()
	ws := make([]W, len(calls))
	for i, c := range calls {
		ws[i] = c.w
	}
	rs := b.Send(ctx, ws)
	b.mu.Lock()
	for i, c := range calls {
		if i < len(rs) {
			c.r = rs[i]
		} else {
			c.err = fmt.Errorf("%s: no answer for a write of a batch", b.Name)
		}
		close(c.done)
	}
	b.inFlight--
	b.startLocked()
	b.mu.Unlock()
}

// Close fails the queued writes with Closed and refuses new ones. The batches in flight go on
// until the backend's connections close under them or Wait.
func (b *Batcher[W, R]) Close() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.closed = true
	for _, c := range b.queue {
		c.err = b.Closed
		c.state = batchLeft
		close(c.done)
	}
	b.queue = nil
}

// Wait cancels the batches still in flight and waits for their goroutines: none outlives the
// store's Close.
func (b *Batcher[W, R]) Wait() {
	b.init()
	b.cancel()
	b.wg.Wait()
}
