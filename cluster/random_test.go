package cluster

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/leasehold/leasehold/store"
	"github.com/leasehold/leasehold/store/memory"
)

// The randomized fault test: 3 to 5 electors over one memory store, each through a faultStore of
// its own (latency below and above L-R, errors, hangs, hangs that ignore ctx until healed,
// write-then-hang, partitions), crashes (node.crash) and restarts under new IDs, Stops and
// cancelled Start contexts, for many fake hours per seed. At every step (and at every instant a
// bound or a crashed leader's deadline falls) it checks:
//   - safety: at most one IsLeader, crashed instances included (W7); leaderships and fn runs of
//     different instances never overlap; terms grow when the holder changes (W8); every write
//     to the record is a create, renewal, takeover or release as E2 and E7 allow;
//   - timing, from the Observer events: a leadership ends at the latest, and on a deadline
//     exactly, (L+R)/2 after the start of its last successful attempt (E5); a timeout comes
//     after exactly L-R (E3); a failed attempt ends a leadership at once (E4); a takeover
//     comes at least L after the revision it replaces was written (E6);
//   - liveness: while nobody leads, for every live instance whose store has been clean (no
//     fault, no faulty call in flight) since some time: someone leads by L after it read the
//     holder's current revision on a clean store (E6), by R after the lease was released, or is
//     absent, or its own (E7, E1), and by L+R after the later of the last write, its start and
//     its clean time otherwise;
//   - Stop (E7, W3): a release is only tried while Stop runs and after every callback returned;
//     a leader with a clean store and quick callbacks releases at once; a Stop that returns nil
//     leaves the lease unheld and every fn paired with a deregistered.
//
// The bounds are exact in fake time: slack would hide an off-by-one in the engine.
//
// Replay one seed: go test -race -run TestRandomFaults -random.seed=N ./cluster/
// More seeds:      go test -race -run TestRandomFaults -random.seeds=200 ./cluster/
//                  (or LEASEHOLD_RANDOM_SEEDS=200); -random.hours=H changes the fake duration.

var (
	flagRandomSeeds = flag.Int("random.seeds", 0, "TestRandomFaults: seeds per configuration (default $LEASEHOLD_RANDOM_SEEDS, else each configuration's own)")
	flagRandomSeed  = flag.Uint64("random.seed", 0, "TestRandomFaults: run this seed only")
	flagRandomHours = flag.Float64("random.hours", 0, "TestRandomFaults: fake hours per seed (default: each configuration's own)")
)

type randomConfig struct {
	name  string
	l, r  time.Duration
	hours float64 // fake hours per seed
	steps int     // steps are R/steps to 5R/steps long
	seeds int     // seeds in the normal run
}

func randomConfigs() []randomConfig {
	cs := []randomConfig{
		// Steps of 50 to 250 ms.
		{name: "L15s-R5s", l: 15 * time.Second, r: 5 * time.Second, hours: 24, steps: 100, seeds: 4},
		// The others run as many renew intervals (17,280) as 24 hours at R = 5 s, with steps
		// of R/50 to R/10: at 24 fake hours L1s-R250ms would cost 20 times more, too slow
		// for the normal run (-random.hours=24 does it). Here the timeout L-R ends after the
		// deadline (L+R)/2, so an attempt can succeed too late to lead (E5).
		{name: "L1s-R250ms", l: time.Second, r: 250 * time.Millisecond, hours: 1.2, steps: 50, seeds: 3},
		// L is no multiple of R: a follower's attempt at the expiry (E6) falls between two
		// regular ones.
		{name: "L10s-R3s", l: 10 * time.Second, r: 3 * time.Second, hours: 14.4, steps: 50, seeds: 3},
	}
	if *flagRandomHours > 0 {
		for i := range cs {
			cs[i].hours = *flagRandomHours
		}
	}
	return cs
}

func randomSeedList(t *testing.T, n int) []uint64 {
	if *flagRandomSeed != 0 {
		return []uint64{*flagRandomSeed}
	}
	if v := os.Getenv("LEASEHOLD_RANDOM_SEEDS"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < 1 {
			t.Fatalf("LEASEHOLD_RANDOM_SEEDS=%q: want a positive integer", v)
		}
	}
	if *flagRandomSeeds > 0 {
		n = *flagRandomSeeds
	}
	seeds := make([]uint64, n)
	for i := range seeds {
		seeds[i] = uint64(i + 1)
	}
	return seeds
}

// E1-E8, W3-W5, W7, W8 under random faults. Every seed of every configuration runs in
// parallel; each configuration logs what its seeds covered (go test -v).
func TestRandomFaults(t *testing.T) {
	for _, cfg := range randomConfigs() {
		t.Run(cfg.name, func(t *testing.T) {
			t.Parallel()
			total := newRandomStats()
			t.Cleanup(func() { t.Logf("%s: %s", cfg.name, total) }) // after the seeds' subtests
			for _, seed := range randomSeedList(t, cfg.seeds) {
				t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
					t.Parallel()
					st := newRandomStats()
					synctest.Test(t, func(t *testing.T) { runRandomSeed(t, cfg, seed, st) })
					total.add(st)
				})
			}
		})
	}
}

// rsim is one seed's world. Only the test goroutine touches its fields, except through the
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
}

type rslot struct {
	idx       int
	inc       int
	cur       *rnode    // the live incarnation, nil while down
	restartAt time.Time // when a new incarnation starts, while down
}

type nodeState int

const (
	nodeLive nodeState = iota
	nodeStopping
	nodeStopped
	nodeCrashed
)

// rnode is one incarnation of a slot: an Elector with its own ID and faultStore.
type rnode struct {
	gen     *atomic.Int64
	id      string
	slot    *rslot
	e       *Elector
	f       *faultStore
	startAt time.Time
	deDelay time.Duration // how long each deregistered call takes
	fnMode  int           // 0: fn returns nil, 1: an error, 2: panics (W5); always after ctx ends

	// Owned by the test goroutine.
	state      nodeState
	leadEnd    time.Time // crashed: when its IsLeader turns false (its leadership deadline)
	healAt     time.Time // when its current fault ends; zero when none is scheduled
	open       *leadSpan
	okStart    time.Time   // start of its last successful attempt, from its events
	spans      []*leadSpan // its recent leaderships, to place its fn runs
	cancel     context.CancelFunc
	fnOpen     *fnSpan
	stopAt     time.Time
	stopLead   bool // it led when Stop was called
	stopClean  bool // its store was clean when Stop was called
	stopDone   chan error
	stopResult bool

	crashed     atomic.Bool
	stopping    atomic.Bool
	stopReturns atomic.Bool // its Stop has returned

	mu         sync.Mutex
	events     []Event
	fnMarks    []fnMark
	errs       []string
	fnActive   int
	deActive   int
	inCall     int
	fnCount    int
	deCount    int
	seenRev    string    // the last revision it read with a clean call
	seenAt     time.Time // when it first read it so
	inflight   int       // store calls in flight that started under a fault
	clean      bool      // no fault set and no faulty call in flight
	cleanSince time.Time
	released   []time.Time // releases the store applied
}

type fnMark struct {
	start   bool
	at      time.Time
	term    uint64
	hasTerm bool
}

type leadSpan struct {
	n          *rnode
	term       uint64
	start, end time.Time
	closed     bool
	deadline   time.Time // start of the last successful attempt + (L+R)/2 (E5)
}

type fnSpan struct {
	n          *rnode
	term       uint64
	lead       *leadSpan
	start, end time.Time
	closed     bool
}

func spanOverlap(aStart, aEnd time.Time, aClosed bool, bStart, bEnd time.Time, bClosed bool) bool {
	return (!bClosed || aStart.Before(bEnd)) && (!aClosed || bStart.Before(aEnd))
}

// armedBound is the liveness bound computed at a step where nobody led: someone must lead by
// ref+limit. It is kept to measure how close the next takeover came to it.
type armedBound struct {
	ref   time.Time
	limit time.Duration
	kind  string // "L+R" or "R"
	w     time.Time
	who   string
}

// writeLog sits between every faultStore and the memory store: it sees each write in the order
// the store applied it, and checks the record's invariants (E2, E7, W8) as they happen.
type writeLog struct {
	mem *memory.Store
	gen *atomic.Int64
	l   time.Duration

	mu     sync.Mutex
	cur    leaseState
	hist   []leaseWrite // recent writes
	errs   []string
	writes int
	zombie int // writes by instances already crashed (an attempt that was in flight)
}

type leaseState struct {
	exists bool
	rev    string
	holder string
	term   uint64
	at     time.Time
	by     *rnode
}

type leaseWrite struct {
	at, prevAt time.Time
	holder     string
	by         *rnode
}

func (w *writeLog) wrote(n *rnode, op string, fields map[string]any) {
	now := time.Now()
	holder, _ := fields["holder"].(string)
	term64, _ := fields["term"].(float64)
	term := uint64(term64)
	prev := w.cur
	bad := func(format string, args ...any) {
		w.errs = append(w.errs, fmt.Sprintf("%s by %s (holder %q term %d; was holder %q term %d): ", op, n.id, holder, term, prev.holder, prev.term)+fmt.Sprintf(format, args...))
	}
	switch {
	case op == "create":
		if prev.exists || holder != n.id || term != 1 {
			bad("E2: a created record is held by its creator with term 1")
		}
	case holder == "":
		if prev.holder != n.id || term != prev.term {
			bad("E7: only the holder releases, keeping the term")
		}
		if !n.stopping.Load() {
			bad("E7: released by an instance that is not stopping")
		}
		n.mu.Lock()
		fa, da := n.fnActive, n.deActive
		n.released = append(n.released, now)
		n.mu.Unlock()
		if fa != 0 || da != 0 {
			bad("E7: released while %d fn and %d deregistered calls still ran", fa, da)
		}
	case holder == prev.holder:
		if holder != n.id || term != prev.term {
			bad("E2: a renewal is written by the holder and keeps the term")
		}
	default:
		if holder != n.id || term != prev.term+1 {
			bad("E2/W8: a takeover is written by the new holder with term+1")
		}
		// E6: a revision expires L after the taker first saw it, which is no earlier than
		// when it was written.
		if prev.holder != "" && now.Sub(prev.at) < w.l {
			bad("E6: taken over %v after its last write, before it could expire (L = %v)", now.Sub(prev.at), w.l)
		}
	}
	if n.crashed.Load() {
		w.zombie++
	}

	w.writes++
	w.gen.Add(1)
	rev, _ := fields["revision"].(string)
	w.cur = leaseState{exists: true, rev: rev, holder: holder, term: term, at: now, by: n}
	if len(w.hist) >= 16 {
		w.hist = slices.Delete(w.hist, 0, 1)
	}
	w.hist = append(w.hist, leaseWrite{at: now, prevAt: prev.at, holder: holder, by: n})
}

// recStore is an instance's view of the shared memory store, below its faultStore: writes that
// reach it are applied, so it logs them.
type recStore struct {
	n *rnode
	w *writeLog
}

func (s recStore) Get(ctx context.Context, key string) (map[string]any, error) {
	return s.w.mem.Get(ctx, key)
}

func (s recStore) Create(ctx context.Context, key string, doc map[string]any) error {
	s.w.mu.Lock()
	defer s.w.mu.Unlock()
	err := s.w.mem.Create(ctx, key, doc)
	if err == nil {
		s.w.wrote(s.n, "create", doc)
	}
	return err
}

func (s recStore) Patch(ctx context.Context, key string, fields map[string]any, cond *store.Condition) error {
	s.w.mu.Lock()
	defer s.w.mu.Unlock()
	err := s.w.mem.Patch(ctx, key, fields, cond)
	if err == nil {
		s.w.wrote(s.n, "patch", fields)
	}
	return err
}

func (s recStore) Delete(ctx context.Context, key string, cond *store.Condition) error {
	s.w.mu.Lock()
	s.w.errs = append(s.w.errs, fmt.Sprintf("%s deleted the lease record: the elector never deletes", s.n.id))
	s.w.mu.Unlock()
	return s.w.mem.Delete(ctx, key, cond)
}

// trackStore is what an instance's Lock calls: it counts the calls that start while the
// instance's faultStore has a fault, so that "clean since" covers a slow call that started
// before a heal and still runs after it.
type trackStore struct{ n *rnode }

func faultsClear(f *faultStore) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.latency == 0 && f.err == nil && !f.hang && !f.writeThenHang
}

func (s trackStore) begin() bool {
	if faultsClear(s.n.f) {
		return false
	}
	s.n.mu.Lock()
	s.n.inflight++
	s.n.mu.Unlock()
	return true
}

func (s trackStore) end(faulty bool) {
	if !faulty {
		return
	}
	s.n.mu.Lock()
	s.n.inflight--
	s.n.maybeCleanLocked()
	s.n.mu.Unlock()
	s.n.gen.Add(1)
}

func (s trackStore) Get(ctx context.Context, key string) (map[string]any, error) {
	faulty := s.begin()
	defer s.end(faulty)
	doc, err := s.n.f.Get(ctx, key)
	if rev, ok := doc["revision"].(string); ok && err == nil && !faulty {
		// A clean read answers at once, so the elector's first sight of this revision (E6)
		// is no later than this.
		s.n.mu.Lock()
		if rev != s.n.seenRev {
			s.n.seenRev, s.n.seenAt = rev, time.Now()
		}
		s.n.mu.Unlock()
	}
	return doc, err
}

func (s trackStore) Create(ctx context.Context, key string, doc map[string]any) error {
	faulty := s.begin()
	defer s.end(faulty)
	return s.n.f.Create(ctx, key, doc)
}

func (s trackStore) Patch(ctx context.Context, key string, fields map[string]any, cond *store.Condition) error {
	if h, ok := fields["holder"].(string); ok && h == "" {
		s.release()
	}
	faulty := s.begin()
	defer s.end(faulty)
	return s.n.f.Patch(ctx, key, fields, cond)
}

func (s trackStore) Delete(ctx context.Context, key string, cond *store.Condition) error {
	faulty := s.begin()
	defer s.end(faulty)
	return s.n.f.Delete(ctx, key, cond)
}

// release checks a release write as it is tried (E7): only while Stop runs, and only once every
// callback has returned. (Whether the store applies it, and whether its answer comes back, is up
// to the faults.)
func (s trackStore) release() {
	n := s.n
	n.mu.Lock()
	defer n.mu.Unlock()
	if !n.stopping.Load() || n.stopReturns.Load() {
		n.errs = append(n.errs, fmt.Sprintf("E7: %s tried to release the lease while its Stop was not running", n.id))
	}
	if n.fnActive != 0 || n.deActive != 0 {
		n.errs = append(n.errs, fmt.Sprintf("E7: %s tried to release the lease while %d fn and %d deregistered calls still ran", n.id, n.fnActive, n.deActive))
	}
	n.gen.Add(1)
}

func (n *rnode) maybeCleanLocked() {
	if !n.clean && n.inflight == 0 && faultsClear(n.f) {
		n.clean, n.cleanSince = true, time.Now()
	}
}

func (n *rnode) cleanState() (bool, time.Time) {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.clean, n.cleanSince
}

func (n *rnode) seen() (string, time.Time) {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.seenRev, n.seenAt
}

func (n *rnode) observe(ev Event) {
	n.mu.Lock()
	n.events = append(n.events, ev)
	n.mu.Unlock()
	n.gen.Add(1)
}

// enterLocked notes a call of the registration; two at once break W4.
func (n *rnode) enterLocked(what string) {
	n.inCall++
	if n.inCall > 1 {
		n.errs = append(n.errs, fmt.Sprintf("W4: %s of %s started while another call of its registration ran", what, n.id))
	}
}

func (n *rnode) fn(ctx context.Context) error {
	term, ok := TermOf(ctx)
	n.mu.Lock()
	n.enterLocked("fn")
	n.fnActive++
	n.fnCount++
	n.fnMarks = append(n.fnMarks, fnMark{start: true, at: time.Now(), term: term, hasTerm: ok})
	n.mu.Unlock()
	n.gen.Add(1)
	<-ctx.Done()
	n.mu.Lock()
	n.fnMarks = append(n.fnMarks, fnMark{at: time.Now()})
	n.fnActive--
	n.inCall--
	n.mu.Unlock()
	n.gen.Add(1)
	switch n.fnMode {
	case 1:
		return errors.New("fn fails on purpose")
	case 2:
		panic("fn panics on purpose")
	}
	return nil
}

func (n *rnode) deregistered() {
	n.mu.Lock()
	n.enterLocked("deregistered")
	n.deActive++
	n.deCount++
	n.mu.Unlock()
	if n.deDelay > 0 {
		time.Sleep(n.deDelay)
	}
	n.mu.Lock()
	n.deActive--
	n.inCall--
	n.mu.Unlock()
	n.gen.Add(1)
}

func runRandomSeed(t *testing.T, cfg randomConfig, seed uint64, st *randomStats) {
	s := &rsim{
		t: t, cfg: cfg, seed: seed, l: cfg.l, r: cfg.r,
		rng:   rand.New(rand.NewPCG(seed, 0x1ea5e401d)),
		begin: time.Now(),
		st:    st,
	}
	s.wl = &writeLog{mem: memory.New(), gen: &s.gen, l: cfg.l}
	s.end = s.begin.Add(time.Duration(cfg.hours * float64(time.Hour)))
	t.Cleanup(s.teardown)
	for i := range 3 + s.rng.IntN(3) {
		sl := &rslot{idx: i}
		s.slots = append(s.slots, sl)
		s.startNode(sl)
	}
	s.phaseEnd = s.begin.Add(s.between(8*s.l, 40*s.l))
	s.nextAction = s.begin.Add(s.between(0, s.l))
	stepMin, stepMax := s.r/time.Duration(cfg.steps), 5*s.r/time.Duration(cfg.steps)

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
	s.teardown()
	s.t.Fatalf("seed %d (%s, L=%v R=%v) at +%v: %s\nreplay: go test -race -run TestRandomFaults/%s -random.seed=%d ./cluster/\nrecent actions and leadership changes:\n%s",
		s.seed, s.cfg.name, s.l, s.r, time.Since(s.begin), msg, s.cfg.name, s.seed, s.recent())
}

func (s *rsim) startNode(sl *rslot) {
	sl.inc++
	now := time.Now()
	n := &rnode{gen: &s.gen, id: fmt.Sprintf("n%d.%d", sl.idx, sl.inc), slot: sl, startAt: now, clean: true, cleanSince: now}
	s.dirty = true
	if s.rng.IntN(10) < 3 {
		n.deDelay = s.between(time.Millisecond, 2*s.l)
	}
	n.fnMode = s.rng.IntN(3)
	n.f = newFaultStore(recStore{n: n, w: s.wl})
	e, err := NewElector(ElectorConfig{
		Lock: NewStoreLock(trackStore{n}), LeaseName: "leader", LeaseDuration: s.l, RenewInterval: s.r,
		InstanceID: n.id, Logger: quietLogger(), Observer: n.observe,
	})
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
	s.note("start %s (deregistered takes %v)", n.id, n.deDelay)
}

// collect applies what happened since the last step, in the order it happened: writes checked
// by the writeLog, leadership changes (Observer events), fn runs.
func (s *rsim) collect(now time.Time) {
	s.wl.mu.Lock()
	errs := s.wl.errs
	s.wl.errs = nil
	s.wl.mu.Unlock()
	if len(errs) > 0 {
		s.fail("%s", strings.Join(errs, "; "))
	}
	var opened []*leadSpan
	var fnOpened []*fnSpan
	half := (s.l + s.r) / 2
	for _, n := range s.active {
		n.mu.Lock()
		evs, marks, errs := n.events, n.fnMarks, n.errs
		n.events, n.fnMarks, n.errs = nil, nil, nil
		n.mu.Unlock()
		if len(errs) > 0 {
			s.fail("%s", strings.Join(errs, "; "))
		}
		for i, ev := range evs {
			switch ev.Kind {
			case BecameLeader:
				if n.open != nil {
					s.fail("%s: BecameLeader (term %d) while leading (term %d)", n.id, ev.Term, n.open.term)
				}
				sp := &leadSpan{n: n, term: ev.Term, start: ev.Time, deadline: n.okStart.Add(half)}
				if !ev.Time.Before(sp.deadline) {
					s.fail("%s: leads from +%v, not before the deadline of the attempt that won it, +%v (E5)", n.id, ev.Time.Sub(s.begin), sp.deadline.Sub(s.begin))
				}
				n.open = sp
				n.spans = append(n.spans, sp)
				if len(n.spans) > 4 {
					n.spans = slices.Delete(n.spans, 0, 1)
				}
				opened = append(opened, sp)
				s.st.leaderships++
				s.note("%s leads, term %d (at +%v)", n.id, ev.Term, ev.Time.Sub(s.begin))
			case StoppedLeading:
				if n.open == nil {
					s.fail("%s: StoppedLeading (%s) while not leading", n.id, ev.Reason)
				}
				// E5 to the instant: a leadership ends at its deadline at the latest, and at
				// exactly its deadline when no attempt renewed it.
				if ev.Time.After(n.open.deadline) || (ev.Reason == ReasonDeadline && !ev.Time.Equal(n.open.deadline)) {
					s.fail("%s: stopped leading (%s) at +%v; its deadline was +%v (E5)", n.id, ev.Reason, ev.Time.Sub(s.begin), n.open.deadline.Sub(s.begin))
				}
				n.open.end, n.open.closed = ev.Time, true
				n.open = nil
				s.st.count("stopped leading: "+ev.Reason, 1)
				s.note("%s stops leading: %s (at +%v)", n.id, ev.Reason, ev.Time.Sub(s.begin))
			case AttemptSucceeded:
				s.st.attempts++
				n.okStart = ev.Time.Add(-ev.Duration)
				if n.open != nil {
					n.open.deadline = n.okStart.Add(half)
				}
			case AttemptFailed:
				s.st.attempts++
				s.st.count("failed attempt: "+ev.Reason, 1)
				if (ev.Reason == ReasonTimeout && ev.Duration != s.l-s.r) || (ev.Reason == ReasonLate && ev.Duration < half) {
					s.fail("%s: attempt failed (%s) after %v (E3: timeout at L-R = %v; E5: late from (L+R)/2 = %v)", n.id, ev.Reason, ev.Duration, s.l-s.r, half)
				}
				// E4: a leader whose attempt fails stops leading at once.
				if n.open != nil && (i+1 == len(evs) || evs[i+1].Kind != StoppedLeading || !evs[i+1].Time.Equal(ev.Time)) {
					s.fail("%s: still leading after a failed attempt (%s) at +%v (E4)", n.id, ev.Reason, ev.Time.Sub(s.begin))
				}
			}
		}
		if n.state == nodeCrashed && n.open != nil {
			if !n.leadEnd.Equal(n.open.deadline) {
				s.fail("%s crashed while leading: IsLeader stays true until +%v, its events say until +%v (E5)", n.id, n.leadEnd.Sub(s.begin), n.open.deadline.Sub(s.begin))
			}
			n.open.end, n.open.closed = n.leadEnd, true
			n.open = nil
		}
		for _, m := range marks {
			if !m.start {
				fs := n.fnOpen
				if fs == nil {
					s.fail("%s: fn returned without having started", n.id)
				}
				fs.end, fs.closed = m.at, true
				n.fnOpen = nil
				// fn's context ends when its leadership does: at StoppedLeading, or at the crash.
				if fs.lead.closed && fs.end.After(fs.lead.end) {
					s.fail("%s: fn of term %d ran until +%v, after its leadership ended at +%v", n.id, fs.term, fs.end.Sub(s.begin), fs.lead.end.Sub(s.begin))
				}
				continue
			}
			if n.fnOpen != nil {
				s.fail("%s: fn started while its previous fn ran (W4)", n.id)
			}
			if !m.hasTerm {
				s.fail("%s: fn's context carries no term (W8)", n.id)
			}
			var lead *leadSpan
			for _, sp := range n.spans {
				if sp.term == m.term && !m.at.Before(sp.start) && (!sp.closed || !m.at.After(sp.end)) {
					lead = sp
				}
			}
			if lead == nil {
				s.fail("%s: fn started at +%v with term %d outside any leadership of that term (W3, W8)", n.id, m.at.Sub(s.begin), m.term)
			}
			fs := &fnSpan{n: n, term: m.term, lead: lead, start: m.at}
			n.fnOpen = fs
			fnOpened = append(fnOpened, fs)
		}
	}

	// Leaderships of different instances never overlap (E2, E5, E6), and terms grow when the
	// holder changes (W8).
	slices.SortFunc(opened, func(a, b *leadSpan) int { return a.start.Compare(b.start) })
	for _, sp := range opened {
		for _, o := range s.spans {
			if o.n != sp.n && spanOverlap(o.start, o.end, o.closed, sp.start, sp.end, sp.closed) {
				s.fail("two leaders: %s (term %d) from +%v to %s and %s (term %d) from +%v",
					o.n.id, o.term, o.start.Sub(s.begin), s.endText(o.end, o.closed), sp.n.id, sp.term, sp.start.Sub(s.begin))
			}
		}
		if p := s.lastSpan; p != nil {
			if (p.n != sp.n && sp.term <= p.term) || sp.term < p.term {
				s.fail("term order: %s led term %d from +%v after %s led term %d (W8)", sp.n.id, sp.term, sp.start.Sub(s.begin), p.n.id, p.term)
			}
		}
		s.lastSpan = sp
		s.spans = append(s.spans, sp)
		if a := s.armed; a != nil {
			s.measureTakeover(a, sp)
		}
		s.armed = nil
	}
	s.spans = slices.DeleteFunc(s.spans, func(sp *leadSpan) bool { return sp.closed && !sp.end.After(now) })

	// fns of different instances never run at once.
	slices.SortFunc(fnOpened, func(a, b *fnSpan) int { return a.start.Compare(b.start) })
	for _, fs := range fnOpened {
		for _, o := range s.fnSpans {
			if o.n != fs.n && spanOverlap(o.start, o.end, o.closed, fs.start, fs.end, fs.closed) {
				s.fail("two fns at once: %s (term %d) from +%v to %s and %s (term %d) from +%v",
					o.n.id, o.term, o.start.Sub(s.begin), s.endText(o.end, o.closed), fs.n.id, fs.term, fs.start.Sub(s.begin))
			}
		}
		s.fnSpans = append(s.fnSpans, fs)
	}
	s.fnSpans = slices.DeleteFunc(s.fnSpans, func(fs *fnSpan) bool { return fs.closed && !fs.end.After(now) })
}

func (s *rsim) endText(end time.Time, closed bool) string {
	if !closed {
		return "now"
	}
	return fmt.Sprintf("+%v", end.Sub(s.begin))
}

// measureTakeover records how far from its bound the takeover that ended a leaderless time
// came, when the lease was last written at the time the bound was computed from.
func (s *rsim) measureTakeover(a *armedBound, sp *leadSpan) {
	s.wl.mu.Lock()
	defer s.wl.mu.Unlock()
	for _, w := range s.wl.hist {
		if w.by == sp.n && w.at.Equal(sp.start) && w.prevAt.Equal(a.w) {
			s.st.takeover(a.kind, sp.start.Sub(a.ref), a.limit)
			return
		}
	}
}

// bound returns the liveness bound now in force: for each live instance whose store is clean
// (no fault, no faulty call in flight) since some time, someone must lead by
// max(clean since, its start, last write to the lease) + L + R (E6: it sees the last revision
// within R and takes over L after), or + R when the lease is released, absent, or its own
// (E7, E1). The earliest of those bounds.
func (s *rsim) bound() (armedBound, bool) {
	s.wl.mu.Lock()
	cur := s.wl.cur
	s.wl.mu.Unlock()
	var best armedBound
	found := false
	for _, sl := range s.slots {
		n := sl.cur
		if n == nil {
			continue
		}
		clean, since := n.cleanState()
		if !clean {
			continue
		}
		ref := since
		if n.startAt.After(ref) {
			ref = n.startAt
		}
		if cur.at.After(ref) {
			ref = cur.at
		}
		b := armedBound{ref: ref, limit: s.l + s.r, kind: "L+R", w: cur.at, who: n.id}
		if !cur.exists || cur.holder == "" || cur.holder == n.id {
			b.limit, b.kind = s.r, "R"
		} else if rev, at := n.seen(); rev == cur.rev && !since.After(at) {
			// E6 to the instant: it has read the holder's current revision on a clean store
			// and stayed clean since, so it takes over exactly L after that read.
			b.ref, b.limit, b.kind = at, s.l, "L"
		}
		if !found || b.ref.Add(b.limit).Before(best.ref.Add(best.limit)) {
			best, found = b, true
		}
	}
	return best, found
}

// checkStep checks the instant now: at most one IsLeader (W7, crashed instances included), each
// instance's IsLeader agrees with its events, and the liveness bound holds.
func (s *rsim) checkStep(now time.Time) {
	var leader *rnode
	liveLeader := false
	for _, n := range s.active {
		is := n.e.IsLeader()
		want := n.open != nil
		if n.state == nodeCrashed {
			want = now.Before(n.leadEnd)
		}
		if is != want {
			s.fail("%s: IsLeader() is %v, its events say %v (W7)", n.id, is, want)
		}
		if !is {
			continue
		}
		if leader != nil {
			s.fail("IsLeader() is true for both %s and %s", leader.id, n.id)
		}
		leader = n
		if n.state == nodeLive {
			liveLeader = true
		}
	}
	if liveLeader {
		s.armed = nil
		return
	}
	b, ok := s.curBound, s.hasBound
	if !ok {
		s.armed = nil
		return
	}
	s.st.boundSteps++
	if !now.Before(b.ref.Add(b.limit)) {
		s.wl.mu.Lock()
		cur := s.wl.cur
		s.wl.mu.Unlock()
		s.fail("no leader at +%v, though %s has had a clean store since +%v, started at +%v, and the lease (holder %q, term %d) was last written at +%v: someone must lead by +%v (%s)",
			now.Sub(s.begin), b.who, b.ref.Sub(s.begin), s.byID(b.who).startAt.Sub(s.begin), cur.holder, cur.term, cur.at.Sub(s.begin), b.ref.Add(b.limit).Sub(s.begin), b.kind)
	}
	s.armed = &b
}

func (s *rsim) byID(id string) *rnode {
	for _, n := range s.nodes {
		if n.id == id {
			return n
		}
	}
	return nil
}

// pollStops collects the results of Stop calls and checks E7 and W3 on them.
func (s *rsim) pollStops(now time.Time) {
	for _, n := range s.active {
		if n.state != nodeStopping {
			continue
		}
		select {
		case err := <-n.stopDone:
			s.stopped(n, err)
		default:
		}
	}
	s.active = slices.DeleteFunc(s.active, func(n *rnode) bool { return s.retired(n, now) })
}

func (s *rsim) stopped(n *rnode, err error) {
	n.state, n.stopResult = nodeStopped, true
	n.mu.Lock()
	fnCount, deCount, released := n.fnCount, n.deCount, slices.Clone(n.released)
	n.mu.Unlock()
	s.wl.mu.Lock()
	holder := s.wl.cur.holder
	s.wl.mu.Unlock()
	s.note("%s: Stop returned %v", n.id, err)
	quick := n.stopLead && n.stopClean && n.deDelay == 0
	if err != nil {
		// A release whose answer was lost (write-then-hang) is applied yet reported as an
		// error: E7 is checked on the release attempt instead, by trackStore.
		s.st.stopErrors++
		return
	}
	if fnCount != deCount {
		s.fail("%s: Stop returned nil after %d fn and %d deregistered calls (W3)", n.id, fnCount, deCount)
	}
	// E7: a Stop that returns nil leaves no lease behind, even when the answer of its last
	// write was lost (TestRegressStopAfterLostCreateAnswerAndFailedRead).
	if holder == n.id {
		s.fail("%s: Stop returned nil and the lease is still held by it (E7)", n.id)
	}
	// A leader with a clean store and quick callbacks hands the lease back at once (E7).
	if quick && (len(released) != 1 || !released[0].Equal(n.stopAt)) {
		s.fail("%s: stopped while leading with a clean store at +%v; releases at %v, want one at once (E7)", n.id, n.stopAt.Sub(s.begin), released)
	}
}

// retired says whether n can no longer lead, call the store or run a callback.
func (s *rsim) retired(n *rnode, now time.Time) bool {
	switch n.state {
	case nodeStopped:
	case nodeCrashed:
		if now.Before(n.leadEnd) {
			return false
		}
	default:
		return false
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.inflight == 0 && n.fnActive == 0 && n.deActive == 0 && len(n.events) == 0 && len(n.fnMarks) == 0
}

// dueTimes are the instants at which something is scheduled: the next step lands on them.
func (s *rsim) dueTimes() []time.Time {
	ts := []time.Time{s.phaseEnd, s.nextAction, s.end}
	if s.aimedNode != nil {
		ts = append(ts, s.aimedAt)
	}
	for _, sl := range s.slots {
		if sl.cur == nil && !sl.restartAt.IsZero() {
			ts = append(ts, sl.restartAt)
		}
	}
	for _, n := range s.active {
		if !n.healAt.IsZero() {
			ts = append(ts, n.healAt)
		}
		if n.state == nodeCrashed {
			// W7 to the instant: a crashed leader's IsLeader is true until its deadline and
			// false from it, with no goroutine of its own left to notice.
			ts = append(ts, n.leadEnd.Add(-time.Nanosecond), n.leadEnd)
		}
	}
	return ts
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

// act runs what is due now: heals, restarts, a change of phase, a random action.
func (s *rsim) act(now time.Time) {
	for _, n := range s.active {
		if !n.healAt.IsZero() && !now.Before(n.healAt) {
			s.heal(n)
		}
	}
	for _, sl := range s.slots {
		if sl.cur == nil && !sl.restartAt.IsZero() && !now.Before(sl.restartAt) {
			s.startNode(sl)
		}
	}
	if !now.Before(s.phaseEnd) {
		s.calm = !s.calm
		s.phaseEnd = now.Add(s.between(8*s.l, 40*s.l))
		if s.calm {
			// A calm phase: no new fault, so the liveness bounds get checked over long runs of
			// crashes and stops with healthy stores.
			for _, n := range s.active {
				if !n.healAt.IsZero() {
					s.heal(n)
				}
			}
		}
		s.dirty = true
		s.note("phase: calm=%v until +%v", s.calm, s.phaseEnd.Sub(s.begin))
	}
	if s.aimedNode != nil && !now.Before(s.aimedAt) {
		s.fireAimed()
	}
	if now.Before(s.nextAction) {
		return
	}
	s.dirty = true
	if b := s.curBound; s.hasBound && b.kind != "L+R" && s.aimedNode == nil && s.rng.IntN(8) == 0 {
		if at := b.ref.Add(b.limit); at.After(now) {
			s.aimedAt, s.aimedNode, s.aimedCrash = at, s.byID(b.who), s.rng.IntN(2) == 0
			s.note("aim a crash=%v of %s at +%v", s.aimedCrash, b.who, at.Sub(s.begin))
		}
	}
	if s.calm {
		s.nextAction = now.Add(s.between(s.l+s.r, 4*(s.l+s.r)))
		switch p := s.rng.IntN(10); {
		case p < 4:
			s.crash(s.target(75))
		case p < 8:
			s.stop(s.target(75), true)
		}
		return
	}
	s.nextAction = now.Add(s.between(s.r/10, 2*s.l))
	live := s.live()
	switch p := s.rng.IntN(100); {
	case p < 55:
		if len(live) > 0 {
			s.fault(live[s.rng.IntN(len(live))], "")
		}
	case p < 65:
		s.partition(live)
	case p < 80:
		s.crash(s.target(50))
	case p < 95:
		s.stop(s.target(50), true)
	default:
		for _, n := range s.active {
			if !n.healAt.IsZero() {
				s.heal(n)
			}
		}
	}
}

// fireAimed crashes or stops the instance aimed at. The main loop calls it as soon as the clock
// reaches the instant, before synctest.Wait, so that it races with the instance's attempt due
// then: either may come first, or Stop may find the attempt's answer waiting.
func (s *rsim) fireAimed() {
	n := s.aimedNode
	s.aimedNode = nil
	s.dirty = true
	if n.state != nodeLive {
		return
	}
	s.st.count("actions at the instant of a takeover", 1)
	if s.aimedCrash {
		s.crash(n)
	} else {
		s.stop(n, true)
	}
}

// target picks a live instance: the leader with probability pct%, else any.
func (s *rsim) target(pct int) *rnode {
	live := s.live()
	if len(live) == 0 {
		return nil
	}
	if s.rng.IntN(100) < pct {
		for _, n := range live {
			if n.e.IsLeader() {
				return n
			}
		}
	}
	return live[s.rng.IntN(len(live))]
}

var faultKinds = []string{"latency-small", "latency-band", "latency-high", "error", "hang", "hang-ignoring-ctx", "write-then-hang"}

// fault gives n a fault of the kind (a random one when empty) until a random heal.
func (s *rsim) fault(n *rnode, kind string) {
	if kind == "" {
		kind = faultKinds[s.rng.IntN(len(faultKinds))]
	}
	l, r := s.l, s.r
	var latency time.Duration
	switch kind {
	case "latency-small": // attempts succeed, only slower
		latency = s.between(time.Millisecond, (l-r)/4)
	case "latency-band": // attempts of two calls end around their timeout L-R and deadline (L+R)/2
		lo, hi := min(l-r, (l+r)/2)/2, max(l-r, (l+r)/2)/2
		latency = s.between(lo-r/4, hi+r/4)
	case "latency-high": // every call times out
		latency = s.between(l-r, 2*l)
	}
	s.heal(n) // lets calls blocked past their context go on before the new fault
	n.mu.Lock()
	n.f.set(func(f *faultStore) {
		switch kind {
		case "latency-small", "latency-band", "latency-high":
			f.latency = latency
		case "error":
			f.err = fmt.Errorf("store of %s: %w", n.id, errInjected)
		case "hang":
			f.hang = true
		case "hang-ignoring-ctx":
			f.hang, f.ignore = true, true
		case "write-then-hang":
			f.writeThenHang = true
		}
	})
	n.clean = false
	n.mu.Unlock()
	n.healAt = time.Now().Add(s.between(r/4, 3*l))
	s.dirty = true
	s.st.count("fault: "+kind, 1)
	if latency > 0 {
		s.note("fault %s on %s (%v) until +%v", kind, n.id, latency, n.healAt.Sub(s.begin))
	} else {
		s.note("fault %s on %s until +%v", kind, n.id, n.healAt.Sub(s.begin))
	}
}

// partition cuts a random subset of the live instances off the store, all until one heal.
func (s *rsim) partition(live []*rnode) {
	if len(live) == 0 {
		return
	}
	s.rng.Shuffle(len(live), func(i, j int) { live[i], live[j] = live[j], live[i] })
	cut := live[:1+s.rng.IntN(len(live))]
	kind := []string{"error", "hang", "hang-ignoring-ctx"}[s.rng.IntN(3)]
	healAt := time.Now().Add(s.between(s.r, 3*s.l))
	for _, n := range cut {
		s.fault(n, kind)
		n.healAt = healAt
	}
	s.st.count("partitions", 1)
	s.note("partition of %d instances until +%v", len(cut), healAt.Sub(s.begin))
}

func (s *rsim) heal(n *rnode) {
	n.f.heal()
	n.mu.Lock()
	n.maybeCleanLocked()
	n.mu.Unlock()
	n.healAt = time.Time{}
	s.dirty = true
}

// crash ends n as a SIGKILL would: no callback, no release; its IsLeader stays true until its
// leadership's deadline (E5), and a call it had in flight may still reach the store.
func (s *rsim) crash(n *rnode) {
	if n == nil {
		return
	}
	now := time.Now()
	wasLeader := n.e.IsLeader()
	n.crashed.Store(true)
	(&node{t: s.t, e: n.e, faults: n.f}).crash()
	n.state, n.leadEnd = nodeCrashed, now
	if l := n.e.leading.Load(); l != nil && now.Before(l.deadline) {
		n.leadEnd = l.deadline
	}
	// Its leadership, if any, is closed at leadEnd by the next collect, once its last events
	// are in.
	n.slot.cur = nil
	n.slot.restartAt = now.Add(s.between(0, 6*s.l))
	s.dirty = true
	s.st.crashes++
	if wasLeader {
		s.st.crashesOfLeader++
	}
	s.note("crash %s (leader %v, IsLeader until +%v); restart at +%v", n.id, wasLeader, n.leadEnd.Sub(s.begin), n.slot.restartAt.Sub(s.begin))
}

// stop calls n's Stop on a goroutine of its own, with a random timeout, sometimes after
// cancelling its Start context: E7 is checked when it returns.

func (s *rsim) stop(n *rnode, allowCancel bool) {
	if n == nil {
		return
	}
	now := time.Now()
	timeout := []time.Duration{s.r / 2, s.l - s.r, 2 * s.l, 10 * s.l}[s.rng.IntN(4)]
	byCancel := allowCancel && s.rng.IntN(4) == 0
	n.stopLead = n.e.IsLeader()
	n.stopClean, _ = n.cleanState()
	n.state, n.stopAt = nodeStopping, now
	n.stopping.Store(true)
	n.stopDone = make(chan error, 1)
	go func() {
		var err error
		if byCancel {
			// Cancelling Start's context ends the election as Stop does, with its own bound;
			// the Stop that follows finishes what that bound left undone, and its result is
			// checked as any Stop's.
			n.cancel()
			<-n.e.Done()
			ctx, cancel := context.WithTimeout(context.Background(), timeout)
			err = n.e.Stop(ctx)
			cancel()
		} else {
			ctx, cancel := context.WithTimeout(context.Background(), timeout)
			err = n.e.Stop(ctx)
			cancel()
		}
		n.stopReturns.Store(true)
		n.stopDone <- err
		n.gen.Add(1)
	}()
	n.slot.cur = nil
	n.slot.restartAt = now.Add(s.between(0, 6*s.l))
	s.dirty = true
	s.st.stops++
	if n.stopLead {
		s.st.stopsOfLeader++
	}
	if byCancel {
		s.st.count("stops by cancelling Start's context", 1)
		s.note("cancel %s's Start context (leader %v); restart at +%v", n.id, n.stopLead, n.slot.restartAt.Sub(s.begin))
	} else {
		s.note("stop %s (leader %v, timeout %v); restart at +%v", n.id, n.stopLead, timeout, n.slot.restartAt.Sub(s.begin))
	}
}

// finish heals every store, stops every live instance, and checks that nothing is left
// running: no store call, no callback, no election goroutine.
func (s *rsim) finish() {
	for _, n := range s.active {
		s.heal(n)
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
		n.f.heal()
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

// randomStats adds up what the seeds covered.
type randomStats struct {
	mu                               sync.Mutex
	seeds                            int
	fake                             time.Duration
	steps, boundSteps                int64
	attempts, writes, zombieWrites   int
	leaderships, restarts            int
	crashes, crashesOfLeader         int
	stops, stopsOfLeader, stopErrors int
	counts                           map[string]int
	takeovers                        map[string]int
	maxTakeover                      map[string]time.Duration
	limits                           map[string]time.Duration
}

func newRandomStats() *randomStats {
	return &randomStats{counts: map[string]int{}, takeovers: map[string]int{}, maxTakeover: map[string]time.Duration{}, limits: map[string]time.Duration{}}
}

func (st *randomStats) count(k string, n int) { st.counts[k] += n }

func (st *randomStats) takeover(kind string, d, limit time.Duration) {
	st.takeovers[kind]++
	st.maxTakeover[kind] = max(st.maxTakeover[kind], d)
	st.limits[kind] = limit
}

func (st *randomStats) add(o *randomStats) {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.seeds += o.seeds
	st.fake += o.fake
	st.steps += o.steps
	st.boundSteps += o.boundSteps
	st.attempts += o.attempts
	st.writes += o.writes
	st.zombieWrites += o.zombieWrites
	st.leaderships += o.leaderships
	st.restarts += o.restarts
	st.crashes += o.crashes
	st.crashesOfLeader += o.crashesOfLeader
	st.stops += o.stops
	st.stopsOfLeader += o.stopsOfLeader
	st.stopErrors += o.stopErrors
	for k, v := range o.counts {
		st.counts[k] += v
	}
	for k, v := range o.takeovers {
		st.takeovers[k] += v
		st.maxTakeover[k] = max(st.maxTakeover[k], o.maxTakeover[k])
		st.limits[k] = o.limits[k]
	}
}

func (st *randomStats) String() string {
	st.mu.Lock()
	defer st.mu.Unlock()
	var b strings.Builder
	fmt.Fprintf(&b, "%d seeds, %.0f fake hours, %d steps (%d with a liveness bound armed), %d attempts, %d lease writes (%d by crashed instances' calls in flight), %d leaderships\n",
		st.seeds, st.fake.Hours(), st.steps, st.boundSteps, st.attempts, st.writes, st.zombieWrites, st.leaderships)
	fmt.Fprintf(&b, "  %d crashes (%d of the leader), %d stops (%d of the leader, %d returned an error), %d restarts\n",
		st.crashes, st.crashesOfLeader, st.stops, st.stopsOfLeader, st.stopErrors, st.restarts)
	faults := 0
	keys := make([]string, 0, len(st.counts))
	for k, v := range st.counts {
		keys = append(keys, k)
		if strings.HasPrefix(k, "fault: ") {
			faults += v
		}
	}
	slices.Sort(keys)
	fmt.Fprintf(&b, "  %d faults injected\n", faults)
	for _, k := range keys {
		fmt.Fprintf(&b, "  %s: %d\n", k, st.counts[k])
	}
	for _, k := range []string{"L+R", "L", "R"} {
		fmt.Fprintf(&b, "  takeovers after a leaderless time bounded by %s = %v: %d, the latest %v after the bound's reference\n",
			k, st.limits[k], st.takeovers[k], st.maxTakeover[k])
	}
	return b.String()
}
