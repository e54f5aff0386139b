package campaign

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/leasehold/leasehold/cluster"
)

// WatchMode is what a worker's faulty watch does to the notifications of its Lock's watch
// (cluster.Watcher) before they reach the Elector. A watch is a hint (T8): the election must
// stay safe whatever the mode, and a takeover owed by a crash must still come.
type WatchMode string

// The watch modes. WatchPass is the watch as the Lock gives it.
const (
	WatchPass    WatchMode = "pass"
	WatchDrop    WatchMode = "drop"    // notifications are lost
	WatchDelay   WatchMode = "delay"   // each notification arrives its delay late, in order
	WatchDup     WatchMode = "dup"     // each notification arrives twice
	WatchReorder WatchMode = "reorder" // notifications arrive by pairs, the newer first
	// WatchCut: the stream goes silent without an error. Watch delivers nothing and keeps
	// blocking, even past the Lock's own watch ending, until ctx ends or the cut is lifted;
	// a Watch that lived through a cut then returns ErrWatchCut, as a dead connection is
	// eventually noticed.
	WatchCut WatchMode = "cut"
)

// WatchFault is a mode and, for WatchDelay, the delay.
type WatchFault struct {
	Mode  WatchMode
	Delay time.Duration
}

func (f WatchFault) String() string {
	if f.Mode == WatchDelay {
		return fmt.Sprintf("%s %v", f.Mode, f.Delay)
	}
	return string(f.Mode)
}

// ParseWatchFault reads what WatchFault.String writes; "" is WatchPass.
func ParseWatchFault(s string) (WatchFault, error) {
	fields := strings.Fields(s)
	if len(fields) == 0 {
		return WatchFault{Mode: WatchPass}, nil
	}
	f := WatchFault{Mode: WatchMode(fields[0])}
	switch f.Mode {
	case WatchPass, WatchDrop, WatchDup, WatchReorder, WatchCut:
		if len(fields) == 1 {
			return f, nil
		}
	case WatchDelay:
		if len(fields) == 2 {
			d, err := time.ParseDuration(fields[1])
			if err == nil && d > 0 {
				f.Delay = d
				return f, nil
			}
		}
	}
	return WatchFault{}, fmt.Errorf("campaign: watch fault %q: want pass, drop, dup, reorder, cut or delay DURATION", s)
}

// ErrWatchCut ends a Watch that lived through a WatchCut, once the cut is lifted.
var ErrWatchCut = errors.New("campaign: the watch stream was cut")

// FaultyWatcher wraps a cluster.Watcher and applies the WatchFault last set to the
// notifications of every Watch call, those under way included. Safe for concurrent use.
type FaultyWatcher struct {
	inner cluster.Watcher

	mu      sync.Mutex
	fault   WatchFault
	cut     bool                   // a WatchCut is in force
	changed chan struct{}          // closed and replaced at each Set
	calls   map[*delivery]struct{} // the Watch calls under way
}

// NewFaultyWatcher returns a FaultyWatcher over inner, passing everything through.
func NewFaultyWatcher(inner cluster.Watcher) *FaultyWatcher {
	return &FaultyWatcher{inner: inner, fault: WatchFault{Mode: WatchPass}, changed: make(chan struct{}), calls: map[*delivery]struct{}{}}
}

// Set makes f the fault applied from now on. Leaving WatchReorder releases the notification
// held for the next pair; leaving WatchCut lifts the cut.
func (w *FaultyWatcher) Set(f WatchFault) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.fault.Mode == WatchReorder && f.Mode != WatchReorder {
		for d := range w.calls {
			d.release()
		}
	}
	w.fault = f
	w.cut = f.Mode == WatchCut
	close(w.changed)
	w.changed = make(chan struct{})
}

// Watch runs the inner Watch and hands its notifications to fn as the fault in force says,
// one call at a time and never after Watch returned.
func (w *FaultyWatcher) Watch(ctx context.Context, name string, fn func(cluster.Record, error)) error {
	ctx, cancel := context.WithCancel(ctx)
	d := &delivery{notify: make(chan struct{}, 1)}
	w.mu.Lock()
	w.calls[d] = struct{}{}
	w.mu.Unlock()
	var wg sync.WaitGroup
	wg.Go(func() { d.run(ctx, fn) })
	inner := make(chan error, 1)
	go func() {
		inner <- w.inner.Watch(ctx, name, func(r cluster.Record, err error) { w.intercept(d, notice{r, err}) })
	}()
	defer func() {
		cancel()
		wg.Wait()
		w.mu.Lock()
		delete(w.calls, d)
		w.mu.Unlock()
	}()

	var innerErr error
	innerDone, sawCut := false, false
	for {
		w.mu.Lock()
		cut, changed := w.cut, w.changed
		w.mu.Unlock()
		sawCut = sawCut || cut
		switch {
		case sawCut && !cut:
			cancel()
			if !innerDone {
				<-inner
			}
			return fmt.Errorf("%w (watch of %s)", ErrWatchCut, name)
		case innerDone && !cut:
			return innerErr
		}
		var innerCh <-chan error = inner
		if innerDone {
			innerCh = nil
		}
		select {
		case innerErr = <-innerCh:
			innerDone = true
		case <-changed:
		case <-ctx.Done():
			if !innerDone {
				innerErr = <-inner
			}
			if innerErr == nil || !errors.Is(innerErr, ctx.Err()) {
				innerErr = fmt.Errorf("campaign: watch of %s: %w", name, ctx.Err())
			}
			return innerErr
		}
	}
}

// intercept applies the fault in force to one notification of the inner watch.
func (w *FaultyWatcher) intercept(d *delivery, n notice) {
	w.mu.Lock()
	defer w.mu.Unlock()
	now := time.Now()
	switch w.fault.Mode {
	case WatchDrop, WatchCut:
	case WatchDelay:
		d.push(n, now.Add(w.fault.Delay))
	case WatchDup:
		d.push(n, now)
		d.push(n, now)
	case WatchReorder:
		d.mu.Lock()
		held := d.held
		d.held = nil
		if held == nil {
			d.held = &n
		}
		d.mu.Unlock()
		if held != nil {
			d.push(n, now)
			d.push(*held, now)
		}
	default:
		d.push(n, now)
	}
}

// notice is one notification: fn's arguments.
type notice struct {
	rec cluster.Record
	err error
}

// delivery is one Watch call's queue of notifications, handed to fn in order, each at its due
// time, by run.
type delivery struct {
	mu     sync.Mutex
	queue  []queued
	held   *notice       // WatchReorder's first of a pair
	notify chan struct{} // a notification was queued
}

type queued struct {
	n   notice
	due time.Time
}

func (d *delivery) push(n notice, due time.Time) {
	d.mu.Lock()
	d.queue = append(d.queue, queued{n, due})
	d.mu.Unlock()
	select {
	case d.notify <- struct{}{}:
	default:
	}
}

// release queues the notification held by WatchReorder, if any. The FaultyWatcher's lock is
// held.
func (d *delivery) release() {
	d.mu.Lock()
	held := d.held
	d.held = nil
	d.mu.Unlock()
	if held != nil {
		d.push(*held, time.Now())
	}
}

func (d *delivery) run(ctx context.Context, fn func(cluster.Record, error)) {
	t := time.NewTimer(time.Hour)
	defer t.Stop()
	for {
		d.mu.Lock()
		empty := len(d.queue) == 0
		var due time.Time
		if !empty {
			due = d.queue[0].due
		}
		d.mu.Unlock()
		if empty {
			select {
			case <-d.notify:
				continue
			case <-ctx.Done():
				return
			}
		}
		if wait := time.Until(due); wait > 0 {
			t.Reset(wait)
			select {
			case <-t.C:
			case <-ctx.Done():
				return
			}
		}
		if ctx.Err() != nil {
			return
		}
		d.mu.Lock()
		n := d.queue[0].n
		d.queue = d.queue[1:]
		d.mu.Unlock()
		fn(n.rec, n.err)
	}
}

// faultyLock is a worker's Lock with its watch made faulty.
type faultyLock struct {
	cluster.Lock
	*FaultyWatcher
}

// withWatchFaults returns lock with a FaultyWatcher over its watch, and that watcher; lock
// itself and nil when it cannot watch.
func withWatchFaults(lock cluster.Lock) (cluster.Lock, *FaultyWatcher) {
	w, ok := lock.(cluster.Watcher)
	if !ok {
		return lock, nil
	}
	fw := NewFaultyWatcher(w)
	return faultyLock{Lock: lock, FaultyWatcher: fw}, fw
}
