package cluster

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// calls records the calls of one registration, in order.
type calls struct {
	mu  sync.Mutex
	log []string
}

func (c *calls) add(s string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.log = append(c.log, s)
}

func (c *calls) get() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.log...)
}

// register adds a registration to e recording "fn@<seconds>" and "de@<seconds>".
func (c *calls) register(w *world, e *Elector) (remove func()) {
	return e.WhenLeader(func(context.Context) error {
		c.add("fn@" + w.Since().String())
		return nil
	}, func() {
		c.add("de@" + w.Since().String())
	})
}

// W1, W3: registrations made before Start, while running and after Stop; fn runs each time
// leadership starts, deregistered each time it ends and on Stop.
func TestW1W3RegisterAnyTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t)
		a := w.node("a", 0, 0)
		var before, during, after calls
		before.register(w, a.e)
		a.start()
		w.At(sec(1))
		during.register(w, a.e) // while leading: runs at once (W2)
		w.At(sec(2))
		a.faults.Set(func(f *faultStore) { f.Err = errInjected })
		w.At(sec(6))
		a.faults.Heal()
		w.At(sec(11)) // leads again at its attempt of 10s
		if err := a.e.Stop(context.Background()); err != nil {
			t.Fatal(err)
		}
		after.register(w, a.e)
		w.At(sec(30))
		if got, want := before.get(), []string{"fn@0s", "de@5s", "fn@10s", "de@11s"}; !reflect.DeepEqual(got, want) {
			t.Fatalf("registered before Start: %v; want %v", got, want)
		}
		if got, want := during.get(), []string{"fn@1s", "de@5s", "fn@10s", "de@11s"}; !reflect.DeepEqual(got, want) {
			t.Fatalf("registered while leading: %v; want %v", got, want)
		}
		if got := after.get(); len(got) != 0 {
			t.Fatalf("registered after Stop: %v; want no call", got)
		}
	})
}

// W2: registering while leading starts fn at once, without waiting for an attempt.
func TestW2RegisterWhileLeading(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t)
		a := w.node("a", 0, 0).start()
		w.At(sec(2.5))
		var c calls
		c.register(w, a.e)
		synctest.Wait()
		if got := c.get(); !reflect.DeepEqual(got, []string{"fn@2.5s"}) {
			t.Fatalf("calls %v; want fn at 2.5s, at once", got)
		}
	})
}

// W4: deregistered waits for the pending fn; registrations do not wait for each other.
func TestW4OrderAndIndependence(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t)
		a := w.node("a", 0, 0)
		release := make(chan struct{})
		var slow, fast calls
		a.e.WhenLeader(func(context.Context) error {
			slow.add("fn-start@" + w.Since().String())
			<-release // a job that ignores its context for a while
			slow.add("fn-end@" + w.Since().String())
			return nil
		}, func() { slow.add("de@" + w.Since().String()) })
		fast.register(w, a.e)
		a.start()
		w.At(sec(1))
		a.faults.Set(func(f *faultStore) { f.Err = errInjected })
		w.At(sec(5)) // leadership ends at 5s
		if got, want := slow.get(), []string{"fn-start@0s"}; !reflect.DeepEqual(got, want) {
			t.Fatalf("slow registration: %v; want %v (deregistered must wait for fn)", got, want)
		}
		if got, want := fast.get(), []string{"fn@0s", "de@5s"}; !reflect.DeepEqual(got, want) {
			t.Fatalf("fast registration: %v; want %v (not held up by the slow one)", got, want)
		}
		w.At(sec(7))
		close(release)
		synctest.Wait()
		if got, want := slow.get(), []string{"fn-start@0s", "fn-end@7s", "de@7s"}; !reflect.DeepEqual(got, want) {
			t.Fatalf("slow registration: %v; want %v", got, want)
		}
	})
}

// W5: an error or a panic in fn is logged and does not stop the election; fn counts as having
// run, so deregistered follows.
func TestW5ErrorAndPanicLogged(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		logs := &logCapture{}
		w := newWorld(t)
		e, err := NewElector(ElectorConfig{Lock: NewStoreLock(w.Mem), InstanceID: "a", Logger: logs.Logger()})
		if err != nil {
			t.Fatal(err)
		}
		var c calls
		e.WhenLeader(func(context.Context) error { c.add("fn-err"); return errors.New("job failed") }, func() { c.add("de-err") })
		e.WhenLeader(func(context.Context) error { c.add("fn-panic"); panic("job panicked") }, func() { c.add("de-panic") })
		if err := e.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		w.At(sec(12))
		if !e.IsLeader() {
			t.Fatal("the election stopped after a failing callback")
		}
		if err := e.Stop(context.Background()); err != nil {
			t.Fatal(err)
		}
		got := strings.Join(c.get(), " ")
		for _, want := range []string{"fn-err", "de-err", "fn-panic", "de-panic"} {
			if !strings.Contains(got, want) {
				t.Fatalf("calls %q; want %s", got, want)
			}
		}
		if r := logs.Find("leasehold: leader callback failed"); len(r) != 1 || r[0]["error"] != "job failed" || r[0]["lease"] != "leader" {
			t.Fatalf("error log %v; want one record with the error and the lease", r)
		}
		if r := logs.Find("leasehold: leader callback panicked"); len(r) != 1 || r[0]["panic"] != "job panicked" {
			t.Fatalf("panic log %v; want one record with the panic", r)
		}
	})
}

// W6: remove cancels fn's context, calls deregistered after fn returns and before remove
// returns; a second call does nothing; removing a registration whose fn never ran calls
// nothing.
func TestW6Remove(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t)
		a := w.node("a", 0, 0)
		var c calls
		remove := a.e.WhenLeader(func(ctx context.Context) error {
			c.add("fn")
			go func() {
				<-ctx.Done()
				c.add("ctx-done")
			}()
			return nil
		}, func() { c.add("de") })
		var never calls
		b := w.node("b", 0, 0)
		removeNever := never.register(w, b.e)
		a.start()
		w.At(0)
		b.start()
		w.At(sec(1))
		remove()
		if got := strings.Join(c.get(), " "); !strings.HasPrefix(got, "fn") || !strings.Contains(got, "de") {
			t.Fatalf("after remove: %v; want fn then deregistered, done before remove returned", got)
		}
		synctest.Wait()
		if got := strings.Join(c.get(), " "); !strings.Contains(got, "ctx-done") {
			t.Fatalf("fn's context not cancelled by remove: %v", got)
		}
		remove()
		w.At(sec(30))
		if got := c.get(); len(got) != 3 {
			t.Fatalf("calls after a second remove and 30s: %v; want nothing more", got)
		}
		removeNever()
		if got := never.get(); len(got) != 0 {
			t.Fatalf("removing a registration whose fn never ran: %v; want no call", got)
		}
		if !a.e.IsLeader() {
			t.Fatal("remove ended the leadership")
		}
	})
}

// W6: remove waits for a running fn before calling deregistered.
func TestW6RemoveWaitsForFn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t)
		a := w.node("a", 0, 0).start()
		w.At(0)
		started := make(chan struct{})
		var c calls
		remove := a.e.WhenLeader(func(ctx context.Context) error {
			close(started)
			<-ctx.Done() // returns once remove cancels it
			time.Sleep(time.Second)
			c.add("fn-end@" + w.Since().String())
			return nil
		}, func() { c.add("de@" + w.Since().String()) })
		<-started
		remove()
		if got, want := c.get(), []string{"fn-end@1s", "de@1s"}; !reflect.DeepEqual(got, want) {
			t.Fatalf("calls %v; want %v", got, want)
		}
	})
}

// W7: IsLeader is false the moment the deadline passes, even when the election goroutine has
// not run since (here it is stuck in a slow Observer).
func TestW7IsLeaderAgainstDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t)
		block := make(chan struct{})
		var once sync.Once
		e, err := NewElector(ElectorConfig{
			Lock: NewStoreLock(w.Mem), InstanceID: "a", Logger: quietLogger(),
			Observer: func(ev Event) {
				if ev.Kind == BecameLeader {
					once.Do(func() { <-block }) // the election goroutine stops here
				}
			},
		})
		if err != nil {
			t.Fatal(err)
		}
		if err := e.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		w.At(sec(10) - time.Nanosecond)
		if !e.IsLeader() {
			t.Fatal("not leading before the deadline")
		}
		w.At(sec(10))
		if e.IsLeader() {
			t.Fatal("IsLeader true at the deadline (L+R)/2 = 10s although no attempt succeeded since 0s")
		}
		if _, ok := e.Term(); ok {
			t.Fatal("Term reports leadership past the deadline")
		}
		close(block)
		if err := e.Stop(context.Background()); err != nil {
			t.Fatal(err)
		}
	})
}

// W8: fn's context carries the term, which grows each time the lease changes holder.
func TestW8TermInContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t)
		var mu sync.Mutex
		terms := map[string][]uint64{}
		reg := func(n *node) {
			n.e.WhenLeader(func(ctx context.Context) error {
				term, ok := TermOf(ctx)
				if !ok {
					t.Error("fn's context has no term")
				}
				mu.Lock()
				terms[n.e.InstanceID()] = append(terms[n.e.InstanceID()], term)
				mu.Unlock()
				return nil
			}, nil)
		}
		a, b := w.node("a", 0, 0), w.node("b", 0, 0)
		reg(a)
		reg(b)
		a.start()
		w.At(0)
		b.start()
		w.At(sec(1))
		if err := a.e.Stop(context.Background()); err != nil { // b takes over at 5s: term 2
			t.Fatal(err)
		}
		w.At(sec(6))
		a2 := w.node("a2", 0, 0)
		reg(a2)
		a2.start()
		w.At(sec(7))
		b.crash() // a2 takes over once b's revision expires: term 3
		w.At(sec(40))
		mu.Lock()
		defer mu.Unlock()
		want := map[string][]uint64{"a": {1}, "b": {2}, "a2": {3}}
		if !reflect.DeepEqual(terms, want) {
			t.Fatalf("terms seen by fn: %v; want %v", terms, want)
		}
		if _, ok := TermOf(context.Background()); ok {
			t.Fatal("TermOf found a term in a plain context")
		}
	})
}

// W6: remove right after WhenLeader while leading, when it comes between the registration's
// goroutine taking the fn call and fn's context being made: fn must not start with a context
// nobody cancels, and remove must return.
func TestW6RemoveBeforeFnStarts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := NewLocal("a")
		defer l.Stop(context.Background())
		var remove func()
		registered := make(chan struct{})
		removed := make(chan struct{})
		var once sync.Once
		l.cb.AfterTake = func() {
			once.Do(func() {
				<-registered
				go func() {
					remove()
					close(removed)
				}()
				synctest.Wait() // remove has ended the registration, or waits for this goroutine
			})
		}
		var c calls
		remove = l.WhenLeader(func(ctx context.Context) error {
			c.add("fn")
			<-ctx.Done()
			return nil
		}, func() { c.add("de") })
		close(registered)
		select {
		case <-removed:
		case <-time.After(time.Hour):
			t.Fatalf("remove has not returned after an hour; calls %v", c.get())
		}
		if got := c.get(); len(got) != 0 && !reflect.DeepEqual(got, []string{"fn", "de"}) {
			t.Fatalf("calls %v; want none, or fn then deregistered", got)
		}
	})
}

// W2, W7: a registration made the instant the leadership deadline passes, before the
// election goroutine has noticed (here it is held in the Observer), does not start fn:
// IsLeader already says false.
func TestW2RegisterAtTheDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t)
		block := make(chan struct{})
		var once sync.Once
		e, err := NewElector(ElectorConfig{
			Lock: NewStoreLock(w.Mem), InstanceID: "a", Logger: quietLogger(),
			Observer: func(ev Event) {
				if ev.Kind == AttemptSucceeded && w.Since() == sec(5) {
					once.Do(func() { <-block }) // before the renewal of 5s is recorded
				}
			},
		})
		if err != nil {
			t.Fatal(err)
		}
		if err := e.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		w.At(sec(10)) // the deadline of the attempt of 0s: 0 + (L+R)/2
		if e.IsLeader() {
			t.Fatal("IsLeader true at the deadline")
		}
		started := make(chan string, 1)
		e.WhenLeader(func(ctx context.Context) error {
			started <- fmt.Sprintf("fn started with context error %v, IsLeader %v", ctx.Err(), e.IsLeader())
			return nil
		}, nil)
		synctest.Wait()
		select {
		case s := <-started:
			t.Errorf("registered when IsLeader was false: %s; want no fn", s)
		default:
		}
		close(block)
		if err := e.Stop(context.Background()); err != nil {
			t.Fatal(err)
		}
	})
}

// W6: a registration's own fn or deregistered ends it with go remove() (run once: do it, then
// unregister): the remove goroutine returns once the callback has returned and the
// deregistered owed has run; nothing of the registration runs again.
func TestW6RemoveFromOwnCallbacks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t)
		a := w.node("a", 0, 0).start()
		w.At(sec(1))

		var fromFn calls
		var removeFromFn func()
		ready := make(chan struct{})
		removeFromFn = a.e.WhenLeader(func(context.Context) error {
			<-ready
			fromFn.add("fn")
			go func() {
				removeFromFn()
				fromFn.add("removed")
			}()
			fromFn.add("fn returns")
			return nil
		}, func() { fromFn.add("de") })
		close(ready)

		var fromDe calls
		var removeFromDe func()
		readyDe := make(chan struct{})
		removeFromDe = a.e.WhenLeader(func(context.Context) error {
			fromDe.add("fn")
			return nil
		}, func() {
			<-readyDe
			fromDe.add("de")
			done := make(chan struct{})
			go func() {
				removeFromDe()
				fromDe.add("removed")
				close(done)
			}()
			select {
			case <-done:
				fromDe.add("de saw remove return before its own end")
			default:
			}
			fromDe.add("de returns")
		})
		close(readyDe)

		w.At(sec(2))
		if got, want := fromFn.get(), []string{"fn", "fn returns", "de", "removed"}; !reflect.DeepEqual(got, want) {
			t.Errorf("go remove() from fn: %v; want %v", got, want)
		}
		// Leadership ends at 5s (deregistered, which removes), and comes back at 10s.
		a.faults.Set(func(f *faultStore) { f.Err = errInjected })
		w.At(sec(6))
		a.faults.Heal()
		w.At(sec(11))
		if !a.e.IsLeader() {
			t.Fatal("a does not lead again")
		}
		if got, want := fromDe.get(), []string{"fn", "de", "de returns", "removed"}; !reflect.DeepEqual(got, want) {
			t.Errorf("go remove() from deregistered: %v; want %v", got, want)
		}
		if got := fromFn.get(); len(got) != 4 {
			t.Errorf("go remove() from fn, after a new leadership: %v; want nothing more", got)
		}
	})
}

// W6: fn ends its own registration with go remove() while a remove from another goroutine
// waits for fn: both return once fn has returned and deregistered has run.
func TestW6RemoveFromFnWhileAnotherRemoveWaits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := NewLocal("a")
		defer l.Stop(context.Background())
		var c calls
		var remove func()
		registered, inFn := make(chan struct{}), make(chan struct{})
		fnRemoved := make(chan struct{})
		remove = l.WhenLeader(func(ctx context.Context) error {
			<-registered
			close(inFn)
			<-ctx.Done() // cancelled by the other goroutine's remove, which then waits for fn
			go func() {
				remove()
				c.add("fn's remove returned")
				close(fnRemoved)
			}()
			c.add("fn returns")
			return nil
		}, func() { c.add("de") })
		close(registered)
		<-inFn
		otherDone := make(chan struct{})
		go func() {
			remove()
			c.add("other returned")
			close(otherDone)
		}()
		<-otherDone
		<-fnRemoved
		got := c.get()
		if len(got) != 4 || got[0] != "fn returns" || got[1] != "de" {
			t.Errorf("calls %v; want fn returns, de, then both removes returned", got)
		}
	})
}

// W6, W9: a callback that removes another registration is not that registration's own
// callback: its remove waits, like any other caller's, until the other fn has returned and
// its deregistered has run.
func TestW6RemoveFromAnotherRegistrationsFn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := NewLocal("a")
		defer l.Stop(context.Background())
		var c calls
		otherStarted := make(chan struct{})
		removeOther := l.WhenLeader(func(ctx context.Context) error {
			close(otherStarted)
			<-ctx.Done() // cancelled by the remove below, which must then wait for this fn
			time.Sleep(time.Second)
			c.add("other fn returned")
			return nil
		}, func() { c.add("other de") })
		removed := make(chan struct{})
		l.WhenLeader(func(context.Context) error {
			<-otherStarted
			removeOther()
			c.add("remove returned")
			close(removed)
			return nil
		}, nil)
		<-removed
		if got, want := c.get(), []string{"other fn returned", "other de", "remove returned"}; !reflect.DeepEqual(got, want) {
			t.Fatalf("calls %v; want %v (a remove from another registration's fn waits)", got, want)
		}
	})
}

// W6: a goroutine started by fn is not fn: its remove waits for fn like any other caller's.
// It cancels fn's context first, so a fn that waits for that goroutine and for its context
// returns, deregistered runs, and then the goroutine's remove returns.
func TestW6RemoveFromGoroutineOfFn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := NewLocal("a")
		defer l.Stop(context.Background())
		var c calls
		var remove func()
		registered := make(chan struct{})
		remove = l.WhenLeader(func(ctx context.Context) error {
			<-registered
			done := make(chan struct{})
			go func() {
				defer close(done)
				remove()
				c.add("goroutine's remove returned")
			}()
			select {
			case <-done:
				c.add("fn saw the goroutine end")
			case <-ctx.Done():
				c.add("fn saw its context end")
			}
			return nil
		}, func() { c.add("de") })
		close(registered)
		synctest.Wait()
		want := []string{"fn saw its context end", "de", "goroutine's remove returned"}
		if got := c.get(); !reflect.DeepEqual(got, want) {
			t.Fatalf("calls %v; want %v", got, want)
		}
	})
}
