package failovertest

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/leasehold/leasehold/cluster"
	"github.com/leasehold/leasehold/store"
	"github.com/leasehold/leasehold/store/memory"
)

// TestRunOverATCPStore runs the whole scenario over a small networked store of the standard
// library (netstore_test.go): the harness passes with a store that honours its contexts.
func TestRunOverATCPStore(t *testing.T) {
	srv := startNetServer(t)
	Run(t, srv.ln.Addr().String(), func(t *testing.T, addr string) store.Store {
		return &netClient{addr: addr}
	})
}

// recorder is a testing.TB that keeps what the checks report, instead of failing the test.
type recorder struct {
	testing.TB
	mu     sync.Mutex
	errors []string
}

func (r *recorder) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errors = append(r.errors, fmt.Sprintf(format, args...))
}

func (r *recorder) Helper() {}

func (r *recorder) has(prefix string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, e := range r.errors {
		if strings.HasPrefix(e, prefix) {
			return true
		}
	}
	return false
}

// TestChecksCatchTwoLeaders: three instances on one lease but each over a store of its own (a
// split brain) all lead at once; the IsLeader sampling and both interval checks (events,
// callbacks) must say so (W7).
func TestChecksCatchTwoLeaders(t *testing.T) {
	rec := &recorder{TB: t}
	h := newHarness(rec)
	h.lease = "split"
	h.tracker.Do(func() {
		h.setUp(t, "127.0.0.1:1", func(*testing.T, string) store.Store { return memory.New() })
	})
	t.Cleanup(h.teardown)
	leading := map[string]bool{}
	h.waitFor("every instance leading", 0, settleTimeout, func(_ int, o observed) bool {
		if o.ev.Kind == cluster.BecameLeader {
			leading[o.ev.Instance] = true
		}
		return len(leading) == Instances
	})
	// A renewal observed while all three lead.
	h.waitFor("a renewal", h.mark(), settleTimeout, func(_ int, o observed) bool {
		return o.ev.Kind == cluster.AttemptSucceeded && len(o.leaders) > 1
	})
	h.teardown()
	h.checkIntervals()
	for _, want := range []string{"W7: at ", "W7: by the events", "W7: by the callbacks"} {
		if !rec.has(want) {
			t.Errorf("the checks did not report %q; they reported %q", want, rec.errors)
		}
	}
	h.tracker.Check(t, 5*time.Second)
}

// TestChecksAcceptTakeTurns: leaderships that follow one another, by the events and by the
// callbacks, are not reported; one still open at the end is (W3).
func TestChecksAcceptTakeTurns(t *testing.T) {
	rec := &recorder{TB: t}
	h := newHarness(rec)
	at := func(ms int) time.Time { return h.start.Add(time.Duration(ms) * time.Millisecond) }
	ev := func(kind cluster.EventKind, inst string, ms int) {
		h.events = append(h.events, observed{ev: cluster.Event{Kind: kind, Instance: inst, Time: at(ms)}})
	}
	cb := func(inst string, fn bool, ms int) {
		h.callbacks = append(h.callbacks, callback{instance: inst, fn: fn, at: at(ms)})
	}
	ev(cluster.BecameLeader, "i1", 0)
	cb("i1", true, 1)
	ev(cluster.StoppedLeading, "i1", 400)
	cb("i1", false, 401)
	ev(cluster.BecameLeader, "i2", 600)
	cb("i2", true, 601)
	ev(cluster.StoppedLeading, "i2", 900)
	cb("i2", false, 901)
	h.checkIntervals()
	if len(rec.errors) != 0 {
		t.Errorf("leaderships taking turns were reported: %q", rec.errors)
	}
	ev(cluster.BecameLeader, "i3", 950)
	h.checkIntervals()
	if !rec.has("W3: leaderships still open") {
		t.Errorf("a leadership left open was not reported: %q", rec.errors)
	}
	// The next leadership starting before the last one ended, by the callbacks only.
	rec.errors = nil
	cb("i3", true, 899)
	cb("i3", false, 960)
	ev(cluster.StoppedLeading, "i3", 960)
	h.checkIntervals()
	if !rec.has("W7: by the callbacks") || rec.has("W7: by the events") {
		t.Errorf("an overlap of the callbacks only: reported %q", rec.errors)
	}
}

// TestLastChangeCountsALateTakeover: after i2's cut, i3's takeovers landed while their
// answers came past its attempt timeout (a store slower than L − R), so i3 never led; i1 saw
// them as new revisions and had to let the last one expire (E6). The takeover is measured from
// i1's first sight of that revision, not from i2's last renewal; i2's own revisions and i1's
// sight of the record before the cut change nothing.
func TestLastChangeCountsALateTakeover(t *testing.T) {
	t0 := time.Date(2026, 12, 7, 6, 21, 58, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	ev := func(ms int, inst string, kind cluster.EventKind, holder string, term uint64) observed {
		return observed{ev: cluster.Event{Kind: kind, Instance: inst, Holder: holder, Term: term, Time: at(ms)}}
	}
	events := []observed{
		ev(100, "i1", cluster.ObservedRevision, "i2", 17),
		ev(1391, "i1", cluster.ObservedRevision, "i3", 19),
		ev(1400, "i3", cluster.ObservedRevision, "i2", 17),
		ev(2175, "i1", cluster.ObservedRevision, "i3", 20),
		ev(2200, "i1", cluster.AttemptSucceeded, "i3", 20),
	}
	since, what := lastChange(events, "i2", "i1", at(500))
	if !since.Equal(at(2175)) || !strings.Contains(what, "i3's unacknowledged takeover (term 20)") {
		t.Errorf("lastChange = %v (%s); want i1's first sight of i3's term 20 at +2175ms", since.Sub(t0), what)
	}
	since, what = lastChange(events[:1], "i2", "i1", at(500))
	if !since.Equal(at(500)) || !strings.Contains(what, "i2's last renewal") {
		t.Errorf("without a third writer: lastChange = %v (%s); want the old leader's last renewal at +500ms", since.Sub(t0), what)
	}
}
