package locker

import (
	"context"
	"time"

	"github.com/leasehold/leasehold/cluster"
)

// fence follows another Locker's session lease for the keys this Locker waits for whose records
// name one of its epochs (P8): an Elector of the engine on that lease that takes it over only
// once it has expired on this instance's clock (E6), never a released or missing one, and
// releases it at once, as partitions' fences do (D10). One per session lease, shared by every
// key that waits for it, so that waiting keys cost no read of their own while their holder
// lives.
type fence struct {
	l    *Locker
	name string
	e    *cluster.Elector

	// Guarded by l.mu.
	refs     int
	top      uint64    // the highest term the lease was seen at
	released uint64    // the highest term it was seen released at
	missing  time.Time // since when it has been seen missing; zero when it was not
	revs     int       // revisions of a held record seen: its holder renews it (P3)
	changed  chan struct{}
	stopping bool
	stopped  chan struct{} // closed once e has stopped
}

// fenceFor returns the fence of the session lease name, started if none runs (one that took
// the lease over has stopped, and is replaced), counting the caller among its users; unfence
// ends that.
func (l *Locker) fenceFor(name string) *fence {
	l.mu.Lock()
	if f := l.fences[name]; f != nil && !f.stopping {
		f.refs++
		l.mu.Unlock()
		return f
	}
	f := &fence{l: l, name: name, refs: 1, changed: make(chan struct{}), stopped: make(chan struct{})}
	e, err := cluster.NewElector(cluster.ElectorConfig{
		Lock: l.raw, LeaseName: name, LeaseDuration: l.l, RenewInterval: l.r,
		InstanceID: l.id, Logger: l.log, Gate: fenceGate{}, Observer: f.event,
	})
	f.e = e
	if err != nil {
		f.stopping = true
		close(f.stopped)
	}
	l.fences[name] = f
	l.mu.Unlock()
	if err == nil {
		err = e.Start(context.Background())
		if err != nil {
			l.mu.Lock()
			if !f.stopping {
				f.stopping = true
				close(f.stopped)
			}
			l.mu.Unlock()
		}
	}
	if err != nil {
		// The name comes from a record: one no Lock accepts leaves the key waiting, judged
		// again at each read.
		l.log.Warn("leasehold: locker: fence", "lease", name, "error", err)
	}
	return f
}

// unfence counts one user of f fewer; the last stops it.
func (l *Locker) unfence(f *fence) {
	l.mu.Lock()
	f.refs--
	if f.refs > 0 {
		l.mu.Unlock()
		return
	}
	if l.fences[f.name] == f {
		delete(l.fences, f.name)
	}
	stop := !f.stopping
	f.stopping = true
	l.mu.Unlock()
	if stop {
		f.stop()
	} else {
		<-f.stopped
	}
}

// stop stops the fence's Elector: a lease it took over is released (E7).
func (f *fence) stop() {
	ctx, cancel := context.WithTimeout(context.Background(), f.l.l)
	defer cancel()
	_ = f.e.Stop(ctx)
	close(f.stopped)
}

// over reports whether the session lease's leadership of term epoch has ended, as far as this
// fence knows (P8): the lease was seen at a later term, or released at that term (E5–E7 order
// both writes after the leadership's end), or has been missing for L on this instance's clock.
// Called with l.mu held.
func (f *fence) over(epoch uint64, now time.Time) bool {
	return f.top > epoch || f.released == epoch || (!f.missing.IsZero() && now.Sub(f.missing) >= f.l.l)
}

// event follows the fence's Elector, on its goroutine.
func (f *fence) event(ev cluster.Event) {
	l := f.l
	switch ev.Kind {
	case cluster.BecameLeader:
		// Taken over once expired: the holder's leadership has ended. Released at once, so
		// that the holder, if it lives on, takes its lease again within R.
		l.mu.Lock()
		f.top = max(f.top, ev.Term)
		stop := !f.stopping
		f.stopping = true
		f.wakeLocked()
		l.mu.Unlock()
		if stop {
			go f.stop()
		}
	case cluster.AttemptSucceeded, cluster.ObservedLeader, cluster.WatchedChange, cluster.ObservedRevision:
		l.mu.Lock()
		defer l.mu.Unlock()
		if ev.Kind == cluster.AttemptSucceeded && ev.Holder == "" && ev.Term == 0 {
			// Followed as missing (the gate refuses to create it).
			if f.missing.IsZero() {
				f.missing = time.Now()
				f.wakeLocked()
			}
			return
		}
		f.missing = time.Time{}
		wake := false
		if ev.Term > f.top {
			f.top, wake = ev.Term, true
		}
		if ev.Holder == "" && ev.Term > f.released {
			f.released, wake = ev.Term, true
		}
		if ev.Kind == cluster.ObservedRevision && ev.Holder != "" {
			f.revs++
			wake = true
		}
		if wake {
			f.wakeLocked()
		}
	}
}

// wakeLocked tells the keys waiting on the fence that it saw something. Called with l.mu held.
func (f *fence) wakeLocked() {
	close(f.changed)
	f.changed = make(chan struct{})
}

// fenceGate lets a fence take its lease over only once it has expired (E6); it follows the
// record as it is while it refuses (FollowsExpiry), so that the fence judges its expiry.
type fenceGate struct{}

var _ cluster.Gate = fenceGate{}

func (fenceGate) Admit(rec *cluster.Record, expired bool) bool {
	return rec != nil && expired && rec.Holder != ""
}
func (fenceGate) Drop()               {}
func (fenceGate) FollowsExpiry() bool { return true }
