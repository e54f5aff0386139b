package cluster

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/leasehold/leasehold/store/memory"
)

// rsim is the world of one random seed. Only the test goroutine touches its fields, except through the
// locks of writeLog and rnode.
type rsim struct {
	t     *testing.T
	cfg   randomConfig
	seed  uint64
	l, r  time.Duration
	rng   *rand.Rand
	wl    *writeLog
	begin time.Time
	end   time.Time
	st    *randomStats

	slots  []*rslot
	nodes  []*rnode // every incarnation ever started
	active []*rnode // those that may still lead, call the store or run callbacks

	spans    []*leadSpan // leaderships that may still overlap a later one
	lastSpan *leadSpan   // the leadership that started last, for the order of terms
	fnSpans  []*fnSpan   // fn runs that may still overlap a later one
	armed    *armedBound // the liveness bound in force while nobody leads

	calm       bool
	phaseEnd   time.Time
	nextAction time.Time
	// An action aimed at the instant an instance is due to take the lease over (a bound of
	// kind L or R), where its attempt and the action race.
	aimedAt    time.Time
	aimedNode  *rnode
	aimedCrash bool

	// gen counts what other goroutines did (events, callbacks, store calls and writes, Stop
	// results): a step at which it has not moved has nothing new to collect, and the bound
	// and the due times computed at the last change still hold.
	gen      atomic.Int64
	seenGen  int64
	dirty    bool // the test goroutine changed something itself
	curBound armedBound
	hasBound bool
	nextDue  time.Time

	trace    [48]string // recent actions and leadership changes, for failure messages
	traceLen int

	jumpRng  *rand.Rand // wall clock jumps (randomConfig.wallJumps), apart from the faults'
	nextJump time.Time
}

type rslot struct {
	idx       int
	inc       int
	cur       *rnode    // the live incarnation, nil while down
	restartAt time.Time // when a new incarnation starts, while down
}

func runRandomSeed(t *testing.T, cfg randomConfig, seed uint64, st *randomStats) {
	s := &rsim{
		t: t, cfg: cfg, seed: seed, l: cfg.l, r: cfg.r,
		rng:   rand.New(rand.NewPCG(seed, 0x1ea5e401d)),
		begin: time.Now(),
		st:    st,
	}
	s.wl = &writeLog{mem: memory.New(), gen: &s.gen}
	s.end = s.begin.Add(time.Duration(cfg.hours * float64(time.Hour)))
	t.Cleanup(s.teardown)
	for i := range 3 + s.rng.IntN(3) {
		sl := &rslot{idx: i}
		s.slots = append(s.slots, sl)
		s.startNode(sl)
	}
	s.phaseEnd = s.begin.Add(s.between(8*s.l, 40*s.l))
	s.nextAction = s.begin.Add(s.between(0, s.l))
	if cfg.wallJumps {
		s.jumpRng = rand.New(rand.NewPCG(seed, 0x3a11c10c))
		s.nextJump = s.begin.Add(s.r)
	}
	stepMin, stepMax := s.r/time.Duration(cfg.steps), 5*s.r/time.Duration(cfg.steps)

	// The first step's checks, like every later one's, see the instances only once every
	// goroutine is blocked: an election goroutine caught between its IsLeader store and its
	// BecameLeader event would look like a W7 violation.
	synctest.Wait()
	s.dirty = true
	for {
		now := time.Now()
		if !now.Before(s.end) {
			break
		}
		changed := false
		if g := s.gen.Load(); g != s.seenGen || s.dirty {
			s.seenGen, s.dirty, changed = g, false, true
			s.collect(now)
			s.pollStops(now)
			s.curBound, s.hasBound = s.bound()
		}
		s.checkStep(now)
		if !now.Before(s.nextDue) {
			s.act(now)
		}
		if changed || s.dirty || !now.Before(s.nextDue) {
			s.curBound, s.hasBound = s.bound()
			if s.armed != nil {
				// The step's actions may have moved the bound (a fault, a crash): measure the
				// next takeover against the one in force from now on.
				s.armed = nil
				if s.hasBound {
					b := s.curBound
					s.armed = &b
				}
			}
			s.nextDue = s.end
			for _, at := range s.dueTimes() {
				if at.After(now) && at.Before(s.nextDue) {
					s.nextDue = at
				}
			}
		}

		next := now.Add(s.between(stepMin, stepMax))
		if s.nextDue.Before(next) {
			next = s.nextDue
		}
		if at := s.curBound.ref.Add(s.curBound.limit); s.hasBound && at.After(now) && at.Before(next) {
			next = at // check liveness at the very instant the bound falls
		}
		time.Sleep(next.Sub(now))
		if s.aimedNode != nil && !time.Now().Before(s.aimedAt) {
			s.fireAimed()
		}
		synctest.Wait()
		s.st.steps++
	}
	s.finish()
	s.st.seeds++
	s.st.fake += time.Since(s.begin)
}

// between returns a random duration in [lo, hi].
func (s *rsim) between(lo, hi time.Duration) time.Duration {
	if hi <= lo {
		return lo
	}
	return lo + time.Duration(s.rng.Int64N(int64(hi-lo)+1))
}

func (s *rsim) note(format string, args ...any) {
	s.trace[s.traceLen%len(s.trace)] = fmt.Sprintf("+%v ", time.Since(s.begin)) + fmt.Sprintf(format, args...)
	s.traceLen++
}

func (s *rsim) recent() string {
	var b strings.Builder
	first := max(0, s.traceLen-len(s.trace))
	for i := first; i < s.traceLen; i++ {
		b.WriteString("  ")
		b.WriteString(s.trace[i%len(s.trace)])
		b.WriteByte('\n')
	}
	return b.String()
}

func (s *rsim) fail(format string, args ...any) {
	s.t.Helper()
	msg := fmt.Sprintf(format, args...)
	at := time.Since(s.begin)
	s.teardown()
	// Time stops once this goroutine returns: let the calls of crashed instances still in
	// flight end by their latency (2L at most) and the callbacks by their delay (2L), or the
	// bubble would end in a deadlock rather than with this message.
	time.Sleep(3 * s.l)
	synctest.Wait()
	if s.cfg.failed != nil {
		s.cfg.failed(msg)
	}
	s.t.Fatalf("seed %d (%s, L=%v R=%v) at +%v: %s\nreplay: go test -race -run TestRandomFaults/%s -random.seed=%d ./cluster/\nrecent actions and leadership changes:\n%s",
		s.seed, s.cfg.name, s.l, s.r, at, msg, s.cfg.name, s.seed, s.recent())
}

func (s *rsim) startNode(sl *rslot) {
	sl.inc++
	now := time.Now()
	n := &rnode{gen: &s.gen, id: fmt.Sprintf("n%d.%d", sl.idx, sl.inc), slot: sl, startAt: now, clean: true, cleanSince: now, w: s.wl, simBegin: s.begin}
	n.l, n.r, n.nominal = s.l, s.r, s.l
	if s.cfg.fastest > 0 {
		// A generator of its own, as for priorities. The extremes come often: two instances
		// whose rates are as far apart as allowed, one leading and one following, are the
		// case the bound is for.
		rr := rand.New(rand.NewPCG(s.seed, 1<<63|uint64(sl.idx)<<32|uint64(sl.inc)))
		lo, hi := s.cfg.fastest.Milliseconds(), s.l.Milliseconds()
		ms := []int64{lo, hi, lo + rr.Int64N(hi-lo+1)}[rr.IntN(3)]
		n.l = time.Duration(ms) * time.Millisecond
		n.r = time.Duration(float64(s.r) * float64(n.l) / float64(s.l))
	}
	s.dirty = true
	if s.rng.IntN(10) < 3 {
		n.deDelay = s.between(time.Millisecond, 2*s.l)
	}
	n.fnMode = s.rng.IntN(3)
	n.noBeats = s.rng.IntN(4) == 0 // a Lock whose watch cannot send heartbeats (E9)
	if n.noBeats {
		// Half of them say so, as the Kubernetes Lease's Lock does (HeartbeatWatcher). A
		// generator of its own, so that the other faults of a seed stay those it had.
		rb := rand.New(rand.NewPCG(s.seed, 1<<62|uint64(sl.idx)<<32|uint64(sl.inc)))
		n.beatless = rb.IntN(2) == 0
	}
	n.f = newFaultStore(recStore{n: n, w: s.wl})
	var lock Lock = NewStoreLock(trackStore{n})
	if n.beatless {
		lock = beatlessLock{lock}
	}
	cfg := ElectorConfig{
		Lock: lock, LeaseName: "leader", LeaseDuration: n.l, RenewInterval: n.r,
		InstanceID: n.id, Logger: quietLogger(), Observer: n.observe,
	}
	if s.cfg.ranked {
		// A generator of its own, so that the faults of a seed stay those of the same seed
		// without priorities.
		rr := rand.New(rand.NewPCG(s.seed, uint64(sl.idx)<<32|uint64(sl.inc)))
		cfg.Priority = rr.IntN(4) - 1
		cfg.StabilityWindow = n.scale(s.l + time.Duration(rr.Int64N(int64(2*s.l))))
	}
	e, err := NewElector(cfg)
	if err != nil {
		s.fail("NewElector: %v", err)
	}
	n.e = e
	e.WhenLeader(n.fn, n.deregistered)
	ctx, cancel := context.WithCancel(context.Background())
	n.cancel = cancel
	if err := e.Start(ctx); err != nil {
		s.fail("Start %s: %v", n.id, err)
	}
	sl.cur, sl.restartAt = n, time.Time{}
	s.nodes = append(s.nodes, n)
	s.active = append(s.active, n)
	if len(s.nodes) > len(s.slots) {
		s.st.restarts++
	}
	if n.l != s.l {
		s.note("start %s (deregistered takes %v; L=%v R=%v, a clock %.4f times the fake one's rate)", n.id, n.deDelay, n.l, n.r, float64(s.l)/float64(n.l))
	} else {
		s.note("start %s (deregistered takes %v)", n.id, n.deDelay)
	}
}

func (s *rsim) byID(id string) *rnode {
	for _, n := range s.nodes {
		if n.id == id {
			return n
		}
	}
	return nil
}

func (s *rsim) live() []*rnode {
	var ns []*rnode
	for _, sl := range s.slots {
		if sl.cur != nil {
			ns = append(ns, sl.cur)
		}
	}
	return ns
}

// finish heals every store, stops every live instance, and checks that nothing is left
// running: no store call, no callback, no election goroutine.
func (s *rsim) finish() {
	for _, n := range s.active {
		s.heal(n)
		s.streamHeal(n)
	}
	for _, n := range s.live() {
		s.stop(n, false)
		n.slot.restartAt = time.Time{}
	}
	for _, n := range s.active {
		if n.state == nodeStopping {
			s.stopped(n, <-n.stopDone)
		}
	}
	// Calls in flight end by their context (L-R at most) and callbacks by their delay (2L).
	time.Sleep(3 * s.l)
	synctest.Wait()
	now := time.Now()
	s.collect(now)
	s.curBound, s.hasBound = s.bound()
	s.checkStep(now)
	for _, n := range s.nodes {
		select {
		case <-n.e.Done():
		default:
			s.fail("%s: election goroutine still running after Stop", n.id)
		}
		n.mu.Lock()
		inflight, fa, da := n.inflight, n.fnActive, n.deActive
		n.mu.Unlock()
		if inflight != 0 || fa != 0 || da != 0 {
			s.fail("%s: %d store calls, %d fn and %d deregistered calls still running after Stop", n.id, inflight, fa, da)
		}
	}
	s.wl.mu.Lock()
	s.st.writes += s.wl.writes
	s.st.zombieWrites += s.wl.zombie
	s.wl.mu.Unlock()
}

// teardown ends every instance without checks, so that a failed seed leaves no goroutine
// behind; it does nothing after finish.
func (s *rsim) teardown() {
	for _, n := range s.nodes {
		n.f.Heal()
	}
	for _, n := range s.nodes {
		switch n.state {
		case nodeLive:
			n.crashed.Store(true)
			(&node{t: s.t, e: n.e, faults: n.f}).crash()
			n.state = nodeCrashed
		case nodeStopping:
			if !n.stopResult {
				<-n.stopDone
				n.stopResult = true
			}
			n.state = nodeStopped
		}
	}
}
