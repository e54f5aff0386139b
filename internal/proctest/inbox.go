package proctest

import "sync"

// Inbox is a queue without bound of the messages a driver receives from its worker
// processes' readers (one goroutine per worker, reading its stdout).
//
// It is unbounded because a worker's reader must never block: a reader blocked on a full
// queue stops reading the worker's stdout, the pipe fills, and the worker then blocks
// writing a line (maybe while leading), which would distort the timings under test. It also
// lets the driver await a worker's exit while lines are still pending. The driver alone
// takes messages, on its own goroutine; any number of readers put them.
type Inbox[T any] struct {
	mu     sync.Mutex
	queue  []T
	notify chan struct{} // holds a token when messages were put since the last take found none
}

// NewInbox returns an empty inbox.
func NewInbox[T any]() *Inbox[T] { return &Inbox[T]{notify: make(chan struct{}, 1)} }

// Put appends m to the queue without blocking, and wakes a taker waiting on Notify.
func (b *Inbox[T]) Put(m T) {
	b.mu.Lock()
	b.queue = append(b.queue, m)
	b.mu.Unlock()
	select {
	case b.notify <- struct{}{}:
	default:
	}
}

// Take removes and returns the oldest message, or reports false at once if there is none.
func (b *Inbox[T]) Take() (T, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.queue) == 0 {
		var zero T
		return zero, false
	}
	m := b.queue[0]
	b.queue = b.queue[1:]
	return m, true
}

// Notify returns the channel that receives a token when messages were put. A taker whose
// Take found nothing waits on it (in a select with its timeout) and then calls Take again:
// a token may be stale, so a wake-up does not promise a message.
func (b *Inbox[T]) Notify() <-chan struct{} { return b.notify }

// TakeWait returns the oldest message, waiting for one without limit: for a caller that
// knows one is coming, such as a killed worker's exit.
func (b *Inbox[T]) TakeWait() T {
	for {
		if m, ok := b.Take(); ok {
			return m
		}
		<-b.notify
	}
}
