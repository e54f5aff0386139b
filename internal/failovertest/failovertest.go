// Package failovertest is the failover test of the networked stores: three
// Electors over one store, each through a TCP proxy of its own (internal/tcpproxy), in real
// time with L = 600ms and R = 200ms. The leader's network is cut, then healed; connections are
// reset; the new leader stops cleanly. Throughout, never two leaders at once.
package failovertest

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	mrand "math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/leasehold/leasehold/cluster"
	"github.com/leasehold/leasehold/internal/leakcheck"
	"github.com/leasehold/leasehold/internal/tcpproxy"
	"github.com/leasehold/leasehold/store"
)

// Timing of the test.
const (
	LeaseDuration = 600 * time.Millisecond // L
	RenewInterval = 200 * time.Millisecond // R

	// Slack is added to every bound the test checks. The bounds of the contract hold for an
	// election whose goroutines run on time and whose store answers at once; Slack covers the
	// scheduling delays of a loaded machine under -race, and the round trips of the store on
	// loopback (a takeover is a Get and a conditional Patch, after a Get that saw the old
	// revision).
	Slack = 150 * time.Millisecond

	// Instances is the number of Electors.
	Instances = 3
)

// How long each phase may take before the test gives up on it. These are not the bounds the
// test checks (see Slack): they only stop a broken test from hanging.
const (
	settleTimeout   = 15 * time.Second
	failoverTimeout = 10 * time.Second
	// rejoinTimeout covers the clients' own reconnection schedules after the partition heals
	// (the etcd client's backoff, NATS's reconnect wait), which the election cannot shorten.
	rejoinTimeout = 20 * time.Second
	stopTimeout   = 10 * time.Second
)

// Open returns a store connected to the server through addr (the host:port of a proxy in front
// of the server). Every store Open returns for one Run must share the same data (same table,
// key prefix or bucket), unique to the test. Run closes the stores it opened.
type Open func(t *testing.T, addr string) store.Store

// Run runs the failover scenario against the server at target (a host:port on loopback):
//
//  1. Three Electors start on one lease, each over its own store through its own proxy:
//     exactly one leads, the others observe it (E2).
//  2. Every proxy resets its connections: the election goes on with at most one leader, and
//     settles with one (E4, E8).
//  3. The leader's proxy is cut (a partition: its connections hang): it stops leading by E5,
//     no later than (L+R)/2 after the start of its last successful attempt, and another
//     instance takes over within L + R of the old leader's last renewal, which is no later
//     than the cut (E6); the old leadership ends before the new one begins, by the events and
//     by the callbacks (W3, W7).
//  4. The partition heals: the old leader's attempts succeed again and it follows the new
//     leader (ObservedLeader, never BecameLeader).
//  5. The new leader stops cleanly: another instance takes over within R of the release (E7).
//
// At every event of every instance, IsLeader of all three is sampled: never two at once (W7).
// At the end every Elector is stopped, every store closed, every proxy closed, and no
// goroutine started by them is left. Figures are logged with t.Logf; on failure, the timeline
// of events and the Electors' logs are.
func Run(t *testing.T, target string, open Open) {
	t.Helper()
	h := newHarness(t)
	h.lease = uniqueLease(t)
	t.Cleanup(h.teardown)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("timeline of the events (ms since the start; leaders = instances whose IsLeader was true at the event):\n%s", h.timeline())
			t.Logf("electors' logs:\n%s", h.logs.String())
		}
	})
	h.tracker.Do(func() { h.setUp(t, target, open) })

	h.phaseElect()
	h.phaseReset()
	old, next := h.phaseCut()
	h.phaseHeal(old, next)
	h.phaseStop(next)

	if len(h.tracker.Running()) == 0 {
		t.Error("the leak check sees none of the Electors' goroutines: it would prove nothing")
	}
	h.teardown()
	h.checkIntervals()
	h.tracker.Check(t, 10*time.Second)
}

func newHarness(t testing.TB) *harness {
	return &harness{t: t, tracker: leakcheck.New(), notify: make(chan struct{}, 1), start: time.Now()}
}

func uniqueLease(t *testing.T) string {
	b := make([]byte, 6)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return "failover-" + hex.EncodeToString(b)
}

// instance is one Elector, its store and its proxy.
type instance struct {
	id     string
	proxy  *tcpproxy.Proxy
	store  store.Store
	e      *cluster.Elector
	remove func()
	closed bool
}

// observed is an event as the test saw it.
type observed struct {
	ev      cluster.Event
	leaders []string // instances whose IsLeader() was true when the event was observed
}

// callback is a run of a WhenLeader callback: fn starting, or deregistered.
type callback struct {
	instance string
	fn       bool // fn started (else deregistered ran)
	at       time.Time
}

type harness struct {
	t       testing.TB // the checks report here (a testing.TB so that their own tests can fake it)
	lease   string
	tracker *leakcheck.Tracker
	start   time.Time
	insts   []*instance
	logs    syncBuffer

	mu        sync.Mutex
	events    []observed
	callbacks []callback
	notify    chan struct{} // a value when events were added

	teardownOnce sync.Once
}

func (h *harness) setUp(t *testing.T, target string, open Open) {
	logger := slog.New(slog.NewTextHandler(&h.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	for i := range Instances {
		p, err := tcpproxy.New(target)
		if err != nil {
			t.Fatal(err)
		}
		in := &instance{id: fmt.Sprintf("i%d", i+1), proxy: p}
		h.insts = append(h.insts, in)
		in.store = open(t, p.Addr())
		e, err := cluster.NewElector(cluster.ElectorConfig{
			Lock:          cluster.NewStoreLock(in.store),
			LeaseName:     h.lease,
			LeaseDuration: LeaseDuration,
			RenewInterval: RenewInterval,
			InstanceID:    in.id,
			Logger:        logger,
			Observer:      h.observe,
		})
		if err != nil {
			t.Fatal(err)
		}
		in.e = e
		id := in.id
		in.remove = e.WhenLeader(func(ctx context.Context) error {
			h.addCallback(callback{instance: id, fn: true, at: time.Now()})
			<-ctx.Done()
			return nil
		}, func() {
			h.addCallback(callback{instance: id, at: time.Now()})
		})
	}
	// Every Elector exists before any starts: the observers sample all of them.
	for _, in := range h.insts {
		if err := in.e.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
}

// observe is every Elector's Observer: it samples IsLeader of all of them and records the
// event. It runs on the election goroutines, and does not block.
func (h *harness) observe(ev cluster.Event) {
	var leaders []string
	for _, in := range h.insts {
		if in.e.IsLeader() {
			leaders = append(leaders, in.id)
		}
	}
	h.mu.Lock()
	h.events = append(h.events, observed{ev: ev, leaders: leaders})
	h.mu.Unlock()
	select {
	case h.notify <- struct{}{}:
	default:
	}
	if len(leaders) > 1 {
		h.t.Errorf("W7: at %s of %s, %v all say IsLeader", ev.Kind, ev.Instance, leaders)
	}
}

func (h *harness) addCallback(c callback) {
	h.mu.Lock()
	h.callbacks = append(h.callbacks, c)
	h.mu.Unlock()
}

// mark returns the number of events observed so far: waits from it see only later events.
func (h *harness) mark() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.events)
}

// waitFor waits until match accepts an event observed at index from or later, and returns its
// index and the event. match sees each event once, in order. The test fails after timeout.
func (h *harness) waitFor(what string, from int, timeout time.Duration, match func(i int, o observed) bool) (int, observed) {
	h.t.Helper()
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	next := from
	for {
		h.mu.Lock()
		evs := h.events[next:]
		h.mu.Unlock()
		for _, o := range evs {
			if match(next, o) {
				return next, o
			}
			next++
		}
		select {
		case <-h.notify:
		case <-timer.C:
			h.t.Fatalf("%s: not within %v", what, timeout)
		}
	}
}

func (h *harness) event(i int) observed {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.events[i]
}

func (h *harness) inst(id string) *instance {
	for _, in := range h.insts {
		if in.id == id {
			return in
		}
	}
	h.t.Fatalf("no instance %q", id)
	return nil
}

// phaseElect: one instance leads, and the two others follow it.
func (h *harness) phaseElect() {
	t := h.t
	_, first := h.waitFor("a first leader", 0, settleTimeout, func(_ int, o observed) bool {
		return o.ev.Kind == cluster.BecameLeader
	})
	leader := first.ev.Instance
	followers := map[string]bool{}
	h.waitFor("the others observing the first leader", 0, settleTimeout, func(_ int, o observed) bool {
		if o.ev.Kind == cluster.ObservedLeader && o.ev.Instance != leader {
			if o.ev.Holder != leader {
				t.Errorf("E2: %s observed %s as the leader, while %s leads", o.ev.Instance, o.ev.Holder, leader)
			}
			followers[o.ev.Instance] = true
		}
		return len(followers) == Instances-1
	})
	t.Logf("elected %s (term %d) %v after the start", leader, first.ev.Term, first.ev.Time.Sub(h.start).Round(time.Millisecond))
}

// phaseReset: every connection of every instance is reset at once; the election settles again
// with one leader, which may or may not be the same (a leader whose attempt fails stops
// leading, E4; its clients may take longer to reconnect than the lease lasts).
func (h *harness) phaseReset() {
	from := h.mark()
	resetAt := time.Now()
	for _, in := range h.insts {
		in.proxy.Reset()
	}
	ok := map[string]bool{}
	_, o := h.waitFor("one leader and every instance answering again after the reset", from, settleTimeout, func(_ int, o observed) bool {
		// A follower whose watch is healthy sends no attempts (E9): a change its watch brought
		// is its store answering.
		if o.ev.Kind == cluster.AttemptSucceeded || o.ev.Kind == cluster.WatchedChange {
			ok[o.ev.Instance] = true
		}
		return len(ok) == Instances && len(o.leaders) == 1
	})
	h.t.Logf("after a reset of every connection: %s leads, every instance answered within %v", o.leaders[0], o.ev.Time.Sub(resetAt).Round(time.Millisecond))
}

// renewal waits for a renewal by the instance that leads alone, and returns that instance.
// Its BecameLeader came before (an Elector reports a first acquisition's AttemptSucceeded
// before it leads, a renewal's while it leads), so every event of its leadership's start is
// recorded.
func (h *harness) renewal() *instance {
	_, o := h.waitFor("a renewal by the leader", h.mark(), settleTimeout, func(_ int, o observed) bool {
		return o.ev.Kind == cluster.AttemptSucceeded && len(o.leaders) == 1 && o.leaders[0] == o.ev.Instance
	})
	return h.inst(o.ev.Instance)
}

// phaseCut cuts the leader's network and checks that it stops leading by E5 and that another
// takes over within L + R of its last renewal. It returns the old and the new leader.
func (h *harness) phaseCut() (old, next *instance) {
	t := h.t
	old = h.renewal()
	// Cut somewhere in the interval before its next attempt: usually between two attempts,
	// sometimes while one is in flight (then its write may land and its answer be lost).
	offset := mrand.N(RenewInterval)
	<-time.After(offset)
	cutIdx := h.mark()
	cutAt := time.Now()
	old.proxy.Cut()

	stopIdx, stopped := h.waitFor("the cut leader stopping", cutIdx, failoverTimeout, func(_ int, o observed) bool {
		return o.ev.Instance == old.id && o.ev.Kind == cluster.StoppedLeading
	})
	// Its last successful attempt, whenever it started (perhaps before the cut).
	var last cluster.Event
	for i := stopIdx - 1; i >= 0; i-- {
		if o := h.event(i); o.ev.Instance == old.id && o.ev.Kind == cluster.AttemptSucceeded {
			last = o.ev
			break
		}
	}
	if last.Kind == 0 {
		t.Fatalf("no successful attempt of %s before it stopped leading", old.id)
	}
	// The event is emitted when the answer came; Duration is the attempt's, from its start.
	lastStart, lastRenewal := last.Time.Add(-last.Duration), last.Time
	e5 := (LeaseDuration + RenewInterval) / 2
	stoppedAfter := stopped.ev.Time.Sub(lastStart)
	if stoppedAfter > e5+Slack {
		t.Errorf("E5: %s stopped leading (%s) %v after the start of its last successful attempt, want at most (L+R)/2 = %v (+%v slack)",
			old.id, stopped.ev.Reason, stoppedAfter, e5, Slack)
	}

	tookIdx, took := h.waitFor("another instance taking over", cutIdx, failoverTimeout, func(_ int, o observed) bool {
		if o.ev.Instance == old.id && o.ev.Kind == cluster.BecameLeader {
			t.Errorf("%s became leader again while its network was cut", old.id)
		}
		return o.ev.Instance != old.id && o.ev.Kind == cluster.BecameLeader
	})
	next = h.inst(took.ev.Instance)
	// E6 counts from when the taker first saw the last revision, which its read brings only as
	// it returns, and the takeover is done once its write returns: the bound is L+R from the
	// last write plus those two answers, whatever the store's round trip (a TLS store under
	// -race took 250 to 320 ms). Each is at most the slowest successful attempt of the taker
	// between the cut and the takeover.
	var latency time.Duration
	for i := cutIdx; i <= tookIdx; i++ {
		if o := h.event(i); o.ev.Instance == next.id && o.ev.Kind == cluster.AttemptSucceeded {
			latency = max(latency, o.ev.Duration)
		}
	}
	// The last renewal the others saw may be later than the last one the leader saw succeed:
	// a renewal sent just before the cut reaches the store while its answer is lost. Nothing
	// crosses the proxy after the cut, so the cut is the latest a renewal can have landed.
	lastWrite := lastRenewal
	if cutAt.After(lastWrite) {
		lastWrite = cutAt
	}
	// Another follower's takeover may land too while its answer comes after its attempt's
	// timeout (a store slower than L − R): it does not lead, but its write is a new revision,
	// which the taker must let expire (E6). The taker's sight of such a revision comes after
	// it was written, so the last one bounds when the record last changed.
	h.mu.Lock()
	since, what := lastChange(h.events[cutIdx:tookIdx], old.id, next.id, lastWrite)
	h.mu.Unlock()
	takeover := took.ev.Time.Sub(since)
	if takeover > LeaseDuration+RenewInterval+2*latency+Slack {
		t.Errorf("E6: %s took over %v after %s, want at most L+R = %v (+ twice its slowest attempt, %v, + %v slack)",
			next.id, takeover, what, LeaseDuration+RenewInterval, latency, Slack)
	}
	if !stopped.ev.Time.Before(took.ev.Time) {
		t.Errorf("W7: %s became leader at %v, before %s stopped leading at %v",
			next.id, took.ev.Time.Sub(h.start), old.id, stopped.ev.Time.Sub(h.start))
	}
	if took.ev.Term <= stopped.ev.Term {
		t.Errorf("W8: the new term %d is not above the old %d", took.ev.Term, stopped.ev.Term)
	}
	t.Logf("cut %s %v after a renewal: it stopped leading (%s) %v after the start of its last successful attempt (bound (L+R)/2 = %v + %v); "+
		"%s took over %v after the cut (bound L+R = %v + 2 × %v + %v), %v after %s's last acknowledged renewal",
		old.id, offset.Round(time.Millisecond), stopped.ev.Reason, stoppedAfter.Round(time.Millisecond), e5, Slack,
		next.id, took.ev.Time.Sub(lastWrite).Round(time.Millisecond), LeaseDuration+RenewInterval, latency.Round(time.Millisecond), Slack,
		took.ev.Time.Sub(lastRenewal).Round(time.Millisecond), old.id)
	return old, next
}

// phaseHeal ends old's partition and checks that it follows next.
func (h *harness) phaseHeal(old, next *instance) {
	t := h.t
	healIdx := h.mark()
	healAt := time.Now()
	old.proxy.Heal()
	_, o := h.waitFor(old.id+" following "+next.id+" after the partition healed", healIdx, rejoinTimeout, func(_ int, o observed) bool {
		if o.ev.Instance == old.id && o.ev.Kind == cluster.BecameLeader {
			t.Errorf("%s became leader after the partition healed, while %s leads", old.id, next.id)
		}
		if o.ev.Instance == old.id && o.ev.Kind == cluster.ObservedLeader && o.ev.Holder != next.id {
			t.Errorf("%s observed %s as the leader after the partition healed, want %s", old.id, o.ev.Holder, next.id)
		}
		return o.ev.Instance == old.id && o.ev.Kind == cluster.ObservedLeader
	})
	if old.e.IsLeader() {
		t.Errorf("%s leads after rejoining as a follower", old.id)
	}
	if !next.e.IsLeader() {
		t.Errorf("%s no longer leads once %s rejoined", next.id, old.id)
	}
	t.Logf("healed %s: it follows %s %v after the heal (its store's client reconnecting)", old.id, next.id, o.ev.Time.Sub(healAt).Round(time.Millisecond))
}

// phaseStop stops leader cleanly and checks that another instance takes over within R of the
// release (E7). The Stop comes at whatever moment the phase reaches it, possibly while a
// renewal is in flight: the release must hold then too (TestE7StopReleasesAfterLostRenewalAnswer
// in package cluster is the deterministic version).
func (h *harness) phaseStop(leader *instance) {
	t := h.t
	from := h.mark()
	ctx, cancel := context.WithTimeout(context.Background(), stopTimeout)
	defer cancel()
	if err := leader.e.Stop(ctx); err != nil {
		t.Fatalf("E7: Stop of the leader %s: %v", leader.id, err)
	}
	released := time.Now()
	if leader.e.IsLeader() {
		t.Errorf("E7: %s still leads after Stop", leader.id)
	}
	var stoppedAt time.Time
	_, took := h.waitFor("another instance taking over after the leader stopped", from, failoverTimeout, func(_ int, o observed) bool {
		if o.ev.Instance == leader.id && o.ev.Kind == cluster.StoppedLeading {
			stoppedAt = o.ev.Time
		}
		return o.ev.Instance != leader.id && o.ev.Kind == cluster.BecameLeader
	})
	if stoppedAt.IsZero() || !stoppedAt.Before(took.ev.Time) {
		t.Errorf("E7: %s became leader before %s stopped leading (at %v)", took.ev.Instance, leader.id, stoppedAt)
	}
	handover := took.ev.Time.Sub(released)
	if handover > RenewInterval+Slack {
		t.Errorf("E7: %s took over %v after %s released the lease, want at most R = %v (+%v slack)",
			took.ev.Instance, handover, leader.id, RenewInterval, Slack)
	}
	t.Logf("stopped %s: %s took over %v after the release (bound R = %v + %v)",
		leader.id, took.ev.Instance, handover.Round(time.Millisecond), RenewInterval, Slack)
}

// teardown stops every Elector, removes the callbacks, closes the stores and the proxies. It
// runs once: at the end of Run, or as a cleanup when the test stopped early.
func (h *harness) teardown() {
	h.teardownOnce.Do(func() {
		for _, in := range h.insts {
			if in.e != nil {
				ctx, cancel := context.WithTimeout(context.Background(), stopTimeout)
				if err := in.e.Stop(ctx); err != nil {
					h.t.Errorf("Stop of %s: %v", in.id, err)
				}
				cancel()
				in.remove()
			}
		}
		for _, in := range h.insts {
			if in.store != nil {
				if err := store.Close(in.store); err != nil {
					h.t.Errorf("closing the store of %s: %v", in.id, err)
				}
			}
			in.proxy.Close()
		}
	})
}

// checkIntervals checks that the leaderships of different instances never overlap: by the
// events (BecameLeader to StoppedLeading) and by the callbacks (fn starting to deregistered
// returning), W3 and W7.
func (h *harness) checkIntervals() {
	t := h.t
	type interval struct {
		instance   string
		start, end time.Time
	}
	var byEvents, byCallbacks []interval
	open := map[string]time.Time{}
	h.mu.Lock()
	for _, o := range h.events {
		switch o.ev.Kind {
		case cluster.BecameLeader:
			open[o.ev.Instance] = o.ev.Time
		case cluster.StoppedLeading:
			if s, ok := open[o.ev.Instance]; ok {
				byEvents = append(byEvents, interval{o.ev.Instance, s, o.ev.Time})
				delete(open, o.ev.Instance)
			}
		}
	}
	fnOpen := map[string]time.Time{}
	for _, c := range h.callbacks {
		if c.fn {
			fnOpen[c.instance] = c.at
		} else if s, ok := fnOpen[c.instance]; ok {
			byCallbacks = append(byCallbacks, interval{c.instance, s, c.at})
			delete(fnOpen, c.instance)
		}
	}
	h.mu.Unlock()
	if len(open) > 0 || len(fnOpen) > 0 {
		t.Errorf("W3: leaderships still open after every Elector stopped: by the events %v, by the callbacks %v", open, fnOpen)
	}
	if len(byEvents) < 2 {
		t.Errorf("only %d leaderships seen: the overlap check proves nothing", len(byEvents))
	}
	for _, set := range []struct {
		name string
		ivs  []interval
	}{{"events", byEvents}, {"callbacks", byCallbacks}} {
		for i, a := range set.ivs {
			for _, b := range set.ivs[i+1:] {
				if a.instance != b.instance && a.start.Before(b.end) && b.start.Before(a.end) {
					t.Errorf("W7: by the %s, the leaderships of %s [%v, %v] and %s [%v, %v] overlap", set.name,
						a.instance, a.start.Sub(h.start), a.end.Sub(h.start), b.instance, b.start.Sub(h.start), b.end.Sub(h.start))
				}
			}
		}
	}
}

// timeline formats every event, for a failing test's log.
func (h *harness) timeline() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var b strings.Builder
	for _, o := range h.events {
		ev := o.ev
		fmt.Fprintf(&b, "%6d %s %-17s term=%d", ev.Time.Sub(h.start).Milliseconds(), ev.Instance, ev.Kind, ev.Term)
		if ev.Holder != "" {
			fmt.Fprintf(&b, " holder=%s", ev.Holder)
		}
		if ev.Reason != "" {
			fmt.Fprintf(&b, " reason=%s", ev.Reason)
		}
		if ev.Duration != 0 {
			fmt.Fprintf(&b, " took=%v", ev.Duration.Round(time.Millisecond))
		}
		if ev.Err != nil {
			fmt.Fprintf(&b, " err=%q", ev.Err)
		}
		fmt.Fprintf(&b, " leaders=%v\n", o.leaders)
	}
	for _, c := range h.callbacks {
		what := "deregistered"
		if c.fn {
			what = "fn"
		}
		fmt.Fprintf(&b, "callback %6d %s %s\n", c.at.Sub(h.start).Milliseconds(), c.instance, what)
	}
	return b.String()
}

// syncBuffer is a bytes.Buffer safe for the Electors' loggers to write concurrently.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// lastChange returns when the record last changed before next took over, by what next saw
// (events from the cut to the takeover), and what that instant is: lastWrite, the latest
// the old leader's last renewal could have landed, unless next first saw, after it, a
// revision of a third instance's, a takeover that landed while its answer came too late for
// it to lead.
func lastChange(events []observed, old, next string, lastWrite time.Time) (time.Time, string) {
	since, what := lastWrite, fmt.Sprintf("%s's last renewal could have landed (its last acknowledged one, or the cut)", old)
	for _, o := range events {
		if o.ev.Instance == next && o.ev.Kind == cluster.ObservedRevision && o.ev.Holder != old && o.ev.Holder != next && o.ev.Time.After(since) {
			since, what = o.ev.Time, fmt.Sprintf("it first saw %s's unacknowledged takeover (term %d)", o.ev.Holder, o.ev.Term)
		}
	}
	return since, what
}
