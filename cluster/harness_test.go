package cluster

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/leasehold/leasehold/internal/bubble"
)

const (
	testL = 15 * time.Second
	testR = 5 * time.Second
)

// node is one instance in a test: an Elector over its own faultStore, with the events it
// emitted and the times its callbacks ran, on the bubble's fake clock.
type node struct {
	t      *testing.T
	e      *Elector
	faults *faultStore

	mu     sync.Mutex
	events []Event
	fnAt   []time.Time
	deAt   []time.Time
}

// world is the store the instances of a test share, and the fake time it began at, with the
// engine tests' own helpers.
type world struct{ *bubble.World }

func newWorld(t *testing.T) *world { return &world{bubble.New(t)} }

var quietLogger = bubble.QuietLogger

// node creates an elector named id with L and R (0 for the test defaults), and registers one
// callback that records when fn and deregistered run.
func (w *world) node(id string, l, r time.Duration) *node {
	w.T.Helper()
	return w.nodeWith(id, l, r, quietLogger())
}

// nodeWith is node with a logger of the test's.
func (w *world) nodeWith(id string, l, r time.Duration, log *slog.Logger) *node {
	w.T.Helper()
	if l == 0 {
		l, r = testL, testR
	}
	n := &node{t: w.T, faults: newFaultStore(w.Mem)}
	e, err := NewElector(ElectorConfig{
		Lock: NewStoreLock(n.faults), LeaseName: "leader", LeaseDuration: l, RenewInterval: r,
		InstanceID: id, Logger: log,
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
	e.WhenLeader(func(ctx context.Context) error {
		n.mu.Lock()
		n.fnAt = append(n.fnAt, time.Now())
		n.mu.Unlock()
		return nil
	}, func() {
		n.mu.Lock()
		n.deAt = append(n.deAt, time.Now())
		n.mu.Unlock()
	})
	return n
}

func (n *node) start() *node {
	n.t.Helper()
	if err := n.e.Start(context.Background()); err != nil {
		n.t.Fatal(err)
	}
	n.t.Cleanup(func() { _ = n.e.Stop(context.Background()) })
	return n
}

// crash ends the elector as a killed process would: no callback, no release.
func (n *node) crash() {
	close(n.e.life.halt)
	<-n.e.life.done
	if claimed, _ := n.e.life.claim(); claimed {
		// A later Stop returns at once, as that of a process that is gone would.
		n.e.life.finish(nil)
	}
}

// firstEvent returns the time of the first event of kind, and whether there was one.
func (n *node) firstEvent(kind EventKind) (time.Time, bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, ev := range n.events {
		if ev.Kind == kind {
			return ev.Time, true
		}
	}
	return time.Time{}, false
}

func (n *node) eventsOf(kind EventKind) []Event {
	n.mu.Lock()
	defer n.mu.Unlock()
	var out []Event
	for _, ev := range n.events {
		if ev.Kind == kind {
			out = append(out, ev)
		}
	}
	return out
}

// times returns the times of the events of kind, relative to the world's start.
func (w *world) times(n *node, kind EventKind) []time.Duration {
	var out []time.Duration
	for _, ev := range n.eventsOf(kind) {
		out = append(out, w.Rel(ev.Time))
	}
	return out
}

// record returns the lease document as stored, or nil.
func (w *world) record() map[string]any {
	doc, err := w.Mem.Get(context.Background(), "cluster:leader")
	if err != nil {
		return nil
	}
	return doc
}

func (n *node) fnTimes() []time.Time {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]time.Time(nil), n.fnAt...)
}

func (n *node) deTimes() []time.Time {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]time.Time(nil), n.deAt...)
}

func ds(v ...time.Duration) []time.Duration { return v }

func sec(f float64) time.Duration { return time.Duration(f * float64(time.Second)) }
