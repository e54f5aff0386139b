package cluster

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

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
	// Its own L and R, on the fake clock: those of the configuration scaled by its clock's
	// rate (randomConfig.fastest); nominal is the configuration's L.
	l, r, nominal time.Duration

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
	// handOver: it stopped leading on a request to hand over (R2), and its callbacks may not
	// all have returned: its attempts wait for them, for as long as they take. quietRef is
	// when they had, the earliest its bounds may count from once it is counted again.
	handOver bool
	quietRef time.Time

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
	quietAt    time.Time   // when its last deregistered call returned
	// trail is its recent store calls, watch calls and events, printed when a check fails
	// on its account (a liveness bound it was to meet).
	trail    [24]string
	trailLen int
	simBegin time.Time

	// The simulated watch (random_watch_test.go).
	w            *writeLog
	noBeats      bool // its watch sends no heartbeat, whatever its caller asks
	beatless     bool // noBeats, and its Lock says so (HeartbeatWatcher): trusted for R + R/2
	stream       streamFaults
	streamRng    *rand.Rand
	streamFaulty bool
	streamDelay  time.Duration // the largest delay of its faults since its watch was clean
	streamTaint  time.Time     // until then, its bounds still take its past faults
	streamHealAt time.Time     // owned by the test goroutine
}

type fnMark struct {
	start   bool
	at      time.Time
	term    uint64
	hasTerm bool
}

// traceLocked adds a line to the trail. The caller holds n.mu.
func (n *rnode) traceLocked(format string, args ...any) {
	n.trail[n.trailLen%len(n.trail)] = fmt.Sprintf("+%v ", time.Since(n.simBegin)) + fmt.Sprintf(format, args...)
	n.trailLen++
}

func (n *rnode) trace(format string, args ...any) {
	n.mu.Lock()
	n.traceLocked(format, args...)
	n.mu.Unlock()
}

// recentTrail returns the trail, oldest first, one indented line each.
func (n *rnode) recentTrail() string {
	n.mu.Lock()
	defer n.mu.Unlock()
	var b strings.Builder
	for i := max(0, n.trailLen-len(n.trail)); i < n.trailLen; i++ {
		b.WriteString("  ")
		b.WriteString(n.trail[i%len(n.trail)])
		b.WriteByte('\n')
	}
	return b.String()
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
	n.traceLocked("event %v holder %q term %d", ev.Kind, ev.Holder, ev.Term)
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
	n.quietAt = time.Now()
	n.mu.Unlock()
	n.gen.Add(1)
}

// scale converts a duration of the configuration to this instance's clock (randomConfig.fastest).
func (n *rnode) scale(d time.Duration) time.Duration {
	if n.l == n.nominal {
		return d
	}
	return time.Duration(float64(d) * float64(n.l) / float64(n.nominal))
}

// storeDoc returns doc with its lease duration on this instance's clock's rate
// (randomConfig.fastest): toStore converts what it writes, otherwise what it reads. What the
// store holds is the duration every instance was configured with, each measuring it on its own
// clock; the configured durations map to each other exactly, so that the bounds stay exact in
// fake time.
func (n *rnode) storeDoc(doc map[string]any, toStore bool) map[string]any {
	ms, ok := doc["leaseDuration"].(float64)
	if !ok || n.l == n.nominal {
		return doc
	}
	from, to := float64(n.l.Milliseconds()), float64(n.nominal.Milliseconds())
	if !toStore {
		from, to = to, from
	}
	out := make(map[string]any, len(doc))
	for k, v := range doc {
		out[k] = v
	}
	if ms == from {
		out["leaseDuration"] = to
	} else {
		out["leaseDuration"] = math.Round(ms * to / from)
	}
	return out
}
