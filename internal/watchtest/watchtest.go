// Package watchtest records a watch's calls for the watch tests of store/file, PostgreSQL and
// SQLite. What every store shares beyond the conformance suite's T8/Watch subtests (many
// watches at once, the end of the watches when the store closes, how long a write takes to
// reach a watch) is in store/storetest: WatchMany, WatchClosed, BenchmarkWatchLatency.
package watchtest

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/leasehold/leasehold/store"
)

// Wait bounds each wait for a watch's call or end: generous, since a call that never comes
// fails the test either way, and a loaded machine under -race delays notifications by seconds.
const Wait = 30 * time.Second

// Rec is a running watch whose calls are recorded.
type Rec struct {
	Key    string
	states chan store.Change
	cancel context.CancelFunc
	done   chan error
}

// Start watches key in s on a goroutine of its own until the test ends or Stop.
func Start(t testing.TB, s store.Store, key string) *Rec {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	r := &Rec{Key: key, states: make(chan store.Change, 4096), cancel: cancel, done: make(chan error, 1)}
	go func() {
		r.done <- store.Watch(ctx, s, key, func(c store.Change) {
			select {
			case r.states <- c:
			default: // a test that lets 4096 calls pile up fails by what it reads anyway
			}
		})
	}()
	t.Cleanup(func() { r.Stop() })
	return r
}

// Stop cancels the watch and returns its error, once it has returned.
func (r *Rec) Stop() error {
	r.cancel()
	err := <-r.done
	r.done <- err
	return err
}

// Next returns the watch's next call, failing the test if none comes or the watch ends.
func (r *Rec) Next(t testing.TB) store.Change {
	t.Helper()
	select {
	case c := <-r.states:
		return c
	case err := <-r.done:
		r.done <- err
		t.Fatalf("watch of %q ended: %v", r.Key, err)
	case <-time.After(Wait):
		t.Fatalf("watch of %q: no call within %v", r.Key, Wait)
	}
	return store.Change{}
}

// WaitDoc waits for the watch to deliver doc, failing the test on a document of another key
// (one whose "key" field is not the watched key).
func (r *Rec) WaitDoc(t testing.TB, doc map[string]any) {
	t.Helper()
	for {
		c := r.Next(t)
		if c.Found {
			if k, ok := c.Doc["key"]; ok && k != r.Key {
				t.Fatalf("T8: watch of %q delivered %v, a document of another key", r.Key, c.Doc)
			}
			if reflect.DeepEqual(c.Doc, doc) {
				return
			}
		}
	}
}

// WaitMissing waits for the watch to deliver a missing document.
func (r *Rec) WaitMissing(t testing.TB) {
	t.Helper()
	for r.Next(t).Found {
	}
}

// Ended waits for the watch to return without being cancelled, and returns its error.
func (r *Rec) Ended(t testing.TB) error {
	t.Helper()
	for {
		select {
		case <-r.states: // calls made before the end
		case err := <-r.done:
			r.done <- err
			return err
		case <-time.After(Wait):
			t.Fatalf("watch of %q did not return within %v", r.Key, Wait)
			return nil
		}
	}
}
