// Package watchtest holds the watch tests that the stores share beyond the conformance suite's
// T8/Watch subtests: many watches at once and the end of the watches when the store closes. How
// long a write takes to reach a watch is storetest.BenchmarkWatchLatency, for every store.
package watchtest

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"
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

// ManyKeys runs n watches of n keys of s at once, makes rounds of patches to every key from
// several goroutines, and checks that each watch delivers its own key's final state and
// never a document of another key.
func ManyKeys(t *testing.T, s store.Store, n, rounds int) {
	t.Helper()
	prefix := fmt.Sprintf("many-%d-", time.Now().UnixNano())
	recs := make([]*Rec, n)
	for i := range recs {
		recs[i] = Start(t, s, fmt.Sprintf("%s%04d", prefix, i))
	}
	for _, r := range recs {
		if c := r.Next(t); c.Found {
			t.Fatalf("watch of new key %q first delivered %v", r.Key, c.Doc)
		}
	}
	ctx := t.Context()
	var wg sync.WaitGroup
	errs := make(chan error, n)
	const writers = 8
	for w := range writers {
		wg.Go(func() {
			for i := w; i < n; i += writers {
				key := recs[i].Key
				if err := s.Create(ctx, key, map[string]any{"key": key, "n": 0}); err != nil {
					errs <- err
					return
				}
				for j := 1; j <= rounds; j++ {
					if err := s.Patch(ctx, key, map[string]any{"n": j}, &store.Condition{Field: "n", Value: j - 1}); err != nil {
						errs <- err
						return
					}
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for _, r := range recs {
		r.WaitDoc(t, map[string]any{"key": r.Key, "n": float64(rounds)})
	}
}

// EndsOnClose starts n watches of s, closes s with closeStore, and checks that every watch
// returns an error (not its context's: none is cancelled) wrapped with its key.
func EndsOnClose(t *testing.T, s store.Store, n int, closeStore func() error) {
	t.Helper()
	recs := make([]*Rec, n)
	for i := range recs {
		recs[i] = Start(t, s, fmt.Sprintf("close-%d", i))
		recs[i].Next(t)
	}
	if err := closeStore(); err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		err := r.Ended(t)
		var ke *store.KeyError
		if err == nil || errors.Is(err, context.Canceled) || !errors.As(err, &ke) || ke.Key != r.Key {
			t.Fatalf("watch of %q after the store's Close returned %v, want the store's error wrapped with the key", r.Key, err)
		}
	}
	t.Logf("a watch ended by Close: %v", recs[0].Ended(t))
	ctx, cancel := context.WithTimeout(t.Context(), Wait)
	defer cancel()
	if err := store.Watch(ctx, s, "after-close", func(store.Change) {}); err == nil || errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a watch of a closed store returned %v, want the store's error at once", err)
	}
}
