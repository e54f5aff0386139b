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

	"github.com/leasehold/leasehold/store"
)

// watchingStore is a faultStore whose watch goes to the memory store below it (which watches
// in process, inside the bubble).
type watchingStore struct{ *faultStore }

func (s watchingStore) Watch(ctx context.Context, key string, fn func(store.Change)) error {
	return s.Inner().(store.Watcher).Watch(ctx, key, fn)
}

// countLock counts the calls an Elector makes to its Lock and controls its watch: cut it with
// an error, make it silent (cut without an error: no change and no heartbeat comes through),
// or refuse to watch. Its watch sends the heartbeats its caller asks for (store.WithHeartbeat,
// E9) unless noHeartbeat says it cannot, which it then says as a HeartbeatWatcher (unless
// undeclared); those of the store below are not passed on.
type countLock struct {
	inner Lock

	mu          sync.Mutex
	gets        int
	creates     int
	updates     int
	watches     int // Watch calls: each is one request (its establishment)
	active      int // Watch calls not yet returned
	beats       int // heartbeats delivered
	silent      bool
	noHeartbeat bool
	undeclared  bool // WatchHeartbeats says true even with noHeartbeat, as a Watcher that says nothing
	unsupported bool
	lateReturn  time.Duration // Watch returns this long after its context ends

	cancel context.CancelCauseFunc // ends the watch under way
	// updateHook, when set, runs instead of the inner Update (it may call it).
	updateHook func(ctx context.Context, name string, r Record) (Record, error)
	// getHook, when set, runs after each inner Get, before its answer returns.
	getHook func(ctx context.Context)
}

func (l *countLock) Get(ctx context.Context, name string) (Record, error) {
	l.mu.Lock()
	l.gets++
	hook := l.getHook
	l.mu.Unlock()
	rec, err := l.inner.Get(ctx, name)
	if hook != nil {
		hook(ctx)
	}
	return rec, err
}

func (l *countLock) Create(ctx context.Context, name string, r Record) (Record, error) {
	l.mu.Lock()
	l.creates++
	l.mu.Unlock()
	return l.inner.Create(ctx, name, r)
}

func (l *countLock) Update(ctx context.Context, name string, r Record) (Record, error) {
	l.mu.Lock()
	l.updates++
	hook := l.updateHook
	l.mu.Unlock()
	if hook != nil {
		return hook(ctx, name, r)
	}
	return l.inner.Update(ctx, name, r)
}

// WatchHeartbeats implements HeartbeatWatcher: false when its watch sends none, unless
// undeclared.
func (l *countLock) WatchHeartbeats() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return !l.noHeartbeat || l.undeclared
}

var errStreamCut = errors.New("test: stream cut")

func (l *countLock) Watch(ctx context.Context, name string, fn func(Record, error)) error {
	l.mu.Lock()
	l.watches++
	if l.unsupported {
		l.mu.Unlock()
		return fmt.Errorf("test: %w", ErrWatchUnsupported)
	}
	l.active++
	ctx, cancel := context.WithCancelCause(ctx)
	l.cancel = cancel
	l.mu.Unlock()
	defer func() {
		l.mu.Lock()
		l.active--
		l.mu.Unlock()
		cancel(nil)
	}()
	var callMu sync.Mutex // one call of fn at a time (Watcher's contract)
	call := func(r Record, err error) {
		l.mu.Lock()
		silent := l.silent
		if !silent && errors.Is(err, ErrHeartbeat) {
			l.beats++
		}
		l.mu.Unlock()
		if !silent {
			callMu.Lock()
			fn(r, err)
			callMu.Unlock()
		}
	}
	l.mu.Lock()
	beat := !l.noHeartbeat
	l.mu.Unlock()
	var beats sync.WaitGroup
	if d := store.HeartbeatEvery(ctx); d > 0 && beat {
		beats.Go(func() {
			t := time.NewTicker(d)
			defer t.Stop()
			for {
				select {
				case <-ctx.Done():
					return
				case <-t.C:
					call(Record{}, ErrHeartbeat)
				}
			}
		})
	}
	err := l.inner.(Watcher).Watch(store.WithHeartbeat(ctx, 0), name, func(r Record, err error) {
		if !errors.Is(err, ErrHeartbeat) {
			call(r, err)
		}
	})
	cancel(nil)
	beats.Wait()
	l.mu.Lock()
	late := l.lateReturn
	l.mu.Unlock()
	time.Sleep(late) // a Lock that ignores its context for a while
	if c := context.Cause(ctx); errors.Is(c, errStreamCut) {
		return c
	}
	return err
}

// cut ends the watch under way with an error.
func (l *countLock) cut() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.cancel != nil {
		l.cancel(errStreamCut)
	}
}

type lockCounts struct{ gets, creates, updates, watches int }

func (l *countLock) counts() lockCounts {
	l.mu.Lock()
	defer l.mu.Unlock()
	return lockCounts{l.gets, l.creates, l.updates, l.watches}
}

func (c lockCounts) minus(o lockCounts) lockCounts {
	return lockCounts{c.gets - o.gets, c.creates - o.creates, c.updates - o.updates, c.watches - o.watches}
}

// wnode is a node whose Lock watches, through a countLock.
type wnode struct {
	*node
	lock *countLock
}

func (w *world) watchNode(id string, setup func(*countLock)) *wnode {
	w.T.Helper()
	n := &node{t: w.T, faults: newFaultStore(w.Mem)}
	cl := &countLock{inner: NewStoreLock(watchingStore{n.faults})}
	if setup != nil {
		setup(cl)
	}
	e, err := NewElector(ElectorConfig{
		Lock: cl, LeaseName: "leader", LeaseDuration: testL, RenewInterval: testR,
		InstanceID: id, Logger: quietLogger(),
		Observer: func(ev Event) {
			n.mu.Lock()
			n.events = append(n.events, ev)
			n.mu.Unlock()
		},
	})
	if err != nil {
		w.T.Fatal(err)
	}
	n.e = e
	return &wnode{node: n, lock: cl}
}

func (n *wnode) start() *wnode { n.node.start(); return n }

// E9: a follower learns of a release from the watch and takes over at that instant, with no
// read: its write goes on the released record's revision (E10).
func TestE9ReleaseTakeoverWithoutPolling(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t)
		a := w.watchNode("a", nil).start()
		w.At(sec(1))
		b := w.watchNode("b", nil).start() // reads at 1s (E1), then only listens
		w.At(sec(12.5))
		before := b.lock.counts()
		if err := a.e.Stop(context.Background()); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if got := w.times(b.node, BecameLeader); !reflect.DeepEqual(got, ds(sec(12.5))) {
			t.Fatalf("b became leader at %v; want 12.5s, the instant a released (without the watch: 16s)", got)
		}
		if d := b.lock.counts().minus(before); d != (lockCounts{updates: 1}) {
			t.Fatalf("b's calls for the takeover: %+v; want one update and no read", d)
		}
		if term, _ := b.e.Term(); term != 2 {
			t.Fatalf("b's term %d; want 2", term)
		}
	})
}

// E7, E10: a leader that stops releases with one write on the revision its last renewal
// left it holding, without reading first; a record changed since makes that write conflict,
// and it reads and releases the record it finds (a resign request keeps it the holder).
func TestE7ReleaseWritesWithoutReading(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t)
		a := w.watchNode("a", nil).start()
		w.At(sec(6)) // renewed at 5s
		before := a.lock.counts()
		if err := a.e.Stop(context.Background()); err != nil {
			t.Fatal(err)
		}
		if d := a.lock.counts().minus(before); d != (lockCounts{updates: 1}) {
			t.Fatalf("a's calls for the release: %+v; want one update and no read", d)
		}
		if h := w.record()["holder"]; h != "" {
			t.Fatalf("holder after the release: %v; want none", h)
		}

		b := w.watchNode("b", nil).start() // takes the released lease at 6s
		w.At(sec(12))                      // renewed at 11s
		if _, err := Resign(context.Background(), NewStoreLock(w.Mem), "leader", ""); err != nil {
			t.Fatal(err)
		}
		before = b.lock.counts()
		if err := b.e.Stop(context.Background()); err != nil {
			t.Fatal(err)
		}
		if d := b.lock.counts().minus(before); d != (lockCounts{gets: 1, updates: 2}) {
			t.Fatalf("b's calls for the release after a change: %+v; want a conflicting update, a read, an update", d)
		}
		if h := w.record()["holder"]; h != "" {
			t.Fatalf("holder after b's release: %v; want none", h)
		}
	})
}

// E9, E10: in steady state the leader sends one request per R (a write on the revision it
// holds) and a follower whose watch sends heartbeats (every R/2) none.
func TestE9E10SteadyStateRequests(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t)
		a := w.watchNode("a", nil).start()
		w.At(sec(1))
		b := w.watchNode("b", nil).start()
		w.At(sec(2))
		a0, b0 := a.lock.counts(), b.lock.counts()
		if b0 != (lockCounts{gets: 1, watches: 1}) {
			t.Fatalf("b's calls after its start: %+v; want its first read and one watch", b0)
		}
		w.At(sec(102)) // 20 R
		if d := a.lock.counts().minus(a0); d != (lockCounts{updates: 20}) {
			t.Fatalf("a's calls over 20 R: %+v; want 20 updates, no read", d)
		}
		if d := b.lock.counts().minus(b0); d != (lockCounts{}) {
			t.Fatalf("b's calls over 20 R: %+v; want none", d)
		}
		b.lock.mu.Lock()
		beats := b.lock.beats
		b.lock.mu.Unlock()
		if beats < 40 {
			t.Fatalf("b's watch delivered %d heartbeats by 102s; want at least 40, two per R", beats)
		}
		// Without attempts, what tells b's observers (a health check) that the store answers
		// is a WatchedChange for each of a's renewals.
		heard := 0
		for _, ev := range b.eventsOf(WatchedChange) {
			if w.Rel(ev.Time) > sec(2) && ev.Holder == "a" {
				heard++
			}
		}
		if heard != 20 {
			t.Fatalf("b's WatchedChange events over 20 R: %d; want 20, one per renewal", heard)
		}
		if !a.e.IsLeader() || b.e.IsLeader() {
			t.Fatalf("leaders: a %v, b %v; want a only", a.e.IsLeader(), b.e.IsLeader())
		}
	})
}

// E9, E6: a watch that goes silent without an error (no change, no heartbeat) is trusted for
// R after its last proof of life, then the follower reads every R; a crash is still taken
// over within L + R.
func TestE9SilentWatchFallsBackToPolling(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t)
		a := w.watchNode("a", nil).start() // renews at 0, 5, 10, ...
		w.At(sec(1))
		b := w.watchNode("b", nil).start() // watches from 1s: heartbeats at 3.5, 6, 8.5, 11, ...
		w.At(sec(12))
		b.lock.mu.Lock()
		b.lock.silent = true // last proof of life: the heartbeat of 11s
		b.lock.mu.Unlock()
		base := b.lock.counts()
		w.At(sec(16) - time.Nanosecond)
		if d := b.lock.counts().minus(base); d.gets != 0 {
			t.Fatalf("b read %d times within R of the last proof of life; want 0", d.gets)
		}
		w.At(sec(16)) // 11s + R: b reads, and sees the renewal of 15s
		if d := b.lock.counts().minus(base); d.gets != 1 {
			t.Fatalf("b read %d times by 11s + R; want 1", d.gets)
		}
		w.At(sec(22))
		a.crash()     // last renewal at 20s
		w.At(sec(22)) // b read at 21s, R after the last: first sight of the revision of 20s
		if d := b.lock.counts().minus(base); d.gets != 2 {
			t.Fatalf("b read %d times by 22s; want 2 (every R once the watch is silent)", d.gets)
		}
		w.At(sec(40))
		got := w.times(b.node, BecameLeader)
		if !reflect.DeepEqual(got, ds(sec(36))) {
			t.Fatalf("b became leader at %v; want 36s (21s + L, within L + R of the last renewal at 20s)", got)
		}
	})
}

// E9: a watch that goes silent without an error right after a renewal does not delay the
// takeover of a lease released then: the follower reads R after the watch's last proof of
// life, so within R of the release (with a quiet window of 1.5 R after the last change, it
// read 7 s after the release).
func TestE9SilentWatchReleaseTakenWithinR(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t)
		a := w.watchNode("a", nil).start() // renews at 0, 5, 10
		w.At(sec(1))
		b := w.watchNode("b", nil).start() // heartbeats at 3.5, 6, 8.5
		w.At(sec(10.2))
		b.lock.mu.Lock()
		b.lock.silent = true // last proof of life: a's renewal at 10s
		b.lock.mu.Unlock()
		w.At(sec(10.5))
		if err := a.e.Stop(context.Background()); err != nil {
			t.Fatal(err)
		}
		w.At(sec(20))
		got := w.times(b.node, BecameLeader)
		if len(got) != 1 || got[0] > sec(10.5)+testR {
			t.Fatalf("b became leader at %v; want one takeover within R of the release at 10.5s", got)
		}
		if got[0] != sec(15) {
			t.Fatalf("b became leader at %v; want 15s, R after the last proof of life", got[0])
		}
	})
}

// E9: heartbeats alone keep a watch trusted: under a crashed leader (no change at all) the
// follower sends no read, and a heartbeat is not a change: it does not move the first sight
// of the revision (E6), so the takeover comes exactly L after the last renewal was seen, and
// emits no WatchedChange.
func TestE9HeartbeatsAloneKeepTheWatch(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t)
		a := w.watchNode("a", nil).start()
		w.At(sec(1))
		b := w.watchNode("b", nil).start()
		w.At(sec(12))
		a.crash() // last renewal at 10s, seen by b's watch at 10s
		base := b.lock.counts()
		b.lock.mu.Lock()
		beats0 := b.lock.beats
		b.lock.mu.Unlock()
		w.At(sec(25) - time.Nanosecond)
		if d := b.lock.counts().minus(base); d != (lockCounts{}) {
			t.Fatalf("b's calls from 12s to 25s under heartbeats alone: %+v; want none", d)
		}
		b.lock.mu.Lock()
		beats := b.lock.beats - beats0
		b.lock.mu.Unlock()
		if beats != 5 { // 13.5, 16, 18.5, 21, 23.5
			t.Fatalf("heartbeats delivered from 12s to 25s: %d; want 5", beats)
		}
		for _, ev := range b.eventsOf(WatchedChange) {
			if w.Rel(ev.Time) > sec(10) {
				t.Fatalf("b emitted WatchedChange at %v; want none after the renewal of 10s (a heartbeat is no change)", w.Rel(ev.Time))
			}
		}
		w.At(sec(26))
		if got := w.times(b.node, BecameLeader); !reflect.DeepEqual(got, ds(sec(25))) {
			t.Fatalf("b became leader at %v; want 25s, L after it saw the renewal of 10s", got)
		}
		if d := b.lock.counts().minus(base); d != (lockCounts{updates: 1}) {
			t.Fatalf("b's calls for the takeover: %+v; want one write on the record it knows", d)
		}
	})
}

// E9, E6: heartbeats put off the reads of a follower only while the revision it watches has
// not expired: once its attempt on the expired revision failed, it attempts every R, as
// nothing the watch could report is awaited.
func TestE9HeartbeatsDoNotPutOffAFailedTakeover(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t)
		a := w.watchNode("a", nil).start()
		w.At(sec(1))
		b := w.watchNode("b", nil).start()
		w.At(sec(12))
		a.crash() // last renewal at 10s: expires for b at 25s
		w.At(sec(24))
		b.faults.Set(func(f *faultStore) { f.Err = errInjected })
		w.At(sec(26)) // the takeover at 25s failed
		b.faults.Heal()
		if got := b.eventsOf(AttemptFailed); len(got) != 1 || w.Rel(got[0].Time) != sec(25) {
			t.Fatalf("b's failed attempts: %v; want one at 25s", got)
		}
		w.At(sec(31))
		if got := w.times(b.node, BecameLeader); !reflect.DeepEqual(got, ds(sec(30))) {
			t.Fatalf("b became leader at %v; want 30s, R after the failed takeover, though heartbeats came", got)
		}
	})
}

// E9: a heartbeat neither replaces the change waiting in the mailbox nor wakes the election;
// handed to onPush it only refreshes the proof of life: no attempt, no new observation.
func TestE9HeartbeatIsNotAChange(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mb := newMailbox()
		rel := Record{Holder: "", Term: 2, Revision: "released"}
		mb.put(Record{Holder: "a", Term: 2, Revision: "r1"}, nil, true)
		mb.put(rel, nil, false)
		<-mb.ready
		time.Sleep(time.Second)
		mb.put(Record{}, ErrHeartbeat, false)
		select {
		case <-mb.ready:
			t.Fatal("a heartbeat woke the election goroutine")
		default:
		}
		ev, up := mb.take()
		if ev == nil || ev.rec.Revision != "released" || ev.err != nil || !ev.first || !up {
			t.Fatalf("taken after a change and a heartbeat: %+v up %v; want the release, established", ev, up)
		}
		if got := mb.alive(); !got.Equal(time.Now()) {
			t.Fatalf("heartbeat time %v; want now", got)
		}
		mb.down()
		if got := mb.alive(); !got.IsZero() {
			t.Fatalf("heartbeat time after the watch ended: %v; want none", got)
		}
		mb.put(Record{}, ErrHeartbeat, false)
		if got := mb.alive(); !got.IsZero() {
			t.Fatalf("a heartbeat before the watch is established counted: %v", got)
		}

		e, err := NewElector(ElectorConfig{Lock: NewStoreLock(nil), InstanceID: "b", Logger: quietLogger()})
		if err != nil {
			t.Fatal(err)
		}
		t0 := time.Now()
		var s sched
		s.push.up = true
		e.onPush(&s, &pushed{rec: Record{Holder: "a", Term: 2, RenewedAt: t0, Revision: "r1"}, at: t0, first: true})
		obs := s.obs
		e.onPush(&s, &pushed{err: ErrHeartbeat, at: t0.Add(3 * time.Second)})
		if s.obs != obs || s.soon || s.known != nil || !s.push.heard.Equal(t0.Add(3*time.Second)) {
			t.Fatalf("after a heartbeat: obs %+v (was %+v), soon %v, known %v, heard %v; want only the proof of life moved",
				s.obs, obs, s.soon, s.known, s.push.heard.Sub(t0))
		}
	})
}

// E9: a watch that fails is watched again R later; meanwhile the follower polls.
func TestE9WatchErrorReestablished(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t)
		a := w.watchNode("a", nil).start()
		w.At(sec(1))
		b := w.watchNode("b", nil).start()
		w.At(sec(12))
		base := b.lock.counts()
		b.lock.cut()
		synctest.Wait()
		// The watch is down: b's regular attempts resume at once (its last was at 1s).
		if d := b.lock.counts().minus(base); d != (lockCounts{gets: 1}) {
			t.Fatalf("b's calls as its watch failed: %+v; want one read", d)
		}
		w.At(sec(17) - time.Nanosecond)
		if d := b.lock.counts().minus(base); d.watches != 0 {
			t.Fatalf("b watched again after %d calls before R had passed", d.watches)
		}
		w.At(sec(17))
		if d := b.lock.counts().minus(base); d != (lockCounts{gets: 2, watches: 1}) {
			t.Fatalf("b's calls by 17s: %+v; want reads at 12s and 17s and a new watch at 17s", d)
		}
		w.At(sec(30))
		if d := b.lock.counts().minus(base); d != (lockCounts{gets: 2, watches: 1}) {
			t.Fatalf("b's calls by 30s: %+v; want no read once the watch is back", d)
		}
		if err := a.e.Stop(context.Background()); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if got := w.times(b.node, BecameLeader); !reflect.DeepEqual(got, ds(sec(30))) {
			t.Fatalf("b became leader at %v; want 30s, at the release, through the new watch", got)
		}
	})
}

// E9: a Lock that cannot watch is polled every R, after one log line; it is asked once.
func TestE9UnsupportedPollsAfterOneLogLine(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t)
		var logs logCapture
		a := w.watchNode("a", nil).start()
		w.At(sec(1))
		n := &node{t: t, faults: newFaultStore(w.Mem)}
		cl := &countLock{inner: NewStoreLock(watchingStore{n.faults}), unsupported: true}
		e, err := NewElector(ElectorConfig{Lock: cl, LeaseName: "leader", LeaseDuration: testL, RenewInterval: testR, InstanceID: "b", Logger: logs.Logger()})
		if err != nil {
			t.Fatal(err)
		}
		n.e = e
		n.start()
		w.At(sec(31.5))
		if got := cl.counts(); got != (lockCounts{gets: 7, watches: 1}) {
			t.Fatalf("b's calls by 31.5s: %+v; want reads at 1, 6, ..., 31s and one watch", got)
		}
		recs := logs.Find("leasehold: lease watch not supported, polling every R")
		if len(recs) != 1 || recs[0]["level"] != "INFO" {
			t.Fatalf("log lines about the watch: %v; want one at INFO", recs)
		}
		_ = a
	})
}

// E10: a renewal whose write landed but whose answer said conflict (a retried request that
// found its own write) reads once and finds the record its own: it renews on the revision
// read and keeps leading.
func TestE10LostWriteIsStillOwn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t)
		a := w.watchNode("a", nil).start()
		w.At(sec(1))
		var once sync.Once
		a.lock.mu.Lock()
		a.lock.updateHook = func(ctx context.Context, name string, r Record) (Record, error) {
			var rec Record
			err := error(nil)
			hit := false
			once.Do(func() {
				hit = true
				if _, err = a.lock.inner.Update(ctx, name, r); err == nil {
					err = fmt.Errorf("test: answer lost, retried: %w", ErrConflict)
				}
			})
			if hit {
				return rec, err
			}
			return a.lock.inner.Update(ctx, name, r)
		}
		a.lock.mu.Unlock()
		base := a.lock.counts()
		w.At(sec(5))
		if d := a.lock.counts().minus(base); d != (lockCounts{gets: 1, updates: 2}) {
			t.Fatalf("a's calls for the renewal at 5s: %+v; want a write, one read, a write", d)
		}
		if !a.e.IsLeader() || len(a.eventsOf(StoppedLeading)) != 0 || len(a.eventsOf(AttemptFailed)) != 0 {
			t.Fatalf("a leads %v, stops %v, failures %v; want it leading without a break", a.e.IsLeader(), a.eventsOf(StoppedLeading), a.eventsOf(AttemptFailed))
		}
		if doc := w.record(); doc["holder"] != "a" || doc["term"] != 1.0 {
			t.Fatalf("record %v; want holder a, term 1", doc)
		}
	})
}

// E9, E10: a leader that sees a record it did not write (here another instance's takeover
// written behind its back) attempts at once: its write on the revision it holds conflicts,
// it reads once, and follows. a follows b first, so that its watch is open (an instance
// watches from the first time it follows), then takes the lease b releases.
func TestE9LeaderSeesForeignRecord(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t)
		b := w.watchNode("b", nil).start()
		w.At(sec(1))
		a := w.watchNode("a", nil).start()
		w.At(sec(2))
		if err := b.e.Stop(context.Background()); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if !a.e.IsLeader() {
			t.Fatal("a does not lead after b's release")
		}
		w.At(sec(7))
		base := a.lock.counts()
		if err := w.Mem.Patch(context.Background(), "cluster:leader", map[string]any{"holder": "z", "term": 3.0, "revision": "foreign"}, nil); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if d := a.lock.counts().minus(base); d != (lockCounts{gets: 1, updates: 1}) {
			t.Fatalf("a's calls after the foreign write: %+v; want one write and one read", d)
		}
		stops := a.eventsOf(StoppedLeading)
		if a.e.IsLeader() || len(stops) != 1 || stops[0].Reason != ReasonTakenBy || w.Rel(stops[0].Time) != sec(7) {
			t.Fatalf("a leads %v, stops %v; want it stopped at 7s, taken", a.e.IsLeader(), stops)
		}
	})
}

// E9: an instance watches from the first time it follows (a, which leads from the start,
// keeps no watch), and no goroutine of the watch outlives Stop, nor the end of Start's
// context.
func TestE9WatchEndsWithTheElection(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t)
		a := w.watchNode("a", nil).start()
		w.At(sec(1))
		c := w.watchNode("c", nil).start()
		ctx, cancel := context.WithCancel(context.Background())
		b := w.watchNode("b", nil)
		if err := b.e.Start(ctx); err != nil {
			t.Fatal(err)
		}
		w.At(sec(3))
		for _, n := range []*wnode{a, b, c} {
			n.lock.mu.Lock()
			active := n.lock.active
			n.lock.mu.Unlock()
			want := 1
			if n == a {
				want = 0
			}
			if active != want {
				t.Fatalf("%s: %d watches running; want %d", n.e.InstanceID(), active, want)
			}
		}
		if err := c.e.Stop(context.Background()); err != nil {
			t.Fatal(err)
		}
		cancel()
		<-b.e.Done()
		for _, n := range []*wnode{a, b, c} {
			n.lock.mu.Lock()
			active := n.lock.active
			n.lock.mu.Unlock()
			if active != 0 {
				t.Fatalf("%s: %d watches still running once the election ended", n.e.InstanceID(), active)
			}
		}
		_ = b.e.Stop(context.Background())
		if err := a.e.Stop(context.Background()); err != nil {
			t.Fatal(err)
		}
	})
}

// E9: repeated and reordered calls of a watch change nothing: a record already seen, or older
// than the newest known by (Term, RenewedAt), keeps the observation and its first sight; a
// read resets the order, and so does a missing record.
func TestE9StaleCallsIgnored(t *testing.T) {
	e, err := NewElector(ElectorConfig{Lock: NewStoreLock(nil), InstanceID: "b", Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	rec := func(term uint64, renewed time.Duration, rev string) Record {
		return Record{Holder: "a", Term: term, RenewedAt: t0.Add(renewed), Revision: rev}
	}
	var s sched
	push := func(r Record, at time.Duration) { e.onPush(&s, &pushed{rec: r, at: t0.Add(at)}) }
	push(rec(3, 10*time.Second, "r10"), 10*time.Second)
	if s.obs.rev != "r10" || !s.obs.expires.Equal(t0.Add(10*time.Second+testL)) {
		t.Fatalf("after the first change: %+v", s.obs)
	}
	push(rec(3, 10*time.Second, "r10"), 11*time.Second) // a repeat
	if s.soon {
		t.Fatal("a repeat asks for an attempt")
	}
	push(rec(3, 5*time.Second, "r5"), 12*time.Second) // an older state, after a newer
	if !s.soon || s.known != nil {
		// B3: a watch behind a read, or a store gone back: a follower reads at once.
		t.Fatalf("an older state: soon %v known %+v; want a read at once", s.soon, s.known)
	}
	push(rec(2, 50*time.Second, "old"), 13*time.Second) // an older term
	if s.obs.rev != "r10" || !s.obs.expires.Equal(t0.Add(10*time.Second+testL)) || !s.push.heard.Equal(t0.Add(10*time.Second)) {
		t.Fatalf("after repeats and stale calls: %+v, heard %v; want r10 first seen at 10s", s.obs, s.push.heard.Sub(t0))
	}
	push(rec(3, 15*time.Second, "r15"), 15*time.Second)
	if s.obs.rev != "r15" || s.soon {
		t.Fatalf("a newer renewal: %+v soon %v", s.obs, s.soon)
	}
	e.onPush(&s, &pushed{err: fmt.Errorf("x: %w", ErrNotFound), at: t0.Add(16 * time.Second)})
	if !s.soon || s.push.ordered {
		t.Fatalf("a missing record: soon %v ordered %v; want an attempt at once and no order", s.soon, s.push.ordered)
	}
	s.soon = false
	push(rec(1, time.Second, "new1"), 17*time.Second) // created again: term 1 is newest now
	if s.obs.rev != "new1" {
		t.Fatalf("after the record came back: %+v", s.obs)
	}
	// B2: a release of a term below the 3 this instance saw may be one a store went back to:
	// watched for expiry as a new revision, not taken at once.
	push(Record{Holder: "", Term: 1, RenewedAt: t0.Add(2 * time.Second), Revision: "rel"}, 18*time.Second)
	if s.soon || s.known != nil || s.obs.rev != "rel" || !s.obs.expires.Equal(t0.Add(18*time.Second+testL)) {
		t.Fatalf("a release below a term seen: soon %v known %+v obs %+v; want it observed at 18s", s.soon, s.known, s.obs)
	}
	push(Record{Holder: "a", Term: 4, RenewedAt: t0.Add(19 * time.Second), Revision: "r4"}, 19*time.Second)
	push(Record{Holder: "", Term: 4, RenewedAt: t0.Add(20 * time.Second), Revision: "rel4"}, 20*time.Second)
	if !s.soon || s.known == nil || s.known.Revision != "rel4" {
		t.Fatalf("a release: soon %v known %+v; want an attempt at once on the released record", s.soon, s.known)
	}
}

// E9: a writer's RenewedAt strictly increases across its writes, at microseconds, even when
// its clock has not moved.
func TestE9StampsIncrease(t *testing.T) {
	now := time.Date(2030, 1, 1, 0, 0, 0, 123456789, time.UTC)
	if got := stamp(now, Record{}); !got.Equal(now.Truncate(time.Microsecond)) {
		t.Fatalf("stamp %v", got)
	}
	prev := Record{RenewedAt: now.Truncate(time.Microsecond)}
	if got := stamp(now, prev); !got.Equal(prev.RenewedAt.Add(time.Microsecond)) {
		t.Fatalf("stamp after a write at the same instant: %v; want 1µs later", got)
	}
	if got := stamp(now, Record{RenewedAt: now.Add(time.Hour)}); !got.After(now.Add(time.Hour)) {
		t.Fatalf("stamp after a record from a clock ahead: %v", got)
	}
}

// E7, E9: Stop returns by its context even when the Lock's Watch returns long after its
// context ended: the lease is released first, the error wraps the context's and names the
// watch, and Done is closed (a later Stop returns nil) once the Watch has returned.
func TestE7StopReturnsByItsContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t)
		a := w.watchNode("a", nil).start()
		w.At(sec(1))
		b := w.watchNode("b", func(l *countLock) { l.lateReturn = 60 * time.Second }).start()
		w.At(sec(2))
		if err := a.e.Stop(context.Background()); err != nil {
			t.Fatal(err)
		}
		w.At(sec(3))
		if !b.e.IsLeader() {
			t.Fatal("b does not lead after a's release")
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		err := b.e.Stop(ctx)
		if got := w.Since(); got != sec(5) {
			t.Fatalf("Stop returned at %v; want 5s, when its 2s context ended", got)
		}
		if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "lease watch has not returned") {
			t.Fatalf("Stop: %v; want an error naming the watch, wrapping context.DeadlineExceeded", err)
		}
		if h := w.record()["holder"]; h != "" {
			t.Fatalf("holder after Stop: %v; want none (released before waiting for the watch)", h)
		}
		select {
		case <-b.e.Done():
			t.Fatal("Done closed while the Lock's Watch has not returned")
		default:
		}
		if err := b.e.Stop(context.Background()); err != nil {
			t.Fatalf("a later Stop, once the watch returned: %v; want nil", err)
		}
		if got := w.Since(); got != sec(63) {
			t.Fatalf("the later Stop returned at %v; want 63s, when the Watch returned", got)
		}
		<-b.e.Done()
	})
}

// E7, E9: after the cancellation of Start's context, Stop returns by its own context too when
// the Lock's Watch is late, and says that the watch, not the release, is what it waited for.
func TestE7StopAfterStartContextReturnsByItsContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t)
		a := w.watchNode("a", nil).start()
		w.At(sec(1))
		b := w.watchNode("b", func(l *countLock) { l.lateReturn = 60 * time.Second })
		startCtx, cancelStart := context.WithCancel(context.Background())
		if err := b.e.Start(startCtx); err != nil {
			t.Fatal(err)
		}
		w.At(sec(2))
		if err := a.e.Stop(context.Background()); err != nil {
			t.Fatal(err)
		}
		w.At(sec(3))
		if !b.e.IsLeader() {
			t.Fatal("b does not lead after a's release")
		}
		cancelStart()
		synctest.Wait()
		if h := w.record()["holder"]; h != "" {
			t.Fatalf("holder after the end of Start's context: %v; want none", h)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		err := b.e.Stop(ctx)
		if got := w.Since(); got != sec(5) {
			t.Fatalf("Stop returned at %v; want 5s, when its 2s context ended", got)
		}
		if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "lease watch has not returned") || strings.Contains(err.Error(), "not released") {
			t.Fatalf("Stop: %v; want an error naming the watch (the lease was released), wrapping context.DeadlineExceeded", err)
		}
		<-b.e.Done()
		if got := w.Since(); got != sec(63) {
			t.Fatalf("Done closed at %v; want 63s, when the Watch returned", got)
		}
	})
}
