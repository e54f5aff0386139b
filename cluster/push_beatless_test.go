package cluster

import (
	"context"
	"reflect"
	"testing"
	"testing/synctest"
	"time"
)

// renewalLatencies makes n's renewals take 10 ms and 60 ms in turn before they are written,
// as an API server's answers vary: they reach a follower's watch 5.05 s and 4.95 s apart.
func renewalLatencies(l *countLock) {
	k := 0
	l.updateHook = func(ctx context.Context, name string, r Record) (Record, error) {
		l.mu.Lock()
		k++
		odd := k%2 == 1
		l.mu.Unlock()
		if odd {
			time.Sleep(10 * time.Millisecond)
		} else {
			time.Sleep(60 * time.Millisecond)
		}
		return l.inner.Update(ctx, name, r)
	}
}

// E9: a watch that sends no heartbeats (HeartbeatWatcher, a Kubernetes watch) is proved alive
// by the leader's renewals, one every R, each a little earlier or later than R after the one
// before. Its follower trusts it for R + R/2 after the last and sends no read in steady state.
// A follower that trusts such a watch for R only (its Lock does not say it has no heartbeats)
// reads before each renewal that comes later than R after the one before: every other one
// here.
func TestE9RenewalsKeepAWatchWithoutHeartbeats(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t)
		a := w.watchNode("a", func(l *countLock) {
			l.noHeartbeat = true
			renewalLatencies(l)
		}).start()
		w.At(sec(1))
		b := w.watchNode("b", func(l *countLock) { l.noHeartbeat = true }).start()
		c := w.watchNode("c", func(l *countLock) { l.noHeartbeat, l.undeclared = true, true }).start()
		if !b.e.beatless || c.e.beatless {
			t.Fatalf("beatless: b %v, c %v; want b only", b.e.beatless, c.e.beatless)
		}
		w.At(sec(2))
		b0, c0 := b.lock.counts(), c.lock.counts()
		if b0 != (lockCounts{gets: 1, watches: 1}) {
			t.Fatalf("b's calls after its start: %+v; want its first read and one watch", b0)
		}
		w.At(sec(102)) // 20 R
		if d := b.lock.counts().minus(b0); d != (lockCounts{}) {
			t.Fatalf("b's calls over 20 R: %+v; want none", d)
		}
		if d := c.lock.counts().minus(c0); d != (lockCounts{gets: 10}) {
			t.Fatalf("c's calls over 20 R: %+v; want 10 reads, one before each renewal that came 5.05 s after the one before", d)
		}
		for _, n := range []*wnode{b, c} {
			heard := 0
			for _, ev := range n.eventsOf(WatchedChange) {
				if w.Rel(ev.Time) > sec(2) && ev.Holder == "a" {
					heard++
				}
			}
			if heard != 20 {
				t.Fatalf("%s's WatchedChange events over 20 R: %d; want 20, one per renewal", n.e.InstanceID(), heard)
			}
		}
		if !a.e.IsLeader() || b.e.IsLeader() || c.e.IsLeader() {
			t.Fatalf("leaders: a %v, b %v, c %v; want a only", a.e.IsLeader(), b.e.IsLeader(), c.e.IsLeader())
		}
	})
}

// E9, E6: a watch without heartbeats that goes silent without an error is trusted for R + R/2
// after its last proof of life, then the follower reads every R; a crash is still taken over
// within L + R of the last renewal, whose predecessor the watch delivered R before it.
func TestE9SilentWatchWithoutHeartbeatsFallsBackToPolling(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t)
		a := w.watchNode("a", func(l *countLock) { l.noHeartbeat = true }).start() // renews at 0, 5, 10, ...
		w.At(sec(1))
		b := w.watchNode("b", func(l *countLock) { l.noHeartbeat = true }).start()
		w.At(sec(12))
		b.lock.mu.Lock()
		b.lock.silent = true // last proof of life: a's renewal at 10s
		b.lock.mu.Unlock()
		base := b.lock.counts()
		w.At(sec(17.5) - time.Nanosecond)
		if d := b.lock.counts().minus(base); d.gets != 0 {
			t.Fatalf("b read %d times within R + R/2 of the last proof of life; want 0", d.gets)
		}
		w.At(sec(17.5)) // 10s + 1.5 R: b reads, and sees the renewal of 15s
		if d := b.lock.counts().minus(base); d.gets != 1 {
			t.Fatalf("b read %d times by 10s + 1.5 R; want 1", d.gets)
		}
		w.At(sec(22))
		a.crash()     // last renewal at 20s
		w.At(sec(23)) // b read at 22.5s, R after the last: first sight of the revision of 20s
		if d := b.lock.counts().minus(base); d.gets != 2 {
			t.Fatalf("b read %d times by 23s; want 2 (every R once the watch is silent)", d.gets)
		}
		w.At(sec(40))
		got := w.times(b.node, BecameLeader)
		if !reflect.DeepEqual(got, ds(sec(37.5))) {
			t.Fatalf("b became leader at %v; want 37.5s (22.5s + L, within L + R of the last renewal at 20s)", got)
		}
	})
}

// E9: a watch without heartbeats that goes silent right after a renewal delays the takeover of
// a lease released then to R + R/2 after that renewal: within R + R/2 of the release, where a
// watch with heartbeats is read within R of it (TestE9SilentWatchReleaseTakenWithinR).
func TestE9SilentWatchWithoutHeartbeatsReleaseTaken(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t)
		a := w.watchNode("a", func(l *countLock) { l.noHeartbeat = true }).start() // renews at 0, 5, 10
		w.At(sec(1))
		b := w.watchNode("b", func(l *countLock) { l.noHeartbeat = true }).start()
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
		if !reflect.DeepEqual(got, ds(sec(17.5))) {
			t.Fatalf("b became leader at %v; want 17.5s, R + R/2 after the last proof of life (7 s after the release)", got)
		}
	})
}
