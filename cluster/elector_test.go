package cluster

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/leasehold/leasehold/store"
	"github.com/leasehold/leasehold/store/memory"
)

func TestE0Validation(t *testing.T) {
	lock := NewStoreLock(memory.New())
	for _, tc := range []struct {
		name string
		cfg  ElectorConfig
		want string // in the error
	}{
		{"nil lock", ElectorConfig{}, "Lock is nil"},
		{"negative L", ElectorConfig{Lock: lock, LeaseDuration: -time.Second}, "LeaseDuration -1s must be positive"},
		{"negative R", ElectorConfig{Lock: lock, RenewInterval: -time.Second}, "RenewInterval -1s must be positive"},
		{"R equals L", ElectorConfig{Lock: lock, LeaseDuration: time.Second, RenewInterval: time.Second}, "RenewInterval 1s must be positive and less than LeaseDuration 1s"},
		{"R above L", ElectorConfig{Lock: lock, LeaseDuration: time.Second, RenewInterval: 2 * time.Second}, "less than LeaseDuration 1s"},
		{"R above default L", ElectorConfig{Lock: lock, RenewInterval: 20 * time.Second}, "less than LeaseDuration 15s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, err := NewElector(tc.cfg)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("NewElector: got %v, %v; want an error containing %q", e, err, tc.want)
			}
		})
	}
	t.Run("defaults", func(t *testing.T) {
		e, err := NewElector(ElectorConfig{Lock: lock})
		if err != nil {
			t.Fatal(err)
		}
		if e.LeaseDuration() != 15*time.Second || e.RenewInterval() != 5*time.Second || e.LeaseName() != "leader" {
			t.Fatalf("defaults: L=%v R=%v name=%q; want 15s 5s leader", e.LeaseDuration(), e.RenewInterval(), e.LeaseName())
		}
		if id := e.InstanceID(); id == "" || strings.Count(id, "-") < 2 {
			t.Fatalf("default instance ID %q: want <host>-<pid>-<random>", id)
		}
		e2, _ := NewElector(ElectorConfig{Lock: lock})
		if e2.InstanceID() == e.InstanceID() {
			t.Fatalf("two electors got the same default ID %q", e.InstanceID())
		}
	})
}

// E1: an attempt at start, then every R, start to start; an attempt slower than R delays the
// next one instead of overlapping it.
func TestE1AttemptSchedule(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t)
		a := w.node("a", 0, 0).start()
		w.At(sec(21))
		starts := func() []time.Duration {
			var out []time.Duration
			for _, ev := range a.eventsOf(AttemptSucceeded) {
				out = append(out, w.Rel(ev.Time)-ev.Duration)
			}
			return out
		}
		if got := starts(); !reflect.DeepEqual(got, ds(0, sec(5), sec(10), sec(15), sec(20))) {
			t.Fatalf("attempt starts %v; want 0s 5s 10s 15s 20s", got)
		}
		for _, ev := range a.eventsOf(AttemptSucceeded) {
			if ev.Holder != "a" || ev.Term != 1 {
				t.Fatalf("attempt event %+v; want holder a, term 1", ev)
			}
		}

		// Each store call now takes 6 s: a renewal (one write on the revision held, E10) takes
		// 6 s > R.
		a.faults.Set(func(f *faultStore) { f.Latency = 6 * time.Second })
		a.mu.Lock()
		a.events = nil
		a.mu.Unlock()
		w.At(sec(45))
		if got := starts(); !reflect.DeepEqual(got, ds(sec(25), sec(31), sec(37))) {
			t.Fatalf("slow attempt starts %v; want 25s 31s 37s (each right after the previous one)", got)
		}
		// Each answer comes 6 s after its attempt's start, after the deadline of the leadership
		// it renews (5 s after the previous start + (L+R)/2): that leadership ends, and the
		// answer never starts another on its term (E11); the leaderships that follow each get a
		// new one.
		var terms []uint64
		for _, ev := range a.eventsOf(BecameLeader) {
			terms = append(terms, ev.Term)
		}
		if len(terms) == 0 || terms[0] <= 1 {
			t.Fatalf("terms of the leaderships with slow answers %v; want at least one, above 1", terms)
		}
		for i := 1; i < len(terms); i++ {
			if terms[i] <= terms[i-1] {
				t.Fatalf("terms of the leaderships with slow answers %v; want them strictly increasing", terms)
			}
		}
	})
}

// E2: the record's states and what an attempt does with each.
func TestE2RecordStates(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t)
		a := w.node("a", 0, 0).start()
		w.At(0)
		rec := w.record()
		if rec["holder"] != "a" || rec["term"] != 1.0 {
			t.Fatalf("absent record: created %v; want holder a, term 1", rec)
		}
		rev := rec["revision"]
		w.At(sec(5))
		rec = w.record()
		if rec["holder"] != "a" || rec["term"] != 1.0 || rec["revision"] == rev {
			t.Fatalf("held by self: %v; want renewed (holder a, term 1, new revision)", rec)
		}

		// Released (empty holder): the next attempt takes over with term + 1.
		b := w.node("b", 0, 0).start() // b's attempts at 5, 10, ...
		w.At(sec(6))
		if err := a.e.Stop(context.Background()); err != nil {
			t.Fatal(err)
		}
		if rec := w.record(); rec["holder"] != "" {
			t.Fatalf("after a's Stop the record is %v; want holder \"\"", rec)
		}
		w.At(sec(10))
		if rec := w.record(); rec["holder"] != "b" || rec["term"] != 2.0 {
			t.Fatalf("released record after b's attempt: %v; want holder b, term 2", rec)
		}
		if !b.e.IsLeader() {
			t.Fatal("b does not lead after taking over a released lease")
		}
	})
}

// E2: two instances attempting at the same instant on an absent record: exactly one wins,
// the other follows.
func TestE2ConcurrentCreateOneWins(t *testing.T) {
	for i := range 20 {
		synctest.Test(t, func(t *testing.T) {
			w := newWorld(t)
			nodes := []*node{w.node("a", 0, 0), w.node("b", 0, 0), w.node("c", 0, 0)}
			for _, n := range nodes {
				n.start()
			}
			for _, d := range []float64{0, 5, 10, 60} {
				w.At(sec(d))
				leaders := 0
				for _, n := range nodes {
					if n.e.IsLeader() {
						leaders++
					}
				}
				if leaders != 1 {
					t.Fatalf("round %d at %vs: %d leaders; want exactly 1", i, d, leaders)
				}
			}
		})
	}
}

// E2, E4, E10: a compare-and-swap that loses a race is a failed attempt: the leader stops
// leading at once. (Its renewal on the revision it holds conflicts first; the attempt reads
// once and writes on what it read, and that write loses the race too.)
func TestE2LostRaceIsAFailure(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t)
		a := w.node("a", 0, 0).start()
		w.At(sec(1))
		n := 0
		a.faults.Set(func(f *faultStore) {
			f.BeforeWrite = func() {
				// Another writer changes the record's revision just before each of a's writes.
				n++
				_ = w.Mem.Patch(context.Background(), "cluster:leader", map[string]any{"revision": fmt.Sprint("other", n)}, nil)
			}
		})
		w.At(sec(5))
		if a.e.IsLeader() {
			t.Fatal("a still leads after losing the race at 5s")
		}
		stops := a.eventsOf(StoppedLeading)
		if len(stops) != 1 || stops[0].Reason != ReasonConflict || w.Rel(stops[0].Time) != sec(5) {
			t.Fatalf("stopped-leading events %v; want one at 5s with reason conflict", stops)
		}
		if !errors.Is(stops[0].Err, ErrConflict) {
			t.Fatalf("stop error %v; want ErrConflict", stops[0].Err)
		}
		if got := a.deTimes(); len(got) != 1 || w.Rel(got[0]) != sec(5) {
			t.Fatalf("deregistered at %v; want once at 5s", got)
		}
		a.faults.Set(func(f *faultStore) { f.BeforeWrite = nil }) // let Stop release
	})
}

// E3: an attempt with no answer within L - R fails at that instant.
func TestE3AttemptTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t)
		a := w.node("a", 0, 0).start()
		w.At(0)
		b := w.node("b", 0, 0).start()
		w.At(sec(1))
		b.faults.Set(func(f *faultStore) { f.Hang = true })
		w.At(sec(16))
		fails := b.eventsOf(AttemptFailed)
		if len(fails) != 1 || fails[0].Reason != ReasonTimeout || w.Rel(fails[0].Time) != sec(15) {
			t.Fatalf("b's failed attempts %v; want one timeout at 15s (attempt at 5s + L-R)", fails)
		}
		// A lock that ignores its context: the attempt still counts as failed at L-R, and no
		// other attempt starts while it is in flight (attempts never overlap).
		b.faults.Set(func(f *faultStore) { f.Hang, f.Ignore = true, true })
		w.At(sec(40))
		calls := b.faults.Calls
		before := calls()
		w.At(sec(100))
		if got := calls(); got != before {
			t.Fatalf("b made %d store calls while an attempt was stuck; want 0", got-before)
		}
		b.faults.Heal()
		w.At(sec(106))
		if calls() == before {
			t.Fatal("b made no attempt after the stuck one returned")
		}
		if !a.e.IsLeader() || b.e.IsLeader() {
			t.Fatalf("leaders: a %v, b %v; want a only", a.e.IsLeader(), b.e.IsLeader())
		}
	})
}

// E4: a leader whose attempt fails with an error stops leading at once, not at its deadline.
func TestE4LeaderStopsAtOnceOnError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t)
		a := w.node("a", 0, 0).start()
		w.At(sec(1))
		a.faults.Set(func(f *faultStore) { f.Err = errInjected })
		w.At(sec(5))
		if a.e.IsLeader() {
			t.Fatal("a leads after a failed attempt at 5s")
		}
		stops := a.eventsOf(StoppedLeading)
		if len(stops) != 1 || w.Rel(stops[0].Time) != sec(5) || stops[0].Reason != ReasonError || !errors.Is(stops[0].Err, errInjected) {
			t.Fatalf("stopped leading %v; want at 5s, reason error, the injected error", stops)
		}
		if got := a.deTimes(); len(got) != 1 || w.Rel(got[0]) != sec(5) {
			t.Fatalf("deregistered ran at %v; want once at 5s", got)
		}
		// Healed: it leads again at its next attempt, the record being held by itself.
		a.faults.Heal()
		w.At(sec(10))
		if !a.e.IsLeader() {
			t.Fatal("a does not lead again after the store healed")
		}
	})
}

// E4: a leader that finds the record held by another stops leading at once.
func TestE4LeaderStopsWhenTaken(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t)
		a := w.node("a", 0, 0).start()
		w.At(sec(1))
		if err := w.Mem.Patch(context.Background(), "cluster:leader", map[string]any{"holder": "intruder", "revision": "x"}, nil); err != nil {
			t.Fatal(err)
		}
		w.At(sec(5))
		stops := a.eventsOf(StoppedLeading)
		if a.e.IsLeader() || len(stops) != 1 || stops[0].Reason != ReasonTakenBy || w.Rel(stops[0].Time) != sec(5) {
			t.Fatalf("leader %v, stops %v; want stopped at 5s, reason taken", a.e.IsLeader(), stops)
		}
	})
}

// E5: a leader whose store hangs stops leading exactly (L+R)/2 after the start of its last
// successful attempt, while its attempt is still pending.
func TestE5DeadlineWhileAttemptPending(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t)
		a := w.node("a", 0, 0).start()
		w.At(sec(6)) // last successful attempt: the one at 5s
		a.faults.Set(func(f *faultStore) { f.Hang = true })
		w.At(sec(15) - time.Nanosecond)
		if !a.e.IsLeader() {
			t.Fatal("a stopped leading before 15s")
		}
		w.At(sec(15))
		if a.e.IsLeader() {
			t.Fatal("a still leads at 15s = 5s + (L+R)/2")
		}
		stops := a.eventsOf(StoppedLeading)
		if len(stops) != 1 || w.Rel(stops[0].Time) != sec(15) || stops[0].Reason != ReasonDeadline {
			t.Fatalf("stopped leading %v; want at 15s with reason deadline", stops)
		}
		if got := a.deTimes(); len(got) != 1 || w.Rel(got[0]) != sec(15) {
			t.Fatalf("deregistered at %v; want 15s", got)
		}
		// The attempt started at 10s is still pending at 15s: it times out at 20s (E3).
		fails := a.eventsOf(AttemptFailed)
		if len(fails) != 0 {
			t.Fatalf("failed attempts before 20s: %v", fails)
		}
		w.At(sec(20))
		if fails := a.eventsOf(AttemptFailed); len(fails) != 1 || fails[0].Reason != ReasonTimeout {
			t.Fatalf("failed attempts at 20s: %v; want the timeout of the attempt of 10s", fails)
		}
	})
}

// E5: an attempt that succeeds after its own deadline does not make the instance lead.
func TestE5LateSuccessDoesNotLead(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t)
		// L = 20s, R = 5s: deadline (L+R)/2 = 12.5s, timeout L-R = 15s. Each store call takes
		// 7s, so read + create answer at 14s: after the deadline, before the timeout.
		a := w.node("a", 20*time.Second, 5*time.Second)
		a.faults.Set(func(f *faultStore) { f.Latency = 7 * time.Second })
		a.start()
		w.At(sec(14))
		if a.e.IsLeader() {
			t.Fatal("a leads on an attempt that answered after its deadline")
		}
		fails := a.eventsOf(AttemptFailed)
		if len(fails) != 1 || fails[0].Reason != ReasonLate || w.Rel(fails[0].Time) != sec(14) {
			t.Fatalf("failed attempts %v; want one at 14s with reason late", fails)
		}
		if got := a.fnTimes(); len(got) != 0 {
			t.Fatalf("fn ran at %v; want never", got)
		}
		if b := a.eventsOf(BecameLeader); len(b) != 0 {
			t.Fatalf("became leader events %v; want none", b)
		}
	})
}

// E6: a follower judges expiry on its own clock from when it first saw a revision, whatever
// the times written in the record, and takes over a crashed leader's lease within L + R of
// its last renewal, at the exact moment the revision expires.
func TestE6CrashTakeoverOnOwnClock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t)
		a := w.node("a", 0, 0).start() // attempts (renewals) at 0, 5, 10
		w.At(sec(4.999))
		b := w.node("b", 0, 0).start() // attempts at 4.999, 9.999, 14.999, ...
		w.At(sec(5))
		// A leader whose clock is far behind: its renewedAt is years old. b must not care.
		a.faults.Set(func(f *faultStore) {
			f.BeforeWrite = func() {}
		})
		if err := w.Mem.Patch(context.Background(), "cluster:leader", map[string]any{"renewedAt": "1990-01-01T00:00:00Z"}, nil); err != nil {
			t.Fatal(err)
		}
		w.At(sec(12))
		a.crash() // last renewal: the attempt of 10s
		w.At(sec(29.999) - time.Nanosecond)
		if b.e.IsLeader() {
			t.Fatal("b took over before the revision written at 10s expired on its clock")
		}
		w.At(sec(29.999))
		// b first saw the revision of 10s at 14.999: it expires at 14.999 + L = 29.999.
		if !b.e.IsLeader() {
			t.Fatal("b does not lead at 29.999s")
		}
		if got := w.times(b, BecameLeader); !reflect.DeepEqual(got, ds(sec(29.999))) {
			t.Fatalf("b became leader at %v; want 29.999s (within L+R = 30s of the last renewal at 10s)", got)
		}
		if term, _ := b.e.Term(); term != 2 {
			t.Fatalf("b's term %d; want 2", term)
		}
	})
}

// E6: a revision expires exactly L after this instance first saw it: not one attempt before,
// and an expiry moment between two regular attempts gets an attempt of its own.
func TestE6AttemptAtExpiry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t)
		// R = 5s - 100µs so that b's regular attempts fall just before and after the expiry.
		r := 5*time.Second - 100*time.Microsecond
		a := w.node("a", testL, r).start()
		w.At(sec(2))
		b := w.node("b", testL, r).start() // sees a's revision of 0s first at 2s
		w.At(sec(3))
		a.crash() // last renewal at 0s: the revision b saw at 2s expires at 17s
		w.At(sec(17) - time.Nanosecond)
		// b attempted at 2 + 3r = 16.9997s, just before the expiry: it must not have taken over.
		if b.e.IsLeader() || len(b.eventsOf(AttemptSucceeded)) != 4 {
			t.Fatalf("before 17s: b leader %v after %d attempts; want follower after 4 attempts",
				b.e.IsLeader(), len(b.eventsOf(AttemptSucceeded)))
		}
		w.At(sec(17))
		if got := w.times(b, BecameLeader); !reflect.DeepEqual(got, ds(sec(17))) {
			t.Fatalf("b became leader at %v; want 17s (2s + L), between its regular attempts", got)
		}
	})
}

// E7: a clean stop waits for deregistered, then releases; another instance takes over at its
// next attempt, within R.
func TestE7CleanStopHandsOverWithinR(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t)
		a := w.node("a", 0, 0).start()
		w.At(sec(1))
		b := w.node("b", 0, 0).start() // attempts at 1, 6, 11, 16
		release := make(chan struct{})
		deregStarted := make(chan struct{})
		a.e.WhenLeader(func(context.Context) error { return nil }, func() {
			close(deregStarted)
			<-release
		})
		w.At(sec(12))
		stopped := make(chan error, 1)
		go func() { stopped <- a.e.Stop(context.Background()) }()
		<-deregStarted
		synctest.Wait()
		if a.e.IsLeader() {
			t.Fatal("a still leads once Stop has begun")
		}
		if rec := w.record(); rec["holder"] != "a" {
			t.Fatalf("record %v released while a deregistered callback still runs", rec)
		}
		select {
		case err := <-stopped:
			t.Fatalf("Stop returned (%v) before deregistered returned", err)
		default:
		}
		close(release)
		if err := <-stopped; err != nil {
			t.Fatal(err)
		}
		if rec := w.record(); rec["holder"] != "" || rec["term"] != 1.0 {
			t.Fatalf("record after Stop: %v; want released (holder \"\", term 1)", rec)
		}
		w.At(sec(16))
		if got := w.times(b, BecameLeader); !reflect.DeepEqual(got, ds(sec(16))) {
			t.Fatalf("b became leader at %v; want 16s, its first attempt after the release at 12s", got)
		}
	})
}

// E7: when callbacks do not return before Stop's context ends, the lease is not released:
// the next leader waits for expiry, so its fn never overlaps this one's.
func TestE7StopTimeoutKeepsLease(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t)
		a := w.node("a", 0, 0).start()
		w.At(sec(1))
		b := w.node("b", 0, 0).start() // sees a's revision of 0s at 1s
		release := make(chan struct{})
		a.e.WhenLeader(func(ctx context.Context) error {
			<-release // ignores its context: a stuck job
			return nil
		}, nil)
		w.At(sec(2))
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		err := a.e.Stop(ctx)
		cancel()
		if err == nil || !strings.Contains(err.Error(), "not released") || !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Stop: %v; want an error saying the lease was not released", err)
		}
		if rec := w.record(); rec["holder"] != "a" {
			t.Fatalf("record %v; want still held by a", rec)
		}
		w.At(sec(16))
		if !b.e.IsLeader() || w.Rel(b.eventsOf(BecameLeader)[0].Time) != sec(16) {
			t.Fatalf("b: leader %v, events %v; want leading from 16s (a's renewal at 0s + L, seen at 1s)", b.e.IsLeader(), b.eventsOf(BecameLeader))
		}
		close(release)
		synctest.Wait()
	})
}

// E7: Stop of an instance that never led, and Stop before Start, return nil and leave no
// goroutine (synctest fails the test otherwise).
func TestE7StopFollowerAndUnstarted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t)
		a := w.node("a", 0, 0).start()
		w.At(0)
		b := w.node("b", 0, 0).start()
		w.At(sec(3))
		if err := b.e.Stop(context.Background()); err != nil {
			t.Fatal(err)
		}
		if err := b.e.Stop(context.Background()); err != nil {
			t.Fatalf("second Stop: %v", err)
		}
		if rec := w.record(); rec["holder"] != "a" {
			t.Fatalf("a follower's Stop changed the record: %v", rec)
		}
		c := w.node("c", 0, 0)
		if err := c.e.Stop(context.Background()); err != nil {
			t.Fatal(err)
		}
		if err := c.e.Start(context.Background()); err == nil {
			t.Fatal("Start after Stop: no error")
		}
		if err := a.e.Start(context.Background()); err == nil || !strings.Contains(err.Error(), "twice") {
			t.Fatalf("second Start: %v; want an error", err)
		}
	})
}

// E7: cancelling Start's context ends the election as Stop does, releasing the lease.
func TestE7StartContextCancel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t)
		a := w.node("a", 0, 0)
		ctx, cancel := context.WithCancel(context.Background())
		if err := a.e.Start(ctx); err != nil {
			t.Fatal(err)
		}
		w.At(sec(1))
		cancel()
		<-a.e.Done()
		if a.e.IsLeader() {
			t.Fatal("a leads after its context was cancelled")
		}
		if rec := w.record(); rec["holder"] != "" {
			t.Fatalf("record %v; want released", rec)
		}
		if got := a.deTimes(); len(got) != 1 {
			t.Fatalf("deregistered ran %d times; want 1", len(got))
		}
		if err := a.e.Stop(context.Background()); err != nil {
			t.Fatal(err)
		}
	})
}

// panicLock panics on every call.
type panicLock struct{}

func (panicLock) Get(context.Context, string) (Record, error)            { panic("boom") }
func (panicLock) Create(context.Context, string, Record) (Record, error) { panic("boom") }
func (panicLock) Update(context.Context, string, Record) (Record, error) { panic("boom") }

// E8: backend errors and panics never crash the process; they are logged with the lease and
// the instance, and retried at the next attempt.
func TestE8ErrorsLoggedAndRetried(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		logs := &logCapture{}
		e, err := NewElector(ElectorConfig{Lock: panicLock{}, LeaseName: "jobs", InstanceID: "a", Logger: logs.Logger()})
		if err != nil {
			t.Fatal(err)
		}
		if err := e.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		time.Sleep(11 * time.Second)
		synctest.Wait()
		recs := logs.Find("leasehold: attempt failed")
		if len(recs) != 3 { // attempts at 0, 5, 10
			t.Fatalf("logged %d failed attempts; want 3 (at 0s, 5s, 10s): %v", len(recs), logs.All())
		}
		for _, r := range recs {
			if r["lease"] != "jobs" || r["instance"] != "a" || r["level"] != "WARN" || !strings.Contains(fmt.Sprint(r["error"]), "panicked: boom") {
				t.Fatalf("log record %v; want level WARN, lease jobs, instance a, the panic", r)
			}
		}
		if err := e.Stop(context.Background()); err != nil {
			t.Fatal(err)
		}
	})
}

// E8: a malformed record is reported, never taken over.
func TestE8MalformedRecordNotOverwritten(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t)
		bad := map[string]any{"holder": 42, "revision": "r"}
		if err := w.Mem.Create(context.Background(), "cluster:leader", bad); err != nil {
			t.Fatal(err)
		}
		a := w.node("a", 0, 0).start()
		w.At(sec(60))
		if a.e.IsLeader() {
			t.Fatal("a leads over a malformed record")
		}
		fails := a.eventsOf(AttemptFailed)
		if len(fails) == 0 || !strings.Contains(fails[0].Err.Error(), `lease record "cluster:leader": field "holder"`) {
			t.Fatalf("failures %v; want errors naming the record and the field", fails)
		}
		if rec := w.record(); rec["holder"] != 42.0 {
			t.Fatalf("record %v was overwritten", rec)
		}
	})
}

var _ store.Store = (*faultStore)(nil)

// E7 regression: Stop while a renewal is in flight whose write reached the store but whose
// answer never came back. The record's revision is then newer than the one this instance
// knows; Stop must still release the lease (found by the failover harness over PostgreSQL).
func TestE7StopReleasesAfterLostRenewalAnswer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t)
		a := w.node("a", 0, 0).start()
		w.At(0)
		b := w.node("b", 0, 0).start()
		w.At(sec(1))
		a.faults.Set(func(f *faultStore) { f.WriteThenHang = true })
		w.At(sec(6)) // a's renewal of 5s wrote the record, its answer hangs
		if err := a.e.Stop(context.Background()); err != nil {
			t.Fatal(err)
		}
		if rec := w.record(); rec["holder"] != "" {
			t.Fatalf("after a's Stop the record is %v; want released", rec)
		}
		w.At(sec(10))
		if got := w.times(b, BecameLeader); !reflect.DeepEqual(got, ds(sec(10))) {
			t.Fatalf("b became leader at %v; want 10s, its next attempt after the release (within R)", got)
		}
	})
}

// E7: a second Stop, concurrent or later, waits for the first and returns its result.
func TestE7SecondStopReturnsTheFirstsResult(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t)
		a := w.node("a", 0, 0).start()
		w.At(sec(1))
		release := make(chan struct{})
		defer close(release)
		a.e.WhenLeader(nil, func() { <-release }) // a deregistered that outlasts the first Stop's context
		synctest.Wait()
		first := make(chan error, 1)
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			first <- a.e.Stop(ctx)
		}()
		synctest.Wait()
		second := make(chan error, 1)
		go func() { second <- a.e.Stop(context.Background()) }()
		synctest.Wait()
		select {
		case err := <-second:
			t.Errorf("the second Stop returned %v while the first was still waiting for the callbacks", err)
			second <- err
		default:
		}
		err1, err2 := <-first, <-second
		if err1 == nil || !strings.Contains(err1.Error(), "not released") {
			t.Errorf("first Stop: %v; want the lease not released", err1)
		}
		if err2 != err1 {
			t.Errorf("second Stop: %v; want the first's result %v", err2, err1)
		}
		if err3 := a.e.Stop(context.Background()); err3 != err1 {
			t.Errorf("a third Stop: %v; want the first's result %v", err3, err1)
		}
	})
}

// E7: the end of Start's context is a Stop whose context lasts L - R. With a deregistered still
// running at that bound, the election ends at 11s without releasing the lease (it expires by
// itself); a later Stop, whatever its own context, returns that stop's result at once, as a
// second Stop does, and releases nothing behind the callbacks' backs.
func TestE7StopAfterStartContextCancelled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t)
		a := w.node("a", 0, 0)
		release := make(chan struct{})
		a.e.WhenLeader(nil, func() { <-release })
		ctx, cancel := context.WithCancel(context.Background())
		if err := a.e.Start(ctx); err != nil {
			t.Fatal(err)
		}
		w.At(sec(1))
		cancel()
		<-a.e.Done() // at 11s: the callbacks had L - R
		if d := w.Since(); d != sec(11) {
			t.Fatalf("the election ended at %v; want 11s", d)
		}
		err := a.e.Stop(context.Background())
		if d := w.Since(); d != sec(11) {
			t.Errorf("Stop returned at %v; want at once (11s), with the first stop's result", d)
		}
		if err == nil || !strings.Contains(err.Error(), "not released") || !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Stop: %v; want the lease not released, by the deadline of the stop Start's context began", err)
		}
		if rec := w.record(); rec["holder"] != "a" {
			t.Errorf("record %v; want still held by a (it expires by itself)", rec)
		}
		close(release)
		synctest.Wait()
		if rec := w.record(); rec["holder"] != "a" {
			t.Errorf("record %v once the callbacks returned; want a's, left to expire", rec)
		}
	})
}
