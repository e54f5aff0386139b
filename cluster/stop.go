package cluster

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
)

// lifecycle is an Elector's start and its one stop (E7), and the count of the election's
// goroutines that Done waits for. The stop's work (the callbacks, then the release) is done by
// the election goroutine itself, in order with the attempts it ends: a Stop only hands it a
// context, then waits for its result.
type lifecycle struct {
	name  string               // the lease, for the errors
	state atomic.Uint32        // begun and stopping, each set once
	req   chan context.Context // the first Stop's context, to the election goroutine
	halt  chan struct{}        // tests: ends the election goroutine as a crash would
	ran   chan struct{}        // closed when the election goroutine has returned
	live  atomic.Int32         // goroutines of the election running
	done  chan struct{}        // closed when live falls to zero
	over  chan struct{}        // closed once the first stop has finished: err is its result
	err   error                // the first stop's result, but for the watch's lateness
}

// The bits of lifecycle.state.
const (
	begun    = 1 << iota // Start ran: the election goroutine runs, or ran
	stopping             // a stop has begun: Start is refused, and a later Stop waits for it
)

func newLifecycle(name string) *lifecycle {
	return &lifecycle{
		name: name,
		req:  make(chan context.Context),
		halt: make(chan struct{}),
		ran:  make(chan struct{}),
		done: make(chan struct{}),
		over: make(chan struct{}),
	}
}

// begin starts run as the election goroutine, unless Start ran already or a stop has begun.
func (l *lifecycle) begin(run func()) error {
	for {
		s := l.state.Load()
		switch {
		case s&stopping != 0:
			return fmt.Errorf("cluster: lease %q: Start after Stop", l.name)
		case s&begun != 0:
			return fmt.Errorf("cluster: lease %q: Start called twice", l.name)
		}
		if l.state.CompareAndSwap(s, s|begun) {
			break
		}
	}
	l.live.Store(1)
	go func() {
		defer close(l.ran)
		defer l.exit() // before ran: a Stop that sees ran sees done too, unless the watch is late
		run()
	}()
	return nil
}

// spawn runs f on a goroutine of the election, which Done waits for: the watch's, the health
// check's. Only the election goroutine spawns, so live is above zero then.
func (l *lifecycle) spawn(f func()) {
	l.live.Add(1)
	go func() {
		defer l.exit()
		f()
	}()
}

// exit is the last call of each goroutine of the election: the last to return closes done.
func (l *lifecycle) exit() {
	if l.live.Add(-1) == 0 {
		close(l.done)
	}
}

// claim makes the caller the one that stops the election, unless a stop has begun, and
// reports whether Start had run: then the election goroutine does the stop's work, and a
// Start that comes later is refused.
func (l *lifecycle) claim() (claimed, started bool) {
	for {
		s := l.state.Load()
		if s&stopping != 0 {
			return false, false
		}
		if l.state.CompareAndSwap(s, s|stopping) {
			return true, s&begun != 0
		}
	}
}

// stop is Elector.Stop (see there).
func (l *lifecycle) stop(ctx context.Context) error {
	claimed, started := l.claim()
	if !claimed {
		return l.await(ctx)
	}
	if started {
		l.req <- ctx // the election goroutine leaves its loop only through a stop
		<-l.ran      // it returns right after answering
	} else {
		close(l.done)
	}
	err := l.err
	if !l.wait(ctx) {
		// The election is over and the lease released, when it could be; only the watch's
		// goroutine is still inside the Lock's Watch. It ends when that call returns.
		err = l.watchError(l.err, ctx)
	}
	close(l.over)
	return err
}

// answer gives the Stop that sent its context on req the result of the shutdown: that Stop
// reads it once the election goroutine has returned.
func (l *lifecycle) answer(err error) { l.err = err }

// finish ends a stop that nobody waits for, the end of Start's context: a later Stop returns
// err, having waited for the watch within its own context.
func (l *lifecycle) finish(err error) {
	l.err = err
	close(l.over)
}

// await waits, within ctx, for the stop under way and returns its result (see Stop).
func (l *lifecycle) await(ctx context.Context) error {
	select {
	case <-l.over:
	case <-ctx.Done():
		return fmt.Errorf("cluster: lease %q: stop: the Stop under way has not finished: %w", l.name, ctx.Err())
	}
	if l.wait(ctx) {
		return l.err
	}
	return l.watchError(l.err, ctx)
}

// wait waits, within ctx, for every goroutine of the election to return, and reports whether
// they have. Those that have returned already count even when ctx has ended: the watch, ended
// as the shutdown began, has most often returned by then.
func (l *lifecycle) wait(ctx context.Context) bool {
	select {
	case <-l.done:
		return true
	default:
	}
	select {
	case <-l.done:
		return true
	case <-ctx.Done():
		return false
	}
}

// watchError adds to err that the watch's goroutine had not returned when ctx ended.
func (l *lifecycle) watchError(err error, ctx context.Context) error {
	return errors.Join(err, fmt.Errorf("cluster: lease %q: stop: the lease watch has not returned (the Lock's Watch must return soon after its context ends; Done is closed once it has): %w", l.name, ctx.Err()))
}
