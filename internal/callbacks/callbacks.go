// Package callbacks runs the callbacks registered on a leadership (the WhenLeader
// registrations of an Elector, the WhenOwner registrations of each partition of a partitioned
// election) with the guarantees W1–W7 of cluster.Cluster.WhenLeader: calls of one registration
// in order and never overlapping, registrations never waiting for each other, remove waiting
// for the calls under way.
package callbacks

import (
	"context"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync"
	"time"
)

// Runner runs the WhenLeader registrations of one Cluster. Each registration has a queue
// of events drained by a goroutine of its own, started when the queue gets an event and ended
// when it is empty, so calls of one registration run in order and never overlap (W4), while
// registrations never wait for each other. No goroutine is left once every queue is drained.
type Runner struct {
	log *slog.Logger
	// leading is the Cluster's IsLeader. The leadership context alone is not enough to start
	// fn on: it is cancelled only once the election goroutine has noticed the end, while
	// IsLeader turns false the instant the deadline passes (W7).
	leading func() bool

	// AfterTake, when set by a test, runs on a registration's goroutine between taking a call
	// from its queue and making it: the window where a concurrent remove must still be seen.
	AfterTake func()

	mu     sync.Mutex
	regs   map[*registration]struct{}
	lead   context.Context // current leadership, nil when not leading
	active int             // registrations whose goroutine runs
	idle   chan struct{}   // closed when active drops to 0; nil while active == 0
}

type registration struct {
	c            *Runner
	fn           func(context.Context) error
	deregistered func()

	// Guarded by c.mu.
	queue    []context.Context // a leadership context to run fn for, or nil to run deregistered
	running  bool
	removed  bool
	drained  chan struct{}      // closed when the goroutine exits
	cancelFn context.CancelFunc // cancels the context of the fn that ran last

	// Owned by the registration's goroutine.
	fnRan bool
}

// New returns a Runner that logs to log; leading reports whether the leadership is still
// held (IsLeader), checked before each fn starts (W7).
func New(log *slog.Logger, leading func() bool) *Runner {
	return &Runner{log: log, leading: leading, regs: map[*registration]struct{}{}}
}

// Add registers fn and deregistered; while leading, fn is queued at once (W2).
func (c *Runner) Add(fn func(context.Context) error, deregistered func()) (remove func()) {
	r := &registration{c: c, fn: fn, deregistered: deregistered}
	c.mu.Lock()
	c.regs[r] = struct{}{}
	if c.lead != nil {
		c.enqueueLocked(r, c.lead)
	}
	c.mu.Unlock()
	return r.remove
}

// StartLeading queues fn of every registration with ctx, the new leadership's context.
func (c *Runner) StartLeading(ctx context.Context) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.lead = ctx
	for r := range c.regs {
		c.enqueueLocked(r, ctx)
	}
}

// StopLeading queues deregistered of every registration. The caller cancels the leadership's
// context first, so running fns see it end before their deregistered is called.
func (c *Runner) StopLeading() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.lead == nil {
		return
	}
	c.lead = nil
	for r := range c.regs {
		c.enqueueLocked(r, nil)
	}
}

// Wait returns when no registration has calls pending or running, or with ctx's error.
func (c *Runner) Wait(ctx context.Context) error {
	c.mu.Lock()
	idle := c.idle
	c.mu.Unlock()
	if idle == nil {
		return nil
	}
	select {
	case <-idle:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (c *Runner) enqueueLocked(r *registration, ev context.Context) {
	if r.removed {
		return
	}
	r.queue = append(r.queue, ev)
	if r.running {
		return
	}
	r.running = true
	r.drained = make(chan struct{})
	if c.active == 0 {
		c.idle = make(chan struct{})
	}
	c.active++
	go r.drain()
}

func (r *registration) drain() {
	c := r.c
	for {
		c.mu.Lock()
		if len(r.queue) == 0 {
			r.running = false
			close(r.drained)
			c.active--
			if c.active == 0 {
				close(c.idle)
				c.idle = nil
			}
			c.mu.Unlock()
			return
		}
		ev := r.queue[0]
		r.queue = r.queue[1:]
		c.mu.Unlock()
		if c.AfterTake != nil {
			c.AfterTake()
		}
		if ev != nil {
			r.runFn(ev)
		} else {
			r.runDeregistered()
		}
	}
}

func (r *registration) runFn(lead context.Context) {
	if lead.Err() != nil {
		// That leadership ended before its turn came: fn would only see a cancelled context,
		// and skipping it spares the deregistered call that would follow.
		return
	}
	if r.fnRan {
		// A second leadership with no deregistered in between cannot happen (StopLeading
		// always queues one), but keep the pairing if it ever does.
		r.runDeregistered()
	}
	ctx, cancel := context.WithCancel(lead)
	r.c.mu.Lock()
	if r.removed || !r.c.leading() {
		// remove came after this call was taken from the queue: it did not see this context
		// to cancel it, and waits for this goroutine, so fn must not start. Nor may it once
		// IsLeader says false, though the election goroutine has not ended the leadership yet:
		// it will, and the deregistered it then queues finds no fn to pair with.
		r.c.mu.Unlock()
		cancel()
		return
	}
	r.cancelFn = cancel
	r.c.mu.Unlock()
	r.fnRan = true // W5: fn counts as having run even if it fails
	func() {
		defer func() {
			if p := recover(); p != nil {
				r.c.log.Error("leasehold: leader callback panicked", "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
			}
		}()
		if err := r.fn(ctx); err != nil {
			r.c.log.Error("leasehold: leader callback failed", "error", err)
		}
	}()
}

func (r *registration) runDeregistered() {
	r.c.mu.Lock()
	cancel := r.cancelFn
	r.cancelFn = nil
	r.c.mu.Unlock()
	if cancel != nil {
		cancel()
	}
	if !r.fnRan {
		return
	}
	r.fnRan = false
	if r.deregistered == nil {
		return
	}
	defer func() {
		if p := recover(); p != nil {
			r.c.log.Error("leasehold: deregistered callback panicked", "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
		}
	}()
	r.deregistered()
}

// remove ends the registration (W6): its fn's context is cancelled, deregistered runs if fn
// ran since the last deregistered, and remove returns once that is done, however many times
// it is called, so that once it has returned no callback of the registration runs or will.
// Like Stop, it waits for the registration's callbacks, so one of them must not call it: it
// would wait for itself. A callback calls it on a new goroutine (go remove()), which returns
// once the callback has. A remove that waits long is logged, as that is how such a call
// shows.
func (r *registration) remove() {
	c := r.c
	c.mu.Lock()
	if !r.removed {
		// Drop pending fn calls: the registration is ending, so only the closing deregistered
		// matters, and it runs after any fn already started has returned.
		r.queue = r.queue[:0]
		c.enqueueLocked(r, nil)
		r.removed = true
		delete(c.regs, r)
	}
	drained, cancel := r.drained, r.cancelFn
	c.mu.Unlock()
	if cancel != nil {
		cancel()
	}
	select {
	case <-drained:
		return
	default:
	}
	warn := time.AfterFunc(removeWarnAfter, func() {
		c.log.Warn("leasehold: remove still waits for the callbacks of its registration: called from one of them, it waits for itself; call it on a new goroutine there (go remove())",
			"waited", removeWarnAfter)
	})
	defer warn.Stop()
	<-drained
}

// removeWarnAfter is how long a remove waits before it is logged.
const removeWarnAfter = time.Minute

// Idle reports whether no registration has calls pending or running.
func (c *Runner) Idle() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.active == 0
}
