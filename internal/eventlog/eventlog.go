// Package eventlog records the events of Electors for a test to wait on, without sleeping.
package eventlog

import (
	"context"
	"sync"
	"testing"

	"github.com/leasehold/leasehold/cluster"
)

// Log is a list of events that grows; Add is an Elector's Observer. The zero Log is ready.
type Log struct {
	mu     sync.Mutex
	events []cluster.Event
	notify chan struct{} // closed at the next Add
}

// Add records ev and wakes the waiters.
func (l *Log) Add(ev cluster.Event) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.events = append(l.events, ev)
	if l.notify != nil {
		close(l.notify)
		l.notify = nil
	}
}

// All returns the events recorded so far, in order.
func (l *Log) All() []cluster.Event {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]cluster.Event(nil), l.events...)
}

// Wait returns the first event that matches, waiting for it until ctx ends (then the test
// fails).
func (l *Log) Wait(t testing.TB, ctx context.Context, match func(cluster.Event) bool) cluster.Event {
	t.Helper()
	for {
		l.mu.Lock()
		for _, ev := range l.events {
			if match(ev) {
				l.mu.Unlock()
				return ev
			}
		}
		if l.notify == nil {
			l.notify = make(chan struct{})
		}
		ch := l.notify
		l.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			t.Fatalf("the event awaited did not come: %v", ctx.Err())
		}
	}
}
