package campaign

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/leasehold/leasehold/cluster"
)

// fakeWatcher is a cluster.Watcher whose notifications and end the test sends.
type fakeWatcher struct {
	notices chan string // a holder to notify
	end     chan error  // ends the Watch under way with this error
}

func newFakeWatcher() *fakeWatcher {
	return &fakeWatcher{notices: make(chan string), end: make(chan error)}
}

func (f *fakeWatcher) Watch(ctx context.Context, _ string, fn func(cluster.Record, error)) error {
	for {
		select {
		case h := <-f.notices:
			fn(cluster.Record{Holder: h}, nil)
		case err := <-f.end:
			return err
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// faultyWatch runs a FaultyWatcher's Watch over a fakeWatcher, inside a synctest bubble.
type faultyWatch struct {
	t     *testing.T
	inner *fakeWatcher
	fw    *FaultyWatcher
	done  chan error

	mu  sync.Mutex
	got []string    // holders delivered, in order
	at  []time.Time // when each was delivered
}

func startFaultyWatch(t *testing.T, ctx context.Context) *faultyWatch {
	w := &faultyWatch{t: t, inner: newFakeWatcher(), done: make(chan error, 1)}
	w.fw = NewFaultyWatcher(w.inner)
	go func() {
		w.done <- w.fw.Watch(ctx, "leader", func(r cluster.Record, err error) {
			if err != nil {
				t.Errorf("notice error %v", err)
			}
			w.mu.Lock()
			w.got = append(w.got, r.Holder)
			w.at = append(w.at, time.Now())
			w.mu.Unlock()
		})
	}()
	synctest.Wait()
	return w
}

// send notifies each holder through the inner watch, then waits until every goroutine of the
// bubble is blocked: whatever the wrapper delivers at once has been delivered.
func (w *faultyWatch) send(holders ...string) {
	w.t.Helper()
	for _, h := range holders {
		w.inner.notices <- h
	}
	synctest.Wait()
}

// expect checks the holders delivered since the last expect.
func (w *faultyWatch) expect(want ...string) {
	w.t.Helper()
	w.mu.Lock()
	got := w.got
	w.got = nil
	w.mu.Unlock()
	if !slices.Equal(got, want) {
		w.t.Fatalf("delivered %q, want %q", got, want)
	}
}

func (w *faultyWatch) running() bool {
	select {
	case err := <-w.done:
		w.done <- err
		return false
	default:
		return true
	}
}

func TestWatchFaultPassDropDupReorder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := startFaultyWatch(t, t.Context())
		w.send("a", "b")
		w.expect("a", "b")

		w.fw.Set(WatchFault{Mode: WatchDrop})
		w.send("c", "d")
		w.expect()
		w.fw.Set(WatchFault{Mode: WatchPass})
		w.send("e")
		w.expect("e")

		w.fw.Set(WatchFault{Mode: WatchDup})
		w.send("f", "g")
		w.expect("f", "f", "g", "g")

		w.fw.Set(WatchFault{Mode: WatchReorder})
		w.send("h")
		w.expect() // held for its pair
		w.send("i")
		w.expect("i", "h")
		w.send("j")
		w.expect()
		w.fw.Set(WatchFault{Mode: WatchPass}) // releases the one held
		synctest.Wait()
		w.expect("j")
		w.send("k")
		w.expect("k")
		if !w.running() {
			t.Fatal("Watch returned")
		}
	})
}

func TestWatchFaultDelay(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := startFaultyWatch(t, t.Context())
		w.fw.Set(WatchFault{Mode: WatchDelay, Delay: 300 * time.Millisecond})
		t0 := time.Now()
		w.send("a")
		time.Sleep(100 * time.Millisecond)
		w.send("b")
		time.Sleep(199 * time.Millisecond)
		synctest.Wait()
		w.expect()
		time.Sleep(time.Millisecond)
		synctest.Wait()
		w.mu.Lock()
		at := slices.Clone(w.at)
		w.mu.Unlock()
		w.expect("a")
		if len(at) != 1 || at[0].Sub(t0) != 300*time.Millisecond {
			t.Fatalf("delivered at %v after the notice, want 300ms", at[0].Sub(t0))
		}
		// In order: a notice passed through after the delay ends waits for the delayed one.
		w.fw.Set(WatchFault{Mode: WatchPass})
		w.send("c")
		w.expect()
		time.Sleep(100 * time.Millisecond)
		synctest.Wait()
		w.expect("b", "c")
	})
}

// A delayed notice is never delivered after Watch returned.
func TestWatchFaultNothingAfterReturn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		w := startFaultyWatch(t, ctx)
		w.fw.Set(WatchFault{Mode: WatchDelay, Delay: time.Second})
		w.send("a")
		cancel()
		synctest.Wait()
		if err := <-w.done; !errors.Is(err, context.Canceled) {
			t.Fatalf("Watch after cancel: %v, want context.Canceled", err)
		}
		time.Sleep(2 * time.Second)
		synctest.Wait()
		w.expect()
	})
}

func TestWatchFaultCut(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := startFaultyWatch(t, t.Context())
		w.fw.Set(WatchFault{Mode: WatchCut})
		w.send("a")
		w.expect()
		// The inner watch fails: the cut stream stays silent, Watch keeps blocking.
		w.inner.end <- errors.New("inner watch failed")
		synctest.Wait()
		if !w.running() {
			t.Fatalf("Watch returned during a cut: %v", <-w.done)
		}
		time.Sleep(time.Hour)
		synctest.Wait()
		if !w.running() {
			t.Fatalf("Watch returned during a cut: %v", <-w.done)
		}
		w.fw.Set(WatchFault{Mode: WatchPass})
		synctest.Wait()
		if err := <-w.done; !errors.Is(err, ErrWatchCut) {
			t.Fatalf("Watch after the cut was lifted: %v, want ErrWatchCut", err)
		}
		w.expect()
	})
}

// A cut lifted while the inner watch is still healthy ends the Watch too (the stream was
// dead); a cut ended by the context returns the context's error.
func TestWatchFaultCutEnds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := startFaultyWatch(t, t.Context())
		w.fw.Set(WatchFault{Mode: WatchCut})
		synctest.Wait()
		w.fw.Set(WatchFault{Mode: WatchPass})
		synctest.Wait()
		if err := <-w.done; !errors.Is(err, ErrWatchCut) {
			t.Fatalf("Watch after the cut was lifted: %v, want ErrWatchCut", err)
		}
	})
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		w := startFaultyWatch(t, ctx)
		w.fw.Set(WatchFault{Mode: WatchCut})
		w.send("a")
		cancel()
		synctest.Wait()
		if err := <-w.done; !errors.Is(err, context.Canceled) {
			t.Fatalf("Watch cancelled during a cut: %v, want context.Canceled", err)
		}
		w.expect()
	})
}

// Without a cut, the inner watch's end is Watch's.
func TestWatchFaultPassesTheEnd(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := startFaultyWatch(t, t.Context())
		w.fw.Set(WatchFault{Mode: WatchDrop})
		w.inner.end <- cluster.ErrWatchUnsupported
		synctest.Wait()
		if err := <-w.done; !errors.Is(err, cluster.ErrWatchUnsupported) {
			t.Fatalf("Watch: %v, want the inner watch's ErrWatchUnsupported", err)
		}
	})
}

func TestWatchFaultParse(t *testing.T) {
	for _, f := range []WatchFault{{Mode: WatchPass}, {Mode: WatchDrop}, {Mode: WatchDup}, {Mode: WatchReorder}, {Mode: WatchCut}, {Mode: WatchDelay, Delay: 250 * time.Millisecond}} {
		got, err := ParseWatchFault(f.String())
		if err != nil || got != f {
			t.Errorf("ParseWatchFault(%q) = %+v, %v; want %+v", f.String(), got, err, f)
		}
	}
	if f, err := ParseWatchFault(""); err != nil || f.Mode != WatchPass {
		t.Errorf(`ParseWatchFault("") = %+v, %v; want pass`, f, err)
	}
	for _, bad := range []string{"delay", "delay -1s", "drop 1s", "lose", "delay 1s 2s"} {
		if _, err := ParseWatchFault(bad); err == nil {
			t.Errorf("ParseWatchFault(%q) accepted it", bad)
		}
	}
}

// plainLock is a cluster.Lock that cannot watch.
type plainLock struct{ cluster.Lock }

func TestWithWatchFaults(t *testing.T) {
	if l, fw := withWatchFaults(plainLock{}); fw != nil || l != (plainLock{}) {
		t.Fatalf("withWatchFaults of a Lock without a watch: %T, %v; want it unchanged", l, fw)
	}
	lock := cluster.NewStoreLock(nil)
	wrapped, fw := withWatchFaults(lock)
	if fw == nil {
		t.Fatal("withWatchFaults of a store Lock gave no FaultyWatcher")
	}
	if w, ok := wrapped.(cluster.Watcher); !ok || w.(faultyLock).FaultyWatcher != fw {
		t.Fatalf("the wrapped Lock %T does not watch through the FaultyWatcher", wrapped)
	}
	if wrapped.(faultyLock).Lock != lock {
		t.Fatal("the wrapped Lock does not delegate to the Lock")
	}
}

// The worker's watch line says which fault is in force; the runner reads it back.
func TestWatchLine(t *testing.T) {
	for _, l := range []watchLine{
		{Instance: "w1.2", T: 12345, Fault: WatchFault{Mode: WatchDelay, Delay: 120 * time.Millisecond}},
		{Instance: "w3.1", T: 1, Fault: WatchFault{Mode: WatchCut}},
	} {
		got, ok := parseWatchLine(l.String())
		if !ok || got != l {
			t.Errorf("parseWatchLine(%q) = %+v, %v; want %+v", l.String(), got, ok, l)
		}
	}
	for _, bad := range []string{"watch w1.1 12 lose", "watch w1.1 x drop", "attempt w1.1 12 ok", "watch w1.1 12"} {
		if _, ok := parseWatchLine(bad); ok {
			t.Errorf("parseWatchLine(%q) accepted it", bad)
		}
	}
}
