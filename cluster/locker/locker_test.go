package locker

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/leasehold/leasehold/cluster"
	"github.com/leasehold/leasehold/internal/leakcheck"
	"github.com/leasehold/leasehold/store/memory"
)

// locker returns a Locker named id over its own faultStore on the world's memory store.
func (w *world) locker(id string) (*Locker, *faultStore) {
	w.T.Helper()
	f := newFaultStore(w.Mem)
	l, err := New(Config{
		Lock: cluster.NewStoreLock(f), InstanceID: id, LeaseDuration: testL, RenewInterval: testR, Logger: quietLogger(),
	})
	if err != nil {
		w.T.Fatal(err)
	}
	return l, f
}

// holderOf returns the holder named in key's record, "" when released or missing.
func (w *world) holderOf(key string) string {
	rec, err := cluster.NewStoreLock(w.Mem).Get(context.Background(), key)
	if err != nil {
		return ""
	}
	return rec.Holder
}

func closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

func TestP0LockerConfigAndKeys(t *testing.T) {
	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{Config{}, "Config.Lock is nil"},
		{Config{Lock: cluster.NewStoreLock(memory.New()), LeaseDuration: time.Second, RenewInterval: time.Second}, "RenewInterval 1s must be positive and less than LeaseDuration 1s"},
		{Config{Lock: cluster.NewStoreLock(memory.New()), LeaseDuration: -time.Second}, "LeaseDuration -1s must be positive"},
	} {
		if _, err := New(tc.cfg); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("New(%+v) = %v, want an error saying %q", tc.cfg, err, tc.want)
		}
	}
	l, err := New(Config{Lock: cluster.NewStoreLock(memory.New()), Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	for _, acquire := range []func(context.Context, string) (*Held, error){l.Acquire, l.TryAcquire} {
		if _, err := acquire(context.Background(), ""); err == nil || !strings.Contains(err.Error(), "empty key") {
			t.Errorf("acquiring the empty key: %v, want an error naming the empty key", err)
		}
	}
}

// P1, P2: a held key whose store stops answering is lost by E5's deadline, (L+R)/2 after the
// start of its last successful renewal; one whose store fails is lost at the failed attempt
// (E4). Done closes, Context is cancelled, the Elector stops.
func TestP2AcquireThenLose(t *testing.T) {
	for _, tc := range []struct {
		name   string
		fault  func(f *faultStore)
		lostAt time.Duration
	}{
		// Renewals at 0, 5 s succeed; from 6 s calls hang: the renewal at 10 s never
		// answers, and the deadline is 5 s + (L+R)/2 = 15 s, before E3's timeout (20 s).
		{"no answer", func(f *faultStore) { f.Hang = true }, 15 * time.Second},
		// The renewal at 10 s fails: the holding ends at once (E4).
		{"error", func(f *faultStore) { f.Err = errInjected }, 10 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				w := newWorld(t)
				l, f := w.locker("a")
				h, err := l.Acquire(context.Background(), "job")
				if err != nil {
					t.Fatal(err)
				}
				if h.Key() != "job" || h.Term() == 0 {
					t.Fatalf("Key, Term = %q, %d; want job and a term", h.Key(), h.Term())
				}
				if term, ok := cluster.TermOf(h.Context()); !ok || term != h.Term() {
					t.Fatalf("cluster.TermOf(Context) = %d, %v; want %d", term, ok, h.Term())
				}
				w.At(6 * time.Second)
				f.Set(tc.fault)
				w.At(tc.lostAt - time.Millisecond)
				if closed(h.Done()) {
					t.Fatalf("Done closed before %v", tc.lostAt)
				}
				w.At(tc.lostAt)
				if !closed(h.Done()) || h.Context().Err() == nil {
					t.Fatalf("Done not closed at %v", tc.lostAt)
				}
				// The record is left as it was: it names an epoch that has ended, and another
				// Locker takes it once it sees that epoch over (P8): here the session lease's
				// release, when its run ended with the key, could not land either, so once the
				// lease has expired on the other Locker's clock, within L + R.
				if rec, _ := cluster.NewStoreLock(w.Mem).Get(context.Background(), "job"); rec.Holder != "a" || rec.Term != h.Term() {
					t.Fatalf("record at the loss: %+v, want a's, term %d", rec, h.Term())
				}
				if err := h.Release(context.Background()); err != nil {
					t.Fatalf("Release after the loss = %v, want nothing to do", err)
				}
				f.Heal()
				w.At(tc.lostAt + 3*testL)
				if l.running() {
					t.Fatal("the session lease still runs 3 L after the loss, with no key held")
				}
				b, _ := w.locker("b")
				start := w.Since()
				hb, err := b.TryAcquire(context.Background(), "job")
				if err != nil {
					t.Fatalf("TryAcquire of a key whose epoch ended: %v", err)
				}
				if took := w.Since() - start; took > testL+testR {
					t.Fatalf("took the key %v after asking, want within L + R", took)
				}
				if hb.Term() <= h.Term() {
					t.Fatalf("term %d not above the lost holding's %d", hb.Term(), h.Term())
				}
				if err := hb.Release(context.Background()); err != nil {
					t.Fatal(err)
				}
			})
		})
	}
}

// P2, P8: a key acquired again after its loss (the usual loop: work, lose the key, acquire it
// again) is taken at the session lease's next epoch, with a new term: its record, naming the
// ended epoch, is this Locker's own. The session lease, whose run ended with its last key, runs
// again at once. Release of the lost holding then leaves the new one alone.
func TestP2ReacquireAfterALoss(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t)
		l, f := w.locker("a")
		h, err := l.Acquire(context.Background(), "job")
		if err != nil {
			t.Fatal(err)
		}
		// Renewals at 0 and 5 s succeed, the one at 10 s fails: the holding ends then (E4).
		w.At(6 * time.Second)
		f.Set(func(f *faultStore) { f.Err = errInjected })
		w.At(10 * time.Second)
		if !closed(h.Done()) {
			t.Fatal("Done not closed at the failed renewal")
		}
		if holder := w.holderOf("job"); holder != "a" {
			t.Fatalf("holder after the loss = %q, want a (not released)", holder)
		}
		f.Heal()
		h2, err := l.Acquire(context.Background(), "job")
		if err != nil {
			t.Fatal(err)
		}
		if w.Since() != 10*time.Second {
			t.Fatalf("acquired again at %v, want at once (10s)", w.Since())
		}
		if h2.Term() <= h.Term() || h.IsHeld() || !h2.IsHeld() || h2.epoch <= h.epoch {
			t.Fatalf("terms %d then %d, epochs %d then %d, IsHeld %v then %v; want a new term in a new epoch held by the second only", h.Term(), h2.Term(), h.epoch, h2.epoch, h.IsHeld(), h2.IsHeld())
		}
		if err := h.Release(context.Background()); err != nil {
			t.Fatalf("Release of the lost holding: %v", err)
		}
		w.At(10*time.Second + 3*testL)
		if closed(h2.Done()) || w.holderOf("job") != "a" {
			t.Fatal("the lost holding's Release ended the new one")
		}
		if err := h2.Release(context.Background()); err != nil {
			t.Fatal(err)
		}
		if holder := w.holderOf("job"); holder != "" {
			t.Fatalf("holder after Release = %q, want none", holder)
		}
	})
}

// P2, P5: an Acquire waiting for a key the Locker holds, called before the holding is lost,
// takes the key at the session lease's next epoch.
func TestP2WaitingAcquireAfterALoss(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t)
		l, f := w.locker("a")
		h, err := l.Acquire(context.Background(), "job")
		if err != nil {
			t.Fatal(err)
		}
		got := make(chan *Held, 1)
		go func() {
			h2, err := l.Acquire(context.Background(), "job")
			if err != nil {
				t.Error(err)
			}
			got <- h2
		}()
		w.At(6 * time.Second)
		f.Set(func(f *faultStore) { f.Err = errInjected })
		w.At(10 * time.Second)
		if !closed(h.Done()) || len(got) != 0 {
			t.Fatal("want the holding lost at the failed renewal (10s), the second Acquire waiting")
		}
		f.Heal()
		w.At(15 * time.Second)
		if len(got) == 0 {
			t.Fatal("the waiting Acquire did not take the key at the session lease's next attempt (15s)")
		}
		h2 := <-got
		defer h2.Release(context.Background())
		if h2.Term() <= h.Term() {
			t.Fatalf("second holding's term %d after %d; want a new term", h2.Term(), h.Term())
		}
	})
}

// P2, P3: a TryAcquire after a loss takes the key at once, its record being this Locker's own,
// under the session lease's next epoch.
func TestP3TryAcquireAfterALoss(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t)
		l, f := w.locker("a")
		h, err := l.Acquire(context.Background(), "job")
		if err != nil {
			t.Fatal(err)
		}
		w.At(6 * time.Second)
		f.Set(func(f *faultStore) { f.Err = errInjected })
		w.At(10 * time.Second)
		if !closed(h.Done()) {
			t.Fatal("Done not closed at the failed renewal")
		}
		f.Heal()
		w.At(11 * time.Second)
		h2, err := l.TryAcquire(context.Background(), "job")
		if err != nil {
			t.Fatalf("TryAcquire after the loss: %v", err)
		}
		defer h2.Release(context.Background())
		if w.Since() != 11*time.Second {
			t.Fatalf("TryAcquire took the key at %v, want at once (11s)", w.Since())
		}
		if h2.Term() <= h.Term() {
			t.Fatalf("term %d not above the lost holding's %d", h2.Term(), h.Term())
		}
		if err := h.Release(context.Background()); err != nil {
			t.Fatalf("Release of the lost holding: %v", err)
		}
	})
}

// P1, P2: Release releases at once, and another Locker's Acquire, blocked on the key, takes
// it within R, with a larger term. Release is idempotent.
func TestP2ReleaseThenAcquireWithinR(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t)
		a, _ := w.locker("a")
		b, _ := w.locker("b")
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
		if len(got) != 0 {
			t.Fatal("b acquired a key a holds")
		}
		released := time.Now()
		if err := ha.Release(context.Background()); err != nil {
			t.Fatal(err)
		}
		if !closed(ha.Done()) {
			t.Fatal("Done not closed by Release")
		}
		hb := <-got
		if d := time.Since(released); d > testR {
			t.Fatalf("b acquired %v after the release, want within R = %v", d, testR)
		}
		if hb.Term() <= ha.Term() {
			t.Fatalf("b's term %d not above a's %d", hb.Term(), ha.Term())
		}
		if err := ha.Release(context.Background()); err != nil {
			t.Fatalf("second Release: %v", err)
		}
		if h := w.holderOf("job"); h != "b" {
			t.Fatalf("holder after a's second Release = %q, want b", h)
		}
		if err := hb.Release(context.Background()); err != nil {
			t.Fatal(err)
		}
		if h := w.holderOf("job"); h != "" {
			t.Fatalf("holder after b's Release = %q, want none", h)
		}
	})
}

// P3: TryAcquire against a live holder gives up with ErrHeld within about R (the holder's next
// renewal), leaving nothing held and no election running.
func TestP3TryAcquireLiveHolder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t)
		a, _ := w.locker("a")
		b, _ := w.locker("b")
		ha, err := a.Acquire(context.Background(), "job")
		if err != nil {
			t.Fatal(err)
		}
		w.At(time.Second)
		tr := leakcheck.New()
		var herr error
		tr.Do(func() { _, herr = b.TryAcquire(context.Background(), "job") })
		if !errors.Is(herr, ErrHeld) || !strings.Contains(herr.Error(), `"job"`) {
			t.Fatalf("TryAcquire = %v, want ErrHeld naming the key", herr)
		}
		if d := w.Since(); d > time.Second+testR {
			t.Fatalf("TryAcquire gave up at %v, want within R of its start (1s)", d)
		}
		synctest.Wait()
		if left := tr.Running(); len(left) != 0 {
			t.Fatalf("TryAcquire left goroutines running:\n%s", strings.Join(left, "\n\n"))
		}
		w.At(w.Since() + 3*testL)
		if closed(ha.Done()) || w.holderOf("job") != "a" {
			t.Fatalf("a lost the key after a failed TryAcquire (holder %q)", w.holderOf("job"))
		}
		if err := ha.Release(context.Background()); err != nil {
			t.Fatal(err)
		}
	})
}

// P3: TryAcquire takes over a crashed holder's record, never renewed, within L + R of its
// write, with a larger term; a store that does not answer returns its error.
func TestP3TryAcquireCrashedHolder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t)
		dead, err := cluster.NewStoreLock(w.Mem).Create(context.Background(), "job",
			cluster.Record{Holder: "dead", Term: 7, AcquiredAt: time.Now(), RenewedAt: time.Now(), Duration: testL})
		if err != nil {
			t.Fatal(err)
		}
		b, f := w.locker("b")
		h, err := b.TryAcquire(context.Background(), "job")
		if err != nil {
			t.Fatalf("TryAcquire on a crashed holder's record: %v", err)
		}
		if d := w.Since(); d < testL || d > testL+testR {
			t.Fatalf("took the crashed holder's record at %v, want in [L, L+R]", d)
		}
		if h.Term() <= dead.Term {
			t.Fatalf("term %d not above the crashed holder's %d", h.Term(), dead.Term)
		}
		if err := h.Release(context.Background()); err != nil {
			t.Fatal(err)
		}
		f.Set(func(f *faultStore) { f.Err = errInjected })
		if _, err := b.TryAcquire(context.Background(), "job"); !errors.Is(err, errInjected) || errors.Is(err, ErrHeld) {
			t.Fatalf("TryAcquire on a failing store = %v, want the store's error", err)
		}
	})
}

// P1: an Acquire blocked on a held key returns ctx's error when ctx ends, leaving no
// goroutine and no write behind: its fence stops with it, and a Locker that only waited runs
// no session lease (P7).
func TestP1AcquireCancelled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t)
		a, _ := w.locker("a")
		b, _ := w.locker("b")
		ha, err := a.Acquire(context.Background(), "job")
		if err != nil {
			t.Fatal(err)
		}
		rev, _ := cluster.NewStoreLock(w.Mem).Get(context.Background(), "job")
		ctx, cancel := context.WithCancel(context.Background())
		tr := leakcheck.New()
		res := make(chan error, 1)
		tr.Do(func() {
			go func() {
				_, err := b.Acquire(ctx, "job")
				res <- err
			}()
		})
		w.At(3 * time.Second)
		if len(res) != 0 {
			t.Fatalf("Acquire returned while the key is held: %v", <-res)
		}
		cancel()
		if err := <-res; !errors.Is(err, context.Canceled) {
			t.Fatalf("Acquire after cancel = %v, want context.Canceled", err)
		}
		if d := w.Since(); d != 3*time.Second {
			t.Fatalf("Acquire returned at %v, want at once (3s)", d)
		}
		synctest.Wait()
		if left := tr.Running(); len(left) != 0 {
			t.Fatalf("Acquire left goroutines running:\n%s", strings.Join(left, "\n\n"))
		}
		if rec, _ := cluster.NewStoreLock(w.Mem).Get(context.Background(), "job"); rec.Holder != "a" || rec.Term != rev.Term {
			t.Fatalf("record after the cancelled Acquire: %+v, want a's, term %d", rec, rev.Term)
		}
		if err := ha.Release(context.Background()); err != nil {
			t.Fatal(err)
		}
	})
}

// P4: 500 keys held by one Locker over one memory store are all kept over several L, and each
// re-acquisition of a key gets a larger term.
func TestP4ManyKeysAndTerms(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t)
		l, _ := w.locker("a")
		const n = 500
		held := make([]*Held, n)
		for i := range held {
			h, err := l.Acquire(context.Background(), fmt.Sprintf("job-%d", i))
			if err != nil {
				t.Fatal(err)
			}
			held[i] = h
		}
		w.At(4 * testL)
		for i, h := range held {
			if closed(h.Done()) {
				t.Fatalf("key %s lost", h.Key())
			}
			if got := w.holderOf(h.Key()); got != "a" {
				t.Fatalf("key %d: holder %q, want a", i, got)
			}
		}
		for _, h := range held {
			if err := h.Release(context.Background()); err != nil {
				t.Fatal(err)
			}
		}
		last := held[0].Term()
		for range 3 {
			h, err := l.Acquire(context.Background(), "job-0")
			if err != nil {
				t.Fatal(err)
			}
			if h.Term() <= last {
				t.Fatalf("re-acquired term %d, not above %d", h.Term(), last)
			}
			last = h.Term()
			if err := h.Release(context.Background()); err != nil {
				t.Fatal(err)
			}
		}
	})
}

// P5: one Locker holds a key once at a time. A second Acquire of a key it holds waits for the
// Release, then takes the key at once, with a larger term; TryAcquire returns ErrHeld at
// once; no two Electors of the process ever share the key (E12's warning is never logged).
func TestP5OneKeyOnceInALocker(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t)
		var logs logCapture
		l, err := New(Config{
			Lock: cluster.NewStoreLock(w.Mem), InstanceID: "a", LeaseDuration: testL, RenewInterval: testR, Logger: logs.Logger(),
		})
		if err != nil {
			t.Fatal(err)
		}
		first, err := l.Acquire(context.Background(), "job")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := l.TryAcquire(context.Background(), "job"); !errors.Is(err, ErrHeld) || w.Since() != 0 {
			t.Fatalf("TryAcquire of a key the Locker holds = %v at %v, want ErrHeld at once", err, w.Since())
		}
		ctx, cancel := context.WithCancel(context.Background())
		cancelled := make(chan error, 1)
		go func() {
			_, err := l.Acquire(ctx, "job")
			cancelled <- err
		}()
		got := make(chan *Held, 1)
		go func() {
			h, err := l.Acquire(context.Background(), "job")
			if err != nil {
				t.Error(err)
			}
			got <- h
		}()
		w.At(2 * testL)
		cancel()
		if err := <-cancelled; !errors.Is(err, context.Canceled) {
			t.Fatalf("waiting Acquire after cancel = %v, want context.Canceled", err)
		}
		if len(got) != 0 || closed(first.Done()) {
			t.Fatal("a second holding of the key while the first lasts")
		}
		released := w.Since()
		if err := first.Release(context.Background()); err != nil {
			t.Fatal(err)
		}
		second := <-got
		if w.Since() != released {
			t.Fatalf("second Acquire took the key at %v, want at the release (%v)", w.Since(), released)
		}
		if second.Term() <= first.Term() {
			t.Fatalf("second term %d not above the first's %d", second.Term(), first.Term())
		}
		if err := second.Release(context.Background()); err != nil {
			t.Fatal(err)
		}
		if twins := logs.Find("leasehold: another process uses this instance ID: following its leadership; give each process an ID of its own"); len(twins) != 0 {
			t.Fatalf("two Electors of the Locker shared the key: %v", twins)
		}
	})
}

// P2, P9, W7: a holding ends at its session lease's deadline even when the session's goroutine
// is late to notice (a paused process, a starved one): Done is still open then, and IsHeld
// already says false, with no timer of the key's own.
// The fault campaign found it: a worker acting while its holding's Context was live, just
// resumed from SIGSTOP, stamped actions after its leadership's deadline.
func TestP2IsHeldAtTheDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t)
		succeeded := 0
		late := make(chan struct{})
		var l *Locker
		l, err := New(Config{
			Lock: cluster.NewStoreLock(newFaultStore(w.Mem)), InstanceID: "a", LeaseDuration: testL, RenewInterval: testR, Logger: quietLogger(),
			// The session lease's renewal at R answers, and its event holds up the session's
			// goroutine until the test lets it go: the deadline of the attempt at 0, (L+R)/2,
			// passes meanwhile.
			Observer: func(ev cluster.Event) {
				if ev.Kind == cluster.AttemptSucceeded && ev.Lease == l.SessionLease() {
					if succeeded++; succeeded == 2 {
						<-late
					}
				}
			},
		})
		if err != nil {
			t.Fatal(err)
		}
		h, err := l.Acquire(context.Background(), "job")
		if err != nil {
			t.Fatal(err)
		}
		letGo := sync.OnceFunc(func() { close(late) })
		defer func() {
			letGo()
			_ = h.Release(context.Background()) // after the loss, only ends the election
		}()
		deadline := (testL + testR) / 2
		w.At(deadline - time.Millisecond)
		if !h.IsHeld() || closed(h.Done()) {
			t.Fatalf("at %v: IsHeld %v, Done closed %v; want held", deadline-time.Millisecond, h.IsHeld(), closed(h.Done()))
		}
		w.At(deadline)
		if closed(h.Done()) {
			t.Fatal("Done closed while the session's goroutine was held up: the test shows nothing")
		}
		if h.IsHeld() {
			t.Fatalf("at the deadline %v: IsHeld true while the lease may have expired for the others (W7)", deadline)
		}
		letGo()
		w.At(deadline + time.Millisecond)
		if !closed(h.Done()) || h.IsHeld() {
			t.Fatalf("once the election goroutine runs: Done closed %v, IsHeld %v; want lost", closed(h.Done()), h.IsHeld())
		}
	})
}

// P6: a key lost while the store did not answer, its record left naming the ended epoch, is
// the Locker's own: acquiring it again takes it at the session lease's next epoch, with a new
// term, rather than following it for L as another process's.
func TestP6ReacquireAfterAnUnreleasedLoss(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t)
		l, f := w.locker("a")
		h, err := l.Acquire(context.Background(), "job")
		if err != nil {
			t.Fatal(err)
		}
		// Renewals at 0 and 5 s succeed; from 6 s calls hang, so the holding is lost at its
		// deadline, 5 s + (L+R)/2 = 15 s.
		w.At(6 * time.Second)
		f.Set(func(f *faultStore) { f.Hang = true })
		w.At(15 * time.Second)
		if !closed(h.Done()) {
			t.Fatal("Done not closed at the deadline")
		}
		if err := h.Release(context.Background()); err != nil {
			t.Fatalf("Release after the loss = %v, want nothing to do", err)
		}
		f.Heal()
		if rec, err := cluster.NewStoreLock(w.Mem).Get(context.Background(), "job"); err != nil || rec.Holder != "a" || rec.Term != h.Term() {
			t.Fatalf("record after the loss = %+v, %v; want still a's, term %d", rec, err, h.Term())
		}
		start := w.Since()
		h2, err := l.Acquire(context.Background(), "job")
		if err != nil {
			t.Fatal(err)
		}
		defer h2.Release(context.Background())
		// The session lease's attempt in flight since 10 s times out at 20 s (E3); the next
		// one leads.
		if took := w.Since() - start; took >= testL {
			t.Fatalf("acquiring the Locker's own record took %v, want the session lease's next epoch, before L", took)
		}
		if h2.Term() <= h.Term() {
			t.Fatalf("term of the new holding = %d, want above %d (E11)", h2.Term(), h.Term())
		}
	})
}
