package holders

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/leasehold/leasehold/cluster"
)

// holder is one instance of a Holders election in a test, with the slots its fn ran for and
// the events of every slot.
type holder struct {
	t      *testing.T
	h      *Holders
	faults *faultStore

	mu     sync.Mutex
	events []cluster.Event
	runs   []slotRun // one per fn, in order
	active int       // fns started whose deregistered has not returned
	maxAct int
}

type slotRun struct {
	slot     int
	term     uint64
	from, to time.Time // fn's start, deregistered's end (zero while it runs)
}

func (w *world) holders(id string, n int, dereg time.Duration) *holder {
	w.T.Helper()
	hd := &holder{t: w.T, faults: newFaultStore(w.Mem)}
	h, err := New(cluster.ElectorConfig{
		Lock: cluster.NewStoreLock(hd.faults), LeaseName: "jobs", LeaseDuration: testL, RenewInterval: testR,
		InstanceID: id, Logger: quietLogger(),
		Observer: func(ev cluster.Event) {
			hd.mu.Lock()
			hd.events = append(hd.events, ev)
			hd.mu.Unlock()
		},
	}, n)
	if err != nil {
		w.T.Fatal(err)
	}
	hd.h = h
	h.WhenLeader(func(ctx context.Context) error {
		slot, ok := SlotOf(ctx)
		term, _ := cluster.TermOf(ctx)
		if !ok {
			w.T.Errorf("%s: fn's context carries no slot", id)
		}
		hd.mu.Lock()
		hd.runs = append(hd.runs, slotRun{slot: slot, term: term, from: time.Now()})
		hd.active++
		hd.maxAct = max(hd.maxAct, hd.active)
		hd.mu.Unlock()
		<-ctx.Done()
		return nil
	}, func() {
		time.Sleep(dereg)
		hd.mu.Lock()
		hd.active--
		hd.runs[len(hd.runs)-1].to = time.Now()
		hd.mu.Unlock()
	})
	if err := h.Start(context.Background()); err != nil {
		w.T.Fatal(err)
	}
	w.T.Cleanup(func() { _ = h.Stop(context.Background()) })
	return hd
}

// slot returns the slot hd holds now, -1 for none.
func (hd *holder) slot() int {
	if s, _, ok := hd.h.Slot(); ok {
		return s
	}
	return -1
}

func (hd *holder) runsCopy() []slotRun {
	hd.mu.Lock()
	defer hd.mu.Unlock()
	return append([]slotRun(nil), hd.runs...)
}

// check fails unless each instance leads at most one slot and each slot has at most one
// leader, now, and no instance ever ran two fns at once (H1, H2).
func check(t *testing.T, hs ...*holder) {
	t.Helper()
	bySlot := map[int]string{}
	for _, hd := range hs {
		n := 0
		for i, e := range hd.h.Slots() {
			if !e.IsLeader() {
				continue
			}
			n++
			if other, ok := bySlot[i]; ok {
				t.Fatalf("slot %d led by %s and %s at once", i, other, hd.h.InstanceID())
			}
			bySlot[i] = hd.h.InstanceID()
		}
		if n > 1 {
			t.Fatalf("%s leads %d slots at once", hd.h.InstanceID(), n)
		}
		hd.mu.Lock()
		m := hd.maxAct
		hd.mu.Unlock()
		if m > 1 {
			t.Fatalf("%s ran %d fns at once", hd.h.InstanceID(), m)
		}
	}
}

// H1: the record names: the lease itself for one holder, NAME/i for more, or the Lock's own.
func TestH1SlotNames(t *testing.T) {
	lock := cluster.NewStoreLock(nil)
	for _, c := range []struct {
		slot, n int
		want    string
	}{{0, 1, "jobs"}, {0, 3, "jobs/0"}, {2, 3, "jobs/2"}} {
		if got := SlotName(lock, "jobs", c.slot, c.n); got != c.want {
			t.Errorf("SlotName(jobs, %d, %d) = %q; want %q", c.slot, c.n, got, c.want)
		}
	}
	if got := SlotName(dashLock{}, "jobs", 1, 2); got != "jobs-1" {
		t.Errorf("SlotName with a SlotNamer = %q; want its own, jobs-1", got)
	}
	if got := SlotName(lock, "", 1, 2); got != cluster.DefaultLeaseName+"/1" {
		t.Errorf("SlotName of the default lease = %q", got)
	}
	if _, err := New(cluster.ElectorConfig{Lock: lock}, 0); err == nil || !strings.HasPrefix(err.Error(), "holders: ") {
		t.Errorf("New with 0 holders: error %v; want one of package holders", err)
	}
	if _, err := New(cluster.ElectorConfig{Lock: lock, Gate: slotGate{}}, 2); err == nil || !strings.HasPrefix(err.Error(), "holders: ") {
		t.Errorf("New with a Gate of the caller's: error %v; want one of package holders", err)
	}
}

type dashLock struct{ cluster.Lock }

func (dashLock) SlotName(lease string, slot int) string { return fmt.Sprintf("%s-%d", lease, slot) }

// H3: one holder is today's election: the record is the lease's own (cluster:jobs), and fn's
// context says slot 0.
func TestH3OneHolderIsTheElection(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t)
		a := w.holders("a", 1, 0)
		w.At(sec(1))
		if doc, err := w.Mem.Get(context.Background(), "cluster:jobs"); err != nil || doc["holder"] != "a" {
			t.Fatalf("cluster:jobs: %v, %v; want held by a", doc, err)
		}
		if runs := a.runsCopy(); len(runs) != 1 || runs[0].slot != 0 || runs[0].term != 1 {
			t.Fatalf("a's runs: %+v; want one, slot 0, term 1", runs)
		}
		if len(a.h.Slots()) != 1 || a.h.Slots()[0].LeaseName() != "jobs" {
			t.Fatal("one holder: want one Elector on the lease itself")
		}
	})
}

// H1, H2: two slots, three instances. a (0s) and b (1s) take a slot each; c (2s) holds none.
// a stops cleanly at 3s: c takes its slot at its next attempt (7s). b crashes at 8s: c holds a
// slot, so it leaves b's alone; d starts at 9s, first sees b's last renewal (6s) then, and
// takes that slot at 9s + L = 24s. Terms grow per slot.
func TestH2TwoSlotsThreeInstances(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t)
		a := w.holders("a", 2, 0)
		w.At(sec(1))
		b := w.holders("b", 2, 0)
		w.At(sec(2))
		c := w.holders("c", 2, 0)
		w.At(sec(2.5))
		check(t, a, b, c)
		sa, sb := a.slot(), b.slot()
		if sa < 0 || sb < 0 || sa == sb || c.slot() != -1 {
			t.Fatalf("slots at 2.5s: a %d, b %d, c %d; want a and b one each, c none", sa, sb, c.slot())
		}
		if err := a.h.Stop(context.Background()); err != nil {
			t.Fatal(err)
		}
		w.At(sec(7) - time.Nanosecond)
		if c.slot() != -1 {
			t.Fatal("c took a slot before its attempt")
		}
		w.At(sec(7))
		if got := c.slot(); got != sa {
			t.Fatalf("c holds slot %d at 7s; want a's released slot %d", got, sa)
		}
		if runs := c.runsCopy(); len(runs) != 1 || runs[0].term != 2 {
			t.Fatalf("c's runs: %+v; want one, term 2", runs)
		}
		w.At(sec(8))
		// b crashes: no release, no write. Its store fails every call from now on, and its
		// slots are never stopped before the test's cleanup.
		b.faults.Set(func(f *faultStore) { f.Err = errInjected })
		w.At(sec(9))
		d := w.holders("d", 2, 0)
		w.At(sec(24) - time.Nanosecond)
		check(t, c, d)
		if d.slot() != -1 {
			t.Fatalf("d holds slot %d before b's expired for it", d.slot())
		}
		w.At(sec(24))
		if got := d.slot(); got != sb {
			t.Fatalf("d holds slot %d at 24s; want b's slot %d", got, sb)
		}
		if runs := d.runsCopy(); len(runs) != 1 || w.Rel(runs[0].from) != sec(24) || runs[0].term != 2 {
			t.Fatalf("d's runs: %+v; want one from 24s, term 2", runs)
		}
		w.At(sec(60))
		check(t, c, d)
		if c.slot() != sa || d.slot() != sb {
			t.Fatalf("at 60s: c %d, d %d", c.slot(), d.slot())
		}
	})
}

// H2: an instance moves to another slot only once the callbacks of the one it held have
// returned. a holds one of two slots alone; asked at 3s to resign it, it stops leading at
// 5s, and its deregistered takes until 8s. The other slot, free all along, is taken no
// earlier than that, at an attempt (10s or 15s), while the resigned slot stays released (R4).
func TestH2MoveAfterCallbacks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t)
		a := w.holders("a", 2, 3*time.Second)
		w.At(sec(1))
		first := a.slot()
		if first < 0 {
			t.Fatal("a holds no slot")
		}
		w.At(sec(3))
		if _, err := cluster.Resign(context.Background(), cluster.NewStoreLock(w.Mem), fmt.Sprintf("jobs/%d", first), ""); err != nil {
			t.Fatal(err)
		}
		w.At(sec(9))
		check(t, a)
		if a.slot() != -1 {
			t.Fatalf("a holds slot %d at 9s; want none yet", a.slot())
		}
		w.At(sec(16))
		check(t, a)
		runs := a.runsCopy()
		// Both slots attempt at 10s, in either order: the release of the first comes before
		// the other's claim (10s) or after it (the claim is refused, and taken at 15s).
		if len(runs) != 2 || runs[1].slot == first || w.Rel(runs[0].to) != sec(8) ||
			(w.Rel(runs[1].from) != sec(10) && w.Rel(runs[1].from) != sec(15)) {
			t.Fatalf("a's runs: %+v; want slot %d until 8s, then the other from 10s or 15s", runs, first)
		}
	})
}
