package file

import (
	"errors"
	"os"
	"testing"

	"github.com/leasehold/leasehold/internal/leakcheck"
	"github.com/leasehold/leasehold/internal/watchtest"
	"github.com/leasehold/leasehold/store"
	"github.com/leasehold/leasehold/store/storetest"
)

// T8: a write made by another process reaches a watch (through inotify, not through the
// store's own writes).
func TestWatchOtherProcess(t *testing.T) {
	path := newPath(t)
	createCounter(t, path)
	s := mustOpen(t, path)
	r := watchtest.Start(t, s, "counter")
	r.WaitDoc(t, map[string]any{"n": float64(0)})
	// The crash helper with no stage to stop at makes one increment and exits.
	c := startChild(t, "writer", envHelper+"=crash", envPath+"="+path)
	if _, err := c.wait(); err != nil {
		t.Fatal(err)
	}
	r.WaitDoc(t, map[string]any{"n": float64(1)})
}

// T8: the data file removed or replaced by hand is seen too.
func TestWatchFileChangedByHand(t *testing.T) {
	path := newPath(t)
	s := mustOpen(t, path)
	if err := s.Create(t.Context(), "k", map[string]any{"n": 1}); err != nil {
		t.Fatal(err)
	}
	r := watchtest.Start(t, s, "k")
	r.WaitDoc(t, map[string]any{"n": float64(1)})
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	r.WaitMissing(t)
	// Written aside and renamed, as an editor saves: a file read half-written is corrupt.
	if err := os.WriteFile(path+".new", []byte("{\n\"k\": {\"n\":2}\n}\n"), 0o666); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(path+".new", path); err != nil {
		t.Fatal(err)
	}
	r.WaitDoc(t, map[string]any{"n": float64(2)})
}

// T8: 200 watches on one store (one inotify instance) each deliver their own key's final
// state.
func TestWatchManyKeys(t *testing.T) {
	s := mustOpen(t, newPath(t))
	storetest.WatchMany(t, s, 200)
}

// Close ends the store's watches with ErrClosed, and leaves no goroutine behind.
func TestWatchEndsOnClose(t *testing.T) {
	tr := leakcheck.New()
	tr.Do(func() {
		s, err := Open(newPath(t))
		if err != nil {
			t.Fatal(err)
		}
		storetest.WatchClosed(t, s)
		r := watchtest.Start(t, s, "k")
		if err := r.Ended(t); !errors.Is(err, ErrClosed) {
			t.Errorf("watch of a closed store returned %v, want ErrClosed", err)
		}
	})
	tr.Check(t, watchtest.Wait)
}

// The last watch's end stops the inotify instance's goroutine; a later watch starts another.
func TestWatchGoroutineEndsWithLastWatch(t *testing.T) {
	s := mustOpen(t, newPath(t))
	for i := range 2 {
		tr := leakcheck.New()
		tr.Do(func() {
			a, b := watchtest.Start(t, s, "a"), watchtest.Start(t, s, "b")
			a.Next(t)
			b.Next(t)
			if err := s.Patch(t.Context(), "a", map[string]any{"n": i}, nil); err != nil && i > 0 {
				t.Fatal(err)
			} else if i == 0 {
				if err := s.Create(t.Context(), "a", map[string]any{"n": i}); err != nil {
					t.Fatal(err)
				}
			}
			a.WaitDoc(t, map[string]any{"n": float64(i)})
			a.Stop()
			b.Stop()
		})
		tr.Check(t, watchtest.Wait)
	}
}

// BenchmarkWatchLatency: how long a Patch takes to reach a watch of its key (inotify on the
// directory, then the Portable store's read):
//
//	go test -run '^$' -bench WatchLatency ./store/file
func BenchmarkWatchLatency(b *testing.B) {
	storetest.BenchmarkWatchLatency(b, func(b *testing.B) store.Store { return mustOpen(b, newPath(b)) })
}
