// Package filewatch tells when files of one directory change, for the stores kept in local
// files (the file store, SQLite). On Linux it reads inotify events on the directory; elsewhere
// Subscribe returns ErrUnsupported and the stores poll.
//
// A Hub shares one inotify instance among all its subscriptions: the instance and its goroutine
// exist only while there is a subscription, so that nothing outlives the last one, or Close.
package filewatch

import (
	"context"
	"errors"
	"sync"
	"time"
)

// ErrUnsupported is returned by Subscribe on systems without inotify.
var ErrUnsupported = errors.New("filewatch: not supported on this system")

// ErrClosed is the error of the subscriptions of a hub closed without an error of its own.
var ErrClosed = errors.New("filewatch: closed")

// Options tunes a Hub.
type Options struct {
	// Modify makes writes to the named files in place (IN_MODIFY) count as changes, besides
	// their creation, removal, renames and the close of a file opened for writing.
	Modify bool
	// Settle, when set, runs after each batch of events and before the subscriptions are woken
	// (SQLite uses it to wait for the writer whose write woke it to finish its commit). Its
	// context ends when the hub's instance stops.
	Settle func(ctx context.Context)
}

// Hub watches the files of dir that have one of the names, for any number of subscriptions.
type Hub struct {
	dir   string
	names map[string]bool
	opts  Options

	mu     sync.Mutex
	closed error
	subs   map[*Sub]struct{}
	run    *instance // nil while there is no subscription
}

// NewHub returns a hub for the files of dir with the given names (base names, not paths). It
// starts nothing: the first Subscribe does.
func NewHub(dir string, names []string, opts Options) *Hub {
	h := &Hub{dir: dir, names: map[string]bool{}, opts: opts, subs: map[*Sub]struct{}{}}
	for _, n := range names {
		h.names[n] = true
	}
	return h
}

// Sub is one subscription: C receives a value after changes to the files (one value stands for
// every change since the last receive), and Done is closed when the subscription ends by
// another cause than its Close (the hub closed, the directory removed, a read error), with Err
// telling which.
type Sub struct {
	h    *Hub
	c    chan struct{}
	done chan struct{}
	err  error // set before done is closed
}

// C returns the channel that receives a value after changes.
func (s *Sub) C() <-chan struct{} { return s.c }

// Done returns the channel closed when the subscription fails.
func (s *Sub) Done() <-chan struct{} { return s.done }

// Err returns why the subscription ended, once Done is closed.
func (s *Sub) Err() error {
	<-s.done
	return s.err
}

// Subscribe starts a subscription. Once it returns, every later change to the files wakes C.
func (h *Hub) Subscribe() (*Sub, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed != nil {
		return nil, h.closed
	}
	if h.run == nil {
		r, err := h.start()
		if err != nil {
			return nil, err
		}
		h.run = r
	}
	s := &Sub{h: h, c: make(chan struct{}, 1), done: make(chan struct{})}
	h.subs[s] = struct{}{}
	return s, nil
}

// Close ends the subscription. When it was the hub's last, the inotify instance stops, and
// Close returns after its goroutine has.
func (s *Sub) Close() {
	h := s.h
	h.mu.Lock()
	if _, ok := h.subs[s]; !ok {
		h.mu.Unlock()
		return
	}
	delete(h.subs, s)
	var r *instance
	if len(h.subs) == 0 {
		r, h.run = h.run, nil
	}
	h.mu.Unlock()
	if r != nil {
		r.stop()
	}
}

// Close ends every subscription with err (ErrClosed when nil), refuses new ones, and returns
// after the instance's goroutine has.
func (h *Hub) Close(err error) {
	if err == nil {
		err = ErrClosed
	}
	h.mu.Lock()
	if h.closed == nil {
		h.closed = err
	}
	r := h.endAll(err)
	h.mu.Unlock()
	if r != nil {
		r.stop()
	}
}

// endAll ends every subscription with err and detaches the instance, which the caller stops
// (unless it is that instance's own goroutine, which just returns). The caller holds h.mu.
func (h *Hub) endAll(err error) *instance {
	for s := range h.subs {
		s.err = err
		close(s.done)
		delete(h.subs, s)
	}
	r := h.run
	h.run = nil
	return r
}

// wake wakes every subscription; r is the instance whose goroutine calls it, so that an
// instance being replaced does not wake the next one's subscriptions needlessly.
func (h *Hub) wake(r *instance) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.run != r {
		return
	}
	for s := range h.subs {
		select {
		case s.c <- struct{}{}:
		default: // already woken
		}
	}
}

// fail ends every subscription of instance r with err.
func (h *Hub) fail(r *instance, err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.run != r {
		return
	}
	h.endAll(err)
}

// settle runs the Settle option, if any.
func (h *Hub) settle(ctx context.Context) {
	if h.opts.Settle != nil && ctx.Err() == nil {
		h.opts.Settle(ctx)
	}
}

// Each subscribes to h, calls fn once the subscription is in place, then again after each
// change, until fn fails, ctx ends (ctx's error) or the subscription does (its error). With
// every > 0 it also calls beat every that long: a heartbeat. An inotify watch cannot go
// half-open, as a network connection can: the kernel queues the events and the hub's goroutine
// reads them in order, or the subscription ends with an error. So a ticker is an honest
// heartbeat here; a change already signalled is delivered (fn) before the heartbeat that
// follows it. It returns once the subscription is closed.
func (h *Hub) Each(ctx context.Context, every time.Duration, fn, beat func() error) error {
	sub, err := h.Subscribe()
	if err != nil {
		return err
	}
	defer sub.Close()
	var tick <-chan time.Time
	if every > 0 && beat != nil {
		t := time.NewTicker(every)
		defer t.Stop()
		tick = t.C
	}
	for changed := true; ; {
		if changed {
			if err := fn(); err != nil {
				return err
			}
		}
		select {
		case <-sub.C():
			changed = true
		case <-sub.Done():
			return sub.Err()
		case <-ctx.Done():
			return ctx.Err()
		case <-tick:
			changed = false
			select {
			case <-sub.C(): // a change came first: deliver it, then the heartbeat
				if err := fn(); err != nil {
					return err
				}
			default:
			}
			if err := beat(); err != nil {
				return err
			}
		}
	}
}
