package cluster

import (
	"context"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/leasehold/leasehold/store"
	"github.com/leasehold/leasehold/store/driver"
)

// The randomized test's simulated watch (E9): each instance's trackStore watches the lease
// through the writeLog, which sees every write in the order the store applied it, and sends
// the heartbeats its caller asks for (store.WithHeartbeat) through the same queue, unless the
// instance's watch is one that cannot (a quarter of them). Its faults,
// set by the test goroutine: notifications dropped, delayed (up to a maximum; heartbeats too),
// duplicated, reordered (held back until after the next one), and the stream cut without an
// error (silent: no notification and no heartbeat). A heartbeat vouches for the notifications
// queued before it, as a real one does: one is sent only when the last state the watch
// delivered is the latest written (not while a state is dropped, held back, or was delivered
// before an older one, which then replaced it in the caller's view). A watch is established only while the
// instance's store answers (an error fails it, a hang holds it until ctx ends or the fault
// heals, and a store that hangs sends no heartbeat).

type streamFaults struct {
	drop, dup, reorder float64 // probabilities per notification
	delay              time.Duration
	silent             bool
}

func (f streamFaults) any() bool { return f != streamFaults{} }

// streamSub is one watch's queue of notifications from the writeLog.
type streamSub struct {
	mu   sync.Mutex
	docs []map[string]any
	wake chan struct{}
}

func (w *writeLog) subscribe() (*streamSub, map[string]any) {
	sub := &streamSub{wake: make(chan struct{}, 1)}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.subs = append(w.subs, sub)
	doc, err := w.mem.Get(context.Background(), "cluster:leader")
	if err != nil {
		doc = nil
	}
	return sub, doc
}

func (w *writeLog) unsubscribe(sub *streamSub) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.subs = slices.DeleteFunc(w.subs, func(s *streamSub) bool { return s == sub })
}

// publish queues the document now stored to every watch. The caller holds w.mu.
func (w *writeLog) publish() {
	doc, err := w.mem.Get(context.Background(), "cluster:leader")
	if err != nil {
		doc = nil
	}
	for _, sub := range w.subs {
		sub.mu.Lock()
		sub.docs = append(sub.docs, driver.CopyDoc(doc))
		sub.mu.Unlock()
		select {
		case sub.wake <- struct{}{}:
		default:
		}
	}
}

type delivery struct {
	doc  map[string]any
	due  time.Time
	seq  int  // the order in which the writeLog published it
	beat bool // a heartbeat, not a state
}

func (s trackStore) Watch(ctx context.Context, key string, fn func(store.Change)) (err error) {
	n := s.n
	defer func() { n.trace("watch ends: %v", err) }()
	// The establishment is a request: it fails, hangs or waits as the store's calls do.
	st := n.f.State()
	latency, ferr, hang, release := st.Latency, st.Err, st.Hang, st.Released
	switch {
	case ferr != nil:
		return ferr
	case hang:
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-release:
			return errInjected
		}
	case latency > 0:
		t := time.NewTimer(latency)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
	sub, first := n.w.subscribe()
	defer n.w.unsubscribe(sub)
	change := func(doc map[string]any) store.Change {
		if doc == nil {
			return store.Change{}
		}
		return store.Change{Found: true, Doc: n.storeDoc(driver.CopyDoc(doc), false)}
	}
	n.mu.Lock()
	sf := n.stream
	n.mu.Unlock()
	n.trace("watch established (silent %v): holder %v term %v", sf.silent, first["holder"], first["term"])
	if !sf.silent {
		fn(change(first))
	}
	var queue []delivery
	var held map[string]any
	// seq numbers the states the writeLog published to this watch (the first is 0); last is
	// that of the state delivered last: the caller's view is current when they are equal.
	seq, last, heldSeq := 0, 0, 0
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	var beats <-chan time.Time
	if d := store.HeartbeatEvery(ctx); d > 0 && !n.noBeats {
		t := time.NewTicker(d)
		defer t.Stop()
		beats = t.C
	}
	for {
		now := time.Now()
		n.mu.Lock()
		sf, rng := n.stream, n.streamRng
		n.mu.Unlock()
		for len(queue) > 0 && !queue[0].due.After(now) {
			d := queue[0]
			queue = queue[1:]
			if d.beat {
				if !sf.silent {
					fn(store.Change{Heartbeat: true})
				}
				continue
			}
			if !sf.silent {
				n.trace("watch delivers holder %v term %v revision %v", d.doc["holder"], d.doc["term"], d.doc["revision"])
				fn(change(d.doc))
				last = d.seq
			}
			if held != nil {
				h := held
				held = nil
				if !sf.silent {
					n.trace("watch delivers (reordered) holder %v term %v revision %v", h["holder"], h["term"], h["revision"])
					fn(change(h)) // reordered: after a newer one
					last = heldSeq
				}
			}
		}
		if len(queue) > 0 {
			timer.Reset(queue[0].due.Sub(now))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-timer.C:
		case <-beats:
			st := n.f.State()
			ferr, hang := st.Err, st.Hang
			if ferr != nil {
				return ferr
			}
			if hang || last != seq {
				continue // a connection that does not answer, or left its caller behind, proves nothing
			}
			var delay time.Duration
			if sf.delay > 0 {
				n.mu.Lock()
				delay = time.Duration(rng.Int64N(int64(sf.delay) + 1))
				n.mu.Unlock()
			}
			queue = insertDelivery(queue, delivery{beat: true, due: time.Now().Add(delay)})
		case <-sub.wake:
			sub.mu.Lock()
			docs := sub.docs
			sub.docs = nil
			sub.mu.Unlock()
			ferr := n.f.State().Err
			if ferr != nil {
				return ferr // the connection is gone with the store's
			}
			for _, doc := range docs {
				seq++
				copies := 1
				if sf.any() {
					n.mu.Lock()
					p := func() float64 { return rng.Float64() }
					switch {
					case p() < sf.drop:
						copies = 0
					case p() < sf.dup:
						copies = 2
					case held == nil && p() < sf.reorder:
						held, heldSeq, copies = doc, seq, 0
					}
					var delay time.Duration
					if sf.delay > 0 {
						delay = time.Duration(rng.Int64N(int64(sf.delay) + 1))
					}
					n.mu.Unlock()
					for range copies {
						queue = insertDelivery(queue, delivery{doc: doc, due: time.Now().Add(delay), seq: seq})
					}
					continue
				}
				queue = insertDelivery(queue, delivery{doc: doc, due: time.Now(), seq: seq})
			}
		}
	}
}

// insertDelivery keeps the queue in order of due time, in arrival order among equals.
func insertDelivery(q []delivery, d delivery) []delivery {
	i := len(q)
	for i > 0 && q[i-1].due.After(d.due) {
		i--
	}
	return slices.Insert(q, i, d)
}

var streamFaultKinds = []string{"stream-drop", "stream-delay", "stream-dup", "stream-reorder", "stream-silent", "stream-mix"}

// streamFault gives n a fault of its watch until a random heal; the liveness bounds of an
// instance whose watch is faulty, or was within its window, take the watch's worst case (E9).
func (s *rsim) streamFault(n *rnode) {
	kind := streamFaultKinds[s.rng.IntN(len(streamFaultKinds))]
	var sf streamFaults
	switch kind {
	case "stream-drop":
		sf.drop = 0.2 + 0.8*s.rng.Float64()
	case "stream-delay":
		sf.delay = s.between(time.Millisecond, s.r)
	case "stream-dup":
		sf.dup = s.rng.Float64()
	case "stream-reorder":
		sf.reorder = s.rng.Float64()
	case "stream-silent":
		sf.silent = true
	default:
		sf = streamFaults{drop: s.rng.Float64() / 2, dup: s.rng.Float64() / 2, reorder: s.rng.Float64() / 2, delay: s.between(0, s.r/2)}
	}
	n.mu.Lock()
	n.stream = sf
	n.streamRng = rand.New(rand.NewPCG(s.rng.Uint64(), 0))
	if !n.streamFaulty && !time.Now().Before(n.streamTaint) {
		n.streamDelay = 0 // what the last fault left is gone
	}
	n.streamDelay = max(n.streamDelay, sf.delay)
	n.streamTaint = time.Time{} // tainted until healed
	n.streamFaulty = true
	n.mu.Unlock()
	n.streamHealAt = time.Now().Add(s.between(s.r/4, 3*s.l))
	s.dirty = true
	s.st.count("fault: "+kind, 1)
	s.note("fault %s on %s until +%v", kind, n.id, n.streamHealAt.Sub(s.begin))
}

func (s *rsim) streamHeal(n *rnode) {
	n.mu.Lock()
	if n.streamFaulty {
		n.stream = streamFaults{}
		n.streamFaulty = false
		// What the fault left (late notifications and heartbeats, a proof of life trusted for
		// R) is gone by then.
		n.streamTaint = time.Now().Add(n.streamDelay + n.e.aliveWindow())
	}
	n.mu.Unlock()
	n.streamHealAt = time.Time{}
	s.dirty = true
}

// streamSlack returns how much later than R an instance may first see a write made at write
// because of its watch's faults: 0 when its watch was clean at the write and is now. E9: a
// follower trusts a proof of life for R (R + R/2 when its watch says it sends no heartbeats);
// a watch that lost the write proves nothing after it (no heartbeat, no change), so its last
// proof came by the write's time plus the largest delay, and the follower reads R (R + R/2)
// after that; a watch that did not lose it delivers it within that delay. A write made while
// the watch was faulty, or tainted by what the fault left, keeps that slack after the watch is
// clean again: its delivery may still come that late.
func (n *rnode) streamSlack(write, now time.Time) time.Duration {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.streamFaulty || now.Before(n.streamTaint) || write.Before(n.streamTaint) {
		if n.beatless {
			return n.streamDelay + n.r/2
		}
		return n.streamDelay
	}
	return 0
}

// beatlessLock is the Lock of an instance whose watch sends no heartbeats and says so
// (HeartbeatWatcher), as the Kubernetes Lease's Lock does.
type beatlessLock struct{ Lock }

func (l beatlessLock) Watch(ctx context.Context, name string, fn func(Record, error)) error {
	return l.Lock.(Watcher).Watch(ctx, name, fn)
}

func (beatlessLock) WatchHeartbeats() bool { return false }

// A write made while an instance's watch was faulty keeps the watch's slack once the watch is
// clean again: its delivery may come that late (seeds 180 and 211 of L15s-R5s-clocks saw a
// write delivered 3.4 and 4.5 s late, and a bound re-armed after the taint had ended forgot
// it). A write made once the watch was clean has none.
func TestStreamSlackOfAWriteDuringAFault(t *testing.T) {
	t0 := time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)
	n := &rnode{streamFaulty: true, streamDelay: 4 * time.Second}
	if got := n.streamSlack(t0, t0); got != 4*time.Second {
		t.Fatalf("slack while faulty: %v; want the delay", got)
	}
	// Healed at t0+1s; tainted until t0+1s + delay + alive window.
	n.streamFaulty, n.streamTaint = false, t0.Add(9*time.Second)
	later := t0.Add(time.Minute)
	if got := n.streamSlack(t0, later); got != 4*time.Second {
		t.Errorf("slack of a write made during the fault, checked after the taint: %v; want the delay", got)
	}
	if got := n.streamSlack(t0.Add(10*time.Second), later); got != 0 {
		t.Errorf("slack of a write made after the taint: %v; want 0", got)
	}
	// A watch that sends no heartbeats is trusted R/2 longer: a write it lost is seen that late.
	n.beatless, n.r = true, 5*time.Second
	if got := n.streamSlack(t0, later); got != 6500*time.Millisecond {
		t.Errorf("slack of a write made during the fault of a watch without heartbeats: %v; want the delay + R/2", got)
	}
	if got := n.streamSlack(t0.Add(10*time.Second), later); got != 0 {
		t.Errorf("slack of a write made after the taint, without heartbeats: %v; want 0", got)
	}
}
