package driver_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/leasehold/leasehold/store/driver"
)

var errTestClosed = errors.New("test: closed")

// fakeBackend is a Batcher's backend whose lone writes and batches wait until released, and
// which records what it was sent. A write is a "key=value" string, its answer "done key=value".
type fakeBackend struct {
	mu      sync.Mutex
	lone    []string
	batches [][]string
	ctxs    []context.Context // of the batches
	release chan struct{}     // one receive lets one lone write or batch return
}

func newFake(maxInFlight int) (*driver.Batcher[string, string], *fakeBackend) {
	f := &fakeBackend{release: make(chan struct{})}
	b := &driver.Batcher[string, string]{
		MaxInFlight: maxInFlight,
		Key:         func(w string) string { k, _, _ := strings.Cut(w, "="); return k },
		Closed:      errTestClosed,
		Name:        "test",
		Lone: func(ctx context.Context, w string) string {
			f.mu.Lock()
			f.lone = append(f.lone, w)
			f.mu.Unlock()
			select {
			case <-f.release:
				return "done " + w
			case <-ctx.Done():
				return "cancelled " + w
			}
		},
		Send: func(ctx context.Context, ws []string) []string {
			f.mu.Lock()
			f.batches = append(f.batches, slices.Clone(ws))
			f.ctxs = append(f.ctxs, ctx)
			f.mu.Unlock()
			rs := make([]string, len(ws))
			select {
			case <-f.release:
				for i, w := range ws {
					rs[i] = "done " + w
				}
			case <-ctx.Done():
				for i, w := range ws {
					rs[i] = "cancelled " + w
				}
			}
			return rs
		},
	}
	return b, f
}

func (f *fakeBackend) sent() ([]string, [][]string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.lone), slices.Clone(f.batches)
}

type answer struct {
	r   string
	err error
}

// start calls Do(w) in a goroutine and waits until it is blocked (sent alone, or queued).
func start(ctx context.Context, b *driver.Batcher[string, string], w string) chan answer {
	ch := make(chan answer, 1)
	go func() {
		r, err := b.Do(ctx, w)
		ch <- answer{r, err}
	}()
	synctest.Wait()
	return ch
}

// TestBatcherLoneWhenIdle: a write finding a free slot and an empty queue is sent alone at
// once, under its caller's context; one arriving while the slots are taken queues.
func TestBatcherLoneWhenIdle(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, f := newFake(2)
		var events []string
		b.Hook = func(e string, n int) { events = append(events, fmt.Sprint(e, n)) }
		a1 := start(t.Context(), b, "a=1")
		a2 := start(t.Context(), b, "b=1")
		a3 := start(t.Context(), b, "c=1")
		lone, batches := f.sent()
		if !slices.Equal(lone, []string{"a=1", "b=1"}) || len(batches) != 0 {
			t.Fatalf("sent alone %v, in batches %v; want a=1 and b=1 alone", lone, batches)
		}
		f.release <- struct{}{} // one lone write returns: c=1 goes as a batch of one
		synctest.Wait()
		f.release <- struct{}{}
		f.release <- struct{}{}
		for _, ch := range []chan answer{a1, a2, a3} {
			if a := <-ch; a.err != nil || !strings.HasPrefix(a.r, "done ") {
				t.Errorf("answer %+v", a)
			}
		}
		if want := []string{"alone1", "alone1", "queued1", "batch1"}; !slices.Equal(events, want) {
			t.Errorf("events %v, want %v", events, want)
		}
		b.Close()
		b.Wait()
	})
}

// TestBatcherCoalesces: what queued while the slot was taken goes as one batch, in the order of
// arrival, and each caller gets its own answer.
func TestBatcherCoalesces(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, f := newFake(1)
		first := start(t.Context(), b, "x=0")
		writes := []string{"b=1", "a=1", "b=2", "c=1"}
		var chans []chan answer
		for _, w := range writes {
			chans = append(chans, start(t.Context(), b, w))
		}
		f.release <- struct{}{} // the lone write
		synctest.Wait()
		_, batches := f.sent()
		if len(batches) != 1 || !slices.Equal(batches[0], writes) {
			t.Fatalf("batches %v, want one of %v", batches, writes)
		}
		f.release <- struct{}{}
		if a := <-first; a.r != "done x=0" || a.err != nil {
			t.Errorf("lone write: %+v", a)
		}
		for i, ch := range chans {
			if a := <-ch; a.r != "done "+writes[i] || a.err != nil {
				t.Errorf("write %s: %+v", writes[i], a)
			}
		}
		b.Close()
		b.Wait()
	})
}

// TestBatcherTakeBounds: MaxBatch and MaxPerKey leave the excess queued in its order, for the
// next batch; SortByKey orders a batch by key, stably.
func TestBatcherTakeBounds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, f := newFake(1)
		b.MaxBatch = 4
		b.MaxPerKey = 2
		b.SortByKey = true
		first := start(t.Context(), b, "x=0")
		writes := []string{"k=1", "b=1", "k=2", "k=3", "a=1", "c=1", "d=1"}
		var chans []chan answer
		for _, w := range writes {
			chans = append(chans, start(t.Context(), b, w))
		}
		for range 3 {
			f.release <- struct{}{}
			synctest.Wait()
		}
		_, batches := f.sent()
		want := [][]string{{"a=1", "b=1", "k=1", "k=2"}, {"c=1", "d=1", "k=3"}}
		if !slices.EqualFunc(batches, want, slices.Equal) {
			t.Errorf("batches %v, want %v", batches, want)
		}
		<-first
		for i, ch := range chans {
			if a := <-ch; a.r != "done "+writes[i] {
				t.Errorf("write %s: %+v", writes[i], a)
			}
		}
		b.Close()
		b.Wait()
	})
}

// TestBatcherQueuedCallerLeaves: a queued caller whose context ends leaves with its context's
// error, and its write is never sent.
func TestBatcherQueuedCallerLeaves(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, f := newFake(1)
		first := start(t.Context(), b, "x=0")
		ctx, cancel := context.WithCancel(t.Context())
		gone := start(ctx, b, "gone=1")
		cancel()
		if a := <-gone; !errors.Is(a.err, context.Canceled) || a.r != "" {
			t.Errorf("cancelled queued write: %+v, want context.Canceled", a)
		}
		f.release <- struct{}{}
		<-first
		synctest.Wait()
		if _, batches := f.sent(); len(batches) != 0 {
			t.Errorf("batches %v, want none", batches)
		}
		b.Close()
		b.Wait()
	})
}

// TestBatcherSentCallerLeaves: a sent caller whose context ends gets an unknown outcome wrapping
// its context's error while the batch goes on for the others; once all have left, the batch is
// cancelled.
func TestBatcherSentCallerLeaves(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, f := newFake(1)
		first := start(t.Context(), b, "x=0")
		ctx1, cancel1 := context.WithCancel(t.Context())
		ctx2, cancel2 := context.WithCancel(t.Context())
		a1 := start(ctx1, b, "a=1")
		a2 := start(ctx2, b, "b=1")
		f.release <- struct{}{}
		<-first
		synctest.Wait() // the batch is sent
		cancel1()
		a := <-a1
		if !errors.Is(a.err, context.Canceled) || !strings.Contains(a.err.Error(), "no answer") {
			t.Errorf("left a sent batch: %v, want an unknown outcome wrapping context.Canceled", a.err)
		}
		synctest.Wait()
		f.mu.Lock()
		bctx := f.ctxs[0]
		f.mu.Unlock()
		if bctx.Err() != nil {
			t.Fatalf("batch cancelled while b=1 waits: %v", bctx.Err())
		}
		cancel2()
		<-a2
		synctest.Wait()
		if bctx.Err() == nil {
			t.Error("batch not cancelled after all its callers left")
		}
		b.Close()
		b.Wait()
	})
}

// TestBatcherBatchDeadline: a batch ends at the latest of its callers' deadlines, not at the
// earliest; a caller without a deadline gives it none.
func TestBatcherBatchDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, f := newFake(1)
		first := start(t.Context(), b, "x=0")
		now := time.Now()
		ctx1, cancel1 := context.WithTimeout(t.Context(), time.Second)
		defer cancel1()
		ctx2, cancel2 := context.WithTimeout(t.Context(), 3*time.Second)
		defer cancel2()
		a1 := start(ctx1, b, "a=1")
		a2 := start(ctx2, b, "b=1")
		f.release <- struct{}{}
		<-first
		synctest.Wait()
		f.mu.Lock()
		bctx := f.ctxs[0]
		f.mu.Unlock()
		if d, ok := bctx.Deadline(); !ok || !d.Equal(now.Add(3*time.Second)) {
			t.Errorf("batch deadline %v %v, want %v", d, ok, now.Add(3*time.Second))
		}
		// a=1's deadline passes: it leaves, the batch goes on for b=1 until its deadline.
		if a := <-a1; !errors.Is(a.err, context.DeadlineExceeded) {
			t.Errorf("a=1: %+v", a)
		}
		synctest.Wait()
		if bctx.Err() != nil {
			t.Errorf("batch context ended with the earliest deadline: %v", bctx.Err())
		}
		f.release <- struct{}{}
		if a := <-a2; a.r != "done b=1" || a.err != nil {
			t.Errorf("b=1: %+v", a)
		}
		b.Close()
		b.Wait()

		b, f = newFake(1)
		first = start(t.Context(), b, "x=0")
		a1 = start(ctx2, b, "a=1")
		a2 = start(t.Context(), b, "b=1")
		f.release <- struct{}{}
		<-first
		synctest.Wait()
		f.mu.Lock()
		bctx = f.ctxs[0]
		f.mu.Unlock()
		if d, ok := bctx.Deadline(); ok {
			t.Errorf("batch deadline %v with a caller without one", d)
		}
		f.release <- struct{}{}
		<-a1
		<-a2
		b.Close()
		b.Wait()
	})
}

// TestBatcherCloseFailsQueued: Close fails the queued writes and refuses new ones; Wait cancels
// the batches in flight and returns once their goroutines have (synctest.Test fails on a
// goroutine left behind).
func TestBatcherCloseFailsQueued(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, f := newFake(1)
		first := start(t.Context(), b, "x=0")
		a1 := start(t.Context(), b, "a=1")
		f.release <- struct{}{}
		<-first
		synctest.Wait() // a=1 is in a batch in flight
		a2 := start(t.Context(), b, "b=1")
		b.Close()
		if a := <-a2; !errors.Is(a.err, errTestClosed) {
			t.Errorf("queued at Close: %+v, want %v", a, errTestClosed)
		}
		if _, err := b.Do(t.Context(), "c=1"); !errors.Is(err, errTestClosed) {
			t.Errorf("Do after Close: %v", err)
		}
		b.Wait()
		if a := <-a1; a.r != "cancelled a=1" {
			t.Errorf("in flight at Wait: %+v, want its batch cancelled", a)
		}
	})
}
