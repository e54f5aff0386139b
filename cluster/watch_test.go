package cluster

import (
	"cmp"
	"context"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/leasehold/leasehold/store/memory"
)

// change is a record Observe delivered, and when, relative to the world's start.
type change struct {
	holder string
	term   uint64
	at     time.Duration
	resign string // a pending resign: "" for none, "any" when it names nobody, else its next holder
}

// collect receives from ch until it is closed; wait returns what it received.
func collect(w *world, ch <-chan Record) (wait func() []change) {
	var (
		mu   sync.Mutex
		got  []change
		done = make(chan struct{})
	)
	go func() {
		defer close(done)
		for rec := range ch {
			if rec.Holder != "" && rec.Revision == "" {
				w.T.Errorf("delivered a held record without a revision: %+v", rec)
			}
			mu.Lock()
			c := change{holder: rec.Holder, term: rec.Term, at: w.Since()}
			if ResignPending(rec) {
				c.resign = cmp.Or(rec.NextHolder, "any")
			}
			got = append(got, c)
			mu.Unlock()
		}
	}()
	return func() []change {
		<-done
		mu.Lock()
		defer mu.Unlock()
		return got
	}
}

// O1: the record as first read (missing), then each change of holder or term once, in order,
// at the first read after it: a creation, a release, a takeover of a released lease and one of
// an expired lease. The renewals between them (a dozen) are not delivered. Cancelling ctx
// closes the channel; the bubble ending proves no goroutine is left.
func TestO1ObserveChanges(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t)
		ctx, cancel := context.WithCancel(context.Background())
		ch, err := Observe(ctx, ObserveConfig{Lock: NewStoreLock(w.Mem), Interval: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		wait := collect(w, ch)

		w.At(sec(0.5))
		a := w.node("a", 0, 0).start() // creates the record, term 1; renews every 5s
		w.At(sec(20.5))
		if err := a.e.Stop(context.Background()); err != nil { // releases it
			t.Fatal(err)
		}
		w.At(sec(22.5))
		b := w.node("b", 0, 0).start() // takes the released lease over, term 2
		w.At(sec(30.5))
		b.crash()
		w.At(sec(31.5))
		w.node("c", 0, 0).start() // watches b's last revision for L: takes over at 46.5s, term 3
		w.At(sec(60))
		cancel()
		got := wait()
		want := []change{
			{"", 0, 0, ""},
			{"a", 1, sec(1), ""},
			{"", 1, sec(21), ""},
			{"b", 2, sec(23), ""},
			{"c", 3, sec(47), ""},
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("delivered %+v\nwant      %+v", got, want)
		}
		if n := len(a.eventsOf(AttemptSucceeded)); n < 4 {
			t.Fatalf("a renewed %d times: the test meant renewals to be skipped", n)
		}
	})
}

// O1: a resign request is a change too (it changes neither holder nor term): the record that
// carries it is delivered at the first read after it, and so is the release it leads to, which
// names the instance the lease is reserved for.
func TestO1ObserveResign(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t)
		ctx, cancel := context.WithCancel(context.Background())
		ch, err := Observe(ctx, ObserveConfig{Lock: NewStoreLock(w.Mem), LeaseName: "leader", Interval: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		wait := collect(w, ch)

		w.At(sec(0.5))
		w.node("a", 0, 0).start() // term 1; renews at 5.5s, 10.5s, 15.5s...
		w.At(sec(11.2))
		if _, err := Resign(context.Background(), NewStoreLock(w.Mem), "leader", "b"); err != nil {
			t.Fatal(err)
		}
		w.At(sec(13.2))
		if _, err := Resign(context.Background(), NewStoreLock(w.Mem), "leader", ""); err != nil { // replaces the first
			t.Fatal(err)
		}
		w.At(sec(30))
		cancel()
		got := wait()
		want := []change{
			{"", 0, 0, ""},
			{"a", 1, sec(1), ""},
			{"a", 1, sec(12), "b"},
			{"a", 1, sec(14), "any"},
			{"", 1, sec(16), ""}, // a steps down at 15.5s and releases at once (R2)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("delivered %+v\nwant      %+v", got, want)
		}
	})
}

// O1: cancelling ctx closes the channel whatever the observer is doing: waiting for the next
// read, delivering a record nobody receives, or inside a read that hangs. No goroutine is left
// (the bubble would not end).
func TestO1ObserveCancel(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(f *faultStore)
		recv  bool // receive the first delivery, so that the observer goes on to wait
	}{
		{"waiting", nil, true},
		{"delivering", nil, false},
		{"reading", func(f *faultStore) { f.Hang = true }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f := newFaultStore(memory.New())
				if tc.setup != nil {
					f.Set(tc.setup)
				}
				ctx, cancel := context.WithCancel(context.Background())
				ch, err := Observe(ctx, ObserveConfig{Lock: NewStoreLock(f), Interval: time.Second})
				if err != nil {
					t.Fatal(err)
				}
				if tc.recv {
					<-ch
				}
				time.Sleep(500 * time.Millisecond)
				synctest.Wait()
				cancel()
				synctest.Wait()
				select {
				case rec, ok := <-ch:
					if ok {
						t.Fatalf("received %+v after cancel; want the channel closed", rec)
					}
				default:
					t.Fatal("channel not closed once ctx was cancelled and the observer had run")
				}
			})
		})
	}
}

// O1: a failed read is reported to OnError and delivers nothing; Timeout bounds a read that
// hangs; the next read, at its usual time, delivers the record.
func TestO1ObserveErrors(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t)
		f := newFaultStore(w.Mem)
		f.Set(func(f *faultStore) { f.Err = errInjected })
		var (
			mu   sync.Mutex
			errs []string
		)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		ch, err := Observe(ctx, ObserveConfig{
			Lock: NewStoreLock(f), LeaseName: "leader", Interval: time.Second, Timeout: 300 * time.Millisecond,
			OnError: func(err error) {
				mu.Lock()
				errs = append(errs, w.Since().String()+" "+err.Error())
				mu.Unlock()
			},
		})
		if err != nil {
			t.Fatal(err)
		}
		wait := collect(w, ch)
		w.node("a", 0, 0).start()
		w.At(sec(1.5))
		f.Set(func(f *faultStore) { f.Err, f.Hang = nil, true })
		w.At(sec(2.5))
		f.Heal()
		w.At(sec(3.5))
		cancel()
		got := wait()
		if want := []change{{"a", 1, sec(3), ""}}; !reflect.DeepEqual(got, want) {
			t.Fatalf("delivered %+v, want %+v", got, want)
		}
		mu.Lock()
		defer mu.Unlock()
		if len(errs) != 3 || !strings.HasPrefix(errs[0], "0s ") || !strings.HasPrefix(errs[1], "1s ") ||
			!strings.HasPrefix(errs[2], "2.3s ") || !strings.Contains(errs[0], errInjected.Error()) ||
			!strings.Contains(errs[2], context.DeadlineExceeded.Error()) || !strings.Contains(errs[2], `lease "leader"`) {
			t.Fatalf("OnError got %q; want the injected error at 0s and 1s, then a timeout at 2.3s", errs)
		}
	})
}

func TestO1ObserveConfig(t *testing.T) {
	lock := NewStoreLock(memory.New())
	for _, tc := range []struct {
		cfg  ObserveConfig
		want string
	}{
		{ObserveConfig{}, "Lock is nil"},
		{ObserveConfig{Lock: lock, Interval: -time.Second}, "Interval -1s"},
		{ObserveConfig{Lock: lock, Timeout: -time.Second}, "Timeout -1s"},
	} {
		if _, err := Observe(context.Background(), tc.cfg); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Observe(%+v): %v, want an error containing %q", tc.cfg, err, tc.want)
		}
	}
	// The default interval is R's.
	synctest.Test(t, func(t *testing.T) {
		f := newFaultStore(memory.New())
		ctx, cancel := context.WithCancel(context.Background())
		ch, err := Observe(ctx, ObserveConfig{Lock: NewStoreLock(f)})
		if err != nil {
			t.Fatal(err)
		}
		<-ch
		time.Sleep(DefaultRenewInterval - time.Nanosecond)
		synctest.Wait()
		if n := f.Calls(); n != 1 {
			t.Errorf("%d reads before the default interval had passed, want 1", n)
		}
		time.Sleep(time.Nanosecond)
		synctest.Wait()
		if n := f.Calls(); n != 2 {
			t.Errorf("%d reads once the default interval had passed, want 2", n)
		}
		cancel()
		if _, ok := <-ch; ok {
			t.Error("channel not closed")
		}
	})
}

// O1, U2: a leader that reports itself unhealthy, then healthy again, keeps its term: each
// change is delivered (at the first read after the renewal that wrote it).
func TestO1ObserveHealth(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t)
		var bad atomic.Bool
		a := w.node("a", 0, 0)
		checked(a.e, &bad, 0)
		a.start() // checks at 0, 5, 10, ...: unhealthy at the third failure
		w.At(sec(1))
		ctx, cancel := context.WithCancel(context.Background())
		ch, err := Observe(ctx, ObserveConfig{Lock: NewStoreLock(w.Mem), LeaseName: "leader", Interval: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		var got []bool
		done := make(chan struct{})
		go func() {
			defer close(done)
			for rec := range ch {
				_, u := rec.CurrentPriority()
				got = append(got, u)
			}
		}()
		w.At(sec(9))
		bad.Store(true)
		w.At(sec(31)) // failures at 10s, 15s, 20s: unhealthy from 20s
		bad.Store(false)
		w.At(sec(40)) // passes at 35s
		cancel()
		<-done
		if want := []bool{false, true, false}; !reflect.DeepEqual(got, want) {
			t.Fatalf("unhealthy as delivered: %v; want %v (one term throughout)", got, want)
		}
		if term, _ := a.e.Term(); term != 1 {
			t.Fatalf("a's term %d; want 1", term)
		}
	})
}
