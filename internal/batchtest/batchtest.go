// Package batchtest records the events of a store's driver.Batcher (its Hook), for the tests
// of the stores that coalesce writes (PostgreSQL, Redis), and lets a test wait for them.
package batchtest

import (
	"slices"
	"sync"
	"testing"
)

// Recorder counts a Batcher's events: "alone", "queued" and "batch", with the batches' sizes.
type Recorder struct {
	mu     sync.Mutex
	counts map[string]int
	sizes  []int // of the batches, in order
	ch     chan struct{}
}

// New returns a Recorder; set the Batcher's Hook to its Hook before the store's first write.
func New() *Recorder {
	return &Recorder{counts: map[string]int{}, ch: make(chan struct{}, 1)}
}

// Hook is the Batcher's hook. It never blocks.
func (r *Recorder) Hook(event string, n int) {
	r.mu.Lock()
	r.counts[event]++
	if event == "batch" {
		r.sizes = append(r.sizes, n)
	}
	r.mu.Unlock()
	select {
	case r.ch <- struct{}{}:
	default:
	}
}

// Count returns how many times event happened.
func (r *Recorder) Count(event string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.counts[event]
}

// BatchSizes returns the sizes of the batches sent so far, in order.
func (r *Recorder) BatchSizes() []int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.sizes)
}

// WaitFor waits until event happened n times, failing the test if it ends first.
func (r *Recorder) WaitFor(t *testing.T, event string, n int) {
	t.Helper()
	for r.Count(event) < n {
		select {
		case <-r.ch:
		case <-t.Context().Done():
			t.Fatalf("waiting for %d %q events: %d", n, event, r.Count(event))
		}
	}
}
