package locker

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/leasehold/leasehold/cluster"
)

// running reports whether the Locker's session lease runs, or is stopping.
func (l *Locker) running() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.sess != nil || l.ending != nil
}

// countingLock counts the writes of a Lock, by record, and fails the writes a test asks it
// to, without applying them.
type countingLock struct {
	cluster.Lock
	mu     sync.Mutex
	writes map[string]int
	fail   map[string]int // name: how many of its next Updates fail
}

func newCountingLock(inner cluster.Lock) *countingLock {
	return &countingLock{Lock: inner, writes: make(map[string]int), fail: make(map[string]int)}
}

func (c *countingLock) count(name string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.writes[name]++
	if c.fail[name] > 0 {
		c.fail[name]--
		return fmt.Errorf("%q: %w", name, errInjected)
	}
	return nil
}

func (c *countingLock) Create(ctx context.Context, name string, r cluster.Record) (cluster.Record, error) {
	if err := c.count(name); err != nil {
		return cluster.Record{}, err
	}
	return c.Lock.Create(ctx, name, r)
}

func (c *countingLock) Update(ctx context.Context, name string, r cluster.Record) (cluster.Record, error) {
	if err := c.count(name); err != nil {
		return cluster.Record{}, err
	}
	return c.Lock.Update(ctx, name, r)
}

// total returns the writes counted so far: of the records whose name has prefix, and of the
// others.
func (c *countingLock) total(prefix string) (with, without int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for name, n := range c.writes {
		if strings.HasPrefix(name, prefix) {
			with += n
		} else {
			without += n
		}
	}
	return with, without
}

func (w *world) countingLocker(id string) (*Locker, *countingLock, *faultStore) {
	w.T.Helper()
	f := newFaultStore(w.Mem)
	c := newCountingLock(cluster.NewStoreLock(f))
	l, err := New(Config{Lock: c, InstanceID: id, LeaseDuration: testL, RenewInterval: testR, Logger: quietLogger()})
	if err != nil {
		w.T.Fatal(err)
	}
	return l, c, f
}

// P7: the session lease's name is valid for every Lock (a Kubernetes Lease's name is a DNS
// subdomain), whatever the instance ID, and two Lockers of one ID have two.
func TestP7SessionLeaseName(t *testing.T) {
	dns := regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)
	seen := map[string]bool{}
	for _, id := range []string{"a", "Host_Name-12/x", strings.Repeat("é", 300), "a"} {
		l, err := New(Config{Lock: newCountingLock(nil), InstanceID: id})
		if err != nil {
			t.Fatal(err)
		}
		name := l.SessionLease()
		if !dns.MatchString(name) || len(name) > 253 {
			t.Errorf("session lease of %q: %q, not a DNS subdomain", id, name)
		}
		if seen[name] {
			t.Errorf("two Lockers share the session lease %q", name)
		}
		seen[name] = true
	}
}

// P7: a Locker writes one record per R however many keys it holds: its session lease's
// renewal. Each key's record is written once, when taken, and once more when released.
func TestP7OneSessionWritePerR(t *testing.T) {
	for _, n := range []int{10, 1000} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				w := newWorld(t)
				l, c, _ := w.countingLocker("a")
				held := make([]*Held, n)
				for i := range held {
					h, err := l.Acquire(context.Background(), fmt.Sprintf("job-%d", i))
					if err != nil {
						t.Fatal(err)
					}
					held[i] = h
				}
				w.At(time.Second)
				sess0, keys0 := c.total(l.SessionLease())
				if keys0 != n {
					t.Fatalf("%d writes of the keys' records to take %d keys, want %d", keys0, n, n)
				}
				const rounds = 12
				w.At(time.Second + rounds*testR)
				sess, keys := c.total(l.SessionLease())
				if keys != keys0 {
					t.Fatalf("%d writes of held keys' records in %d R, want none", keys-keys0, rounds)
				}
				if got := sess - sess0; got != rounds {
					t.Fatalf("%d writes of the session lease in %d R, want %d", got, rounds, rounds)
				}
				for _, h := range held {
					if !h.IsHeld() || closed(h.Done()) {
						t.Fatalf("key %s lost", h.Key())
					}
				}
				for _, h := range held {
					if err := h.Release(context.Background()); err != nil {
						t.Fatal(err)
					}
				}
				if _, keys := c.total(l.SessionLease()); keys != 2*n {
					t.Fatalf("%d writes of the keys' records after their release, want %d", keys, 2*n)
				}
			})
		})
	}
}

// P9: the keys of an epoch are lost together when it ends: at the failed renewal (E4), or at
// the deadline (L+R)/2 after the start of the last successful one (E5), from the session's
// goroutine. Holding keys costs no goroutine per key.
func TestP9KeysLostTogether(t *testing.T) {
	for _, tc := range []struct {
		name   string
		fault  func(f *faultStore)
		lostAt time.Duration
	}{
		{"no answer", func(f *faultStore) { f.Hang = true }, 15 * time.Second},
		{"error", func(f *faultStore) { f.Err = errInjected }, 10 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				w := newWorld(t)
				l, f := w.locker("a")
				acquire := func(from, to int) []*Held {
					var hs []*Held
					for i := from; i < to; i++ {
						h, err := l.Acquire(context.Background(), fmt.Sprintf("job-%d", i))
						if err != nil {
							t.Fatal(err)
						}
						hs = append(hs, h)
					}
					return hs
				}
				held := acquire(0, 10)
				synctest.Wait()
				before := bubbleGoroutines()
				if before < 2 {
					t.Fatalf("%d goroutines counted in the bubble, with the test's and the session's", before)
				}
				held = append(held, acquire(10, 2000)...)
				synctest.Wait()
				if after := bubbleGoroutines(); after != before {
					t.Fatalf("%d goroutines holding 10 keys, %d holding 2,000: want no goroutine per key", before, after)
				}
				w.At(6 * time.Second)
				f.Set(tc.fault)
				w.At(tc.lostAt - time.Millisecond)
				for _, h := range held {
					if closed(h.Done()) || !h.IsHeld() {
						t.Fatalf("key %s lost before %v", h.Key(), tc.lostAt)
					}
				}
				w.At(tc.lostAt)
				for _, h := range held {
					if !closed(h.Done()) || h.IsHeld() {
						t.Fatalf("key %s still held at %v", h.Key(), tc.lostAt)
					}
				}
				f.Heal()
				w.At(tc.lostAt + 2*testL)
				if l.running() {
					t.Fatal("the session lease still runs 2 L after its last key was lost")
				}
			})
		})
	}
}

// P8: a crashed holder's keys are taken once its session lease has expired on the contender's
// clock: not before L after its last renewal, within L + R of it; through one fence for all
// of them, not a read of each key per R.
func TestP8CrashedHoldersKeysWithinLPlusR(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t)
		a, fa := w.locker("a")
		b, cb, _ := w.countingLocker("b")
		const n = 50
		var aTerms [n]uint64
		for i := range n {
			h, err := a.Acquire(context.Background(), fmt.Sprintf("job-%d", i))
			if err != nil {
				t.Fatal(err)
			}
			aTerms[i] = h.Term()
		}
		type took struct {
			h  *Held
			at time.Duration
		}
		got := make(chan took, n)
		w.At(time.Second)
		for i := range n {
			go func() {
				h, err := b.Acquire(context.Background(), fmt.Sprintf("job-%d", i))
				if err != nil {
					t.Error(err)
					return
				}
				got <- took{h, w.Since()}
			}()
		}
		// a's renewal at 5 s is its last: it crashes (writes nothing more) at 6 s.
		w.At(6 * time.Second)
		fa.Set(func(f *faultStore) { f.Err = errInjected })
		lastRenewal := 5 * time.Second
		w.At(12 * time.Second)
		b.mu.Lock()
		fences := len(b.fences)
		var refs int
		for _, f := range b.fences {
			refs = f.refs
		}
		b.mu.Unlock()
		if fences != 1 || refs != n {
			t.Fatalf("b waits on %d fences (%d users), want one for a's session lease, used by the %d keys", fences, refs, n)
		}
		_, keyWrites := cb.total(b.SessionLease())
		if keyWrites != 0 {
			t.Fatalf("b wrote %d key records while a's session lease lived", keyWrites)
		}
		w.At(lastRenewal + testL + testR)
		if len(got) != n {
			t.Fatalf("%d of a's %d keys taken by L + R after its last renewal", len(got), n)
		}
		for range n {
			tk := <-got
			var i int
			fmt.Sscanf(tk.h.Key(), "job-%d", &i)
			if tk.at < lastRenewal+testL {
				t.Errorf("key %s taken at %v, before L after a's last renewal (%v)", tk.h.Key(), tk.at, lastRenewal)
			}
			if tk.h.Term() <= aTerms[i] {
				t.Errorf("key %s: term %d not above a's %d", tk.h.Key(), tk.h.Term(), aTerms[i])
			}
			if err := tk.h.Release(context.Background()); err != nil {
				t.Fatal(err)
			}
		}
		fa.Heal()
	})
}

// P8: with a Lock that watches (the memory store's), a released key is taken at once by an
// Acquire that waits for it; without, at the waiter's next read, within R
// (TestP2ReleaseThenAcquireWithinR).
func TestP8ReleasedKeyTakenAtOnceWithAWatch(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t)
		newLocker := func(id string) *Locker {
			l, err := New(Config{Lock: cluster.NewStoreLock(w.Mem), InstanceID: id, LeaseDuration: testL, RenewInterval: testR, Logger: quietLogger()})
			if err != nil {
				t.Fatal(err)
			}
			return l
		}
		a, b := newLocker("a"), newLocker("b")
		ha, err := a.Acquire(context.Background(), "job")
		if err != nil {
			t.Fatal(err)
		}
		got := make(chan *Held, 1)
		go func() {
			hb, err := b.Acquire(context.Background(), "job")
			if err != nil {
				t.Error(err)
			}
			got <- hb
		}()
		w.At(7 * time.Second)
		if err := ha.Release(context.Background()); err != nil {
			t.Fatal(err)
		}
		w.At(7 * time.Second)
		if len(got) == 0 {
			t.Fatal("b did not take the released key at once")
		}
		hb := <-got
		if hb.Term() <= ha.Term() {
			t.Fatalf("b's term %d not above a's %d", hb.Term(), ha.Term())
		}
		if err := hb.Release(context.Background()); err != nil {
			t.Fatal(err)
		}
	})
}

// P6: a release whose write fails does not leave the key stuck while the session lease lives:
// it is retried every R, the key staying the Locker's turn meanwhile (P5), and another
// Locker's Acquire takes the key once it lands. The session lease, and the other keys, live on.
func TestP6LostReleaseRetried(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t)
		a, ca, _ := w.countingLocker("a")
		b, _ := w.locker("b")
		other, err := a.Acquire(context.Background(), "other")
		if err != nil {
			t.Fatal(err)
		}
		ha, err := a.Acquire(context.Background(), "job")
		if err != nil {
			t.Fatal(err)
		}
		got := make(chan *Held, 1)
		go func() {
			hb, err := b.Acquire(context.Background(), "job")
			if err != nil {
				t.Error(err)
			}
			got <- hb
		}()
		w.At(7 * time.Second)
		ca.mu.Lock()
		ca.fail["job"] = 2 // the release's write, and the one it retries at once
		ca.mu.Unlock()
		if err := ha.Release(context.Background()); !errors.Is(err, errInjected) {
			t.Fatalf("Release whose write failed = %v, want its error", err)
		}
		if _, err := a.TryAcquire(context.Background(), "job"); !errors.Is(err, ErrHeld) {
			t.Fatalf("TryAcquire while the release is retried = %v, want ErrHeld (P5)", err)
		}
		// Retried at 12 s; b reads every R (at 15 s at the latest).
		w.At(7*time.Second + 2*testR)
		if len(got) == 0 {
			t.Fatalf("b did not take the key within 2 R of a release whose first write failed (holder %q)", w.holderOf("job"))
		}
		hb := <-got
		if hb.Term() <= ha.Term() {
			t.Fatalf("b's term %d not above a's %d", hb.Term(), ha.Term())
		}
		if !other.IsHeld() {
			t.Fatal("a lost its other key")
		}
		for _, h := range []*Held{hb, other} {
			if err := h.Release(context.Background()); err != nil {
				t.Fatal(err)
			}
		}
	})
}

// bubbleGoroutines counts the goroutines of synctest bubbles: the test's own and the Lockers'.
// Not runtime.NumGoroutine, which counts the process's, among them those of earlier tests still
// ending, so that a count could drop between two samples with nothing of the test's ended.
func bubbleGoroutines() int {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	count := 0
	for _, line := range strings.Split(string(buf), "\n") {
		if strings.HasPrefix(line, "goroutine ") && strings.Contains(line, "synctest bubble") {
			count++
		}
	}
	return count
}
