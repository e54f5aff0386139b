package partition

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/leasehold/leasehold/cluster"
)

// pmember is one instance of a partitioned election in a test, over a Lock of its own.
type pmember struct {
	p       *Partitions
	lock    crashLock
	halt    bool // crashed or stopped: left out of owners
	crashed bool
}

func (w *world) partitions(id string, k int) *pmember {
	w.T.Helper()
	lock := newCrashLock(cluster.NewStoreLock(w.Mem))
	p, err := New(Config{
		Lock: lock, LeaseName: "work", Partitions: k, LeaseDuration: testL, RenewInterval: testR,
		InstanceID: id, Logger: quietLogger(),
	})
	if err != nil {
		w.T.Fatal(err)
	}
	m := &pmember{p: p, lock: lock}
	if err := p.Start(context.Background()); err != nil {
		w.T.Fatal(err)
	}
	w.T.Cleanup(m.cleanup)
	return m
}

// cleanup stops the member, unless it was stopped already. A crashed member's goroutines
// are ended too: its Lock fails every call, so it writes nothing.
func (m *pmember) cleanup() {
	if !m.halt || m.crashed {
		_ = m.p.Stop(context.Background())
	}
}

// crash ends the member as a killed process would: no release, no leave.
func (m *pmember) crash() {
	m.halt, m.crashed = true, true
	crash(m.p, m.lock)
}

// crash ends p, which runs over lock, as a killed process would: from now on its member lease
// and its fences write nothing (every call of lock fails), its planner and watches have
// ended, and its records are left as they are.
func crash(p *Partitions, lock crashLock) {
	lock.crash()
	p.cancel()
	<-p.planned
}

// owners returns, by partition, the members that own it now (IsLeader).
func owners(k int, ms ...*pmember) [][]string {
	out := make([][]string, k)
	for _, m := range ms {
		if m.halt {
			continue
		}
		for _, i := range m.p.Owned() {
			out[i] = append(out[i], m.p.id)
		}
	}
	return out
}

// checkOwners fails on a partition with two owners, and returns the owned counts by member
// and how many partitions have no owner.
func checkOwners(t *testing.T, k int, ms ...*pmember) (map[string]int, int) {
	t.Helper()
	counts := make(map[string]int)
	free := 0
	for i, os := range owners(k, ms...) {
		switch len(os) {
		case 0:
			free++
		case 1:
			counts[os[0]]++
		default:
			t.Fatalf("partition %d has two owners: %v", i, os)
		}
	}
	return counts, free
}

// runPartitions samples the fleet every 100ms until until: never two owners of a partition.
func (w *world) runPartitions(until time.Duration, k int, ms ...*pmember) {
	w.T.Helper()
	for d := w.Since(); d <= until; d += 100 * time.Millisecond {
		w.At(d)
		checkOwners(w.T, k, ms...)
	}
}

func spread(counts map[string]int) (lo, hi int) {
	lo = -1
	for _, c := range counts {
		if lo < 0 || c < lo {
			lo = c
		}
		hi = max(hi, c)
	}
	return lo, hi
}

// D6: three members of a 12-partition election, started at 0s, 1s and 2s: never two owners
// of a partition, and from 60s every partition owned, four by each member (no pile-up on the
// first, which alone could take them all at first).
func TestD6SpreadEvenlyNeverTwoOwners(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t)
		const k = 12
		a := w.partitions("a", k)
		w.At(sec(1))
		b := w.partitions("b", k)
		w.At(sec(2))
		c := w.partitions("c", k)
		w.runPartitions(sec(60), k, a, b, c)
		counts, free := checkOwners(t, k, a, b, c)
		if free != 0 || counts["a"] != 4 || counts["b"] != 4 || counts["c"] != 4 {
			t.Fatalf("at 60s: %v owned, %d free; want 4 each, none free", counts, free)
		}
		w.runPartitions(sec(120), k, a, b, c)
		if after, _ := checkOwners(t, k, a, b, c); fmt.Sprint(after) != fmt.Sprint(counts) {
			t.Fatalf("a settled fleet moved: %v, then %v", counts, after)
		}
	})
}

// D7: a fourth member joins a settled fleet of three: the fleet reaches 3 each within 3R,
// moving at most ⌈K/N⌉ + 1 = 4 partitions, each handed over after its callbacks (never two
// owners).
func TestD7JoinMovesFew(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t)
		const k = 12
		a, b, c := w.partitions("a", k), w.partitions("b", k), w.partitions("c", k)
		w.runPartitions(sec(60), k, a, b, c)
		before := owners(k, a, b, c)
		d := w.partitions("d", k)
		// D7's bound: the donors see d in the roster within R, hand over at most MaxMoves
		// each per R (here each gives one), and d's watch takes each release at once.
		w.runPartitions(sec(60)+3*testR, k, a, b, c, d)
		if counts, free := checkOwners(t, k, a, b, c, d); free != 0 || counts["d"] != 3 {
			t.Fatalf("3R after d joined: %v owned, %d free; want d at its share, 3", counts, free)
		}
		w.runPartitions(sec(120), k, a, b, c, d)
		counts, free := checkOwners(t, k, a, b, c, d)
		if lo, hi := spread(counts); free != 0 || len(counts) != 4 || lo != 3 || hi != 3 {
			t.Fatalf("60s after d joined: %v owned, %d free; want 3 each", counts, free)
		}
		moved := 0
		for i, os := range owners(k, a, b, c, d) {
			if !slices.Equal(os, before[i]) {
				moved++
			}
		}
		if moved > 4 {
			t.Fatalf("%d partitions moved for a join; want at most 4", moved)
		}
	})
}

// D8: a member crashes: its partitions are owned again within L + R of the crash (its last
// renewals came before it), by the two others, which end within one of each other.
func TestD8CrashTakenWithinLPlusR(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t)
		const k = 12
		a, b, c := w.partitions("a", k), w.partitions("b", k), w.partitions("c", k)
		w.runPartitions(sec(60), k, a, b, c)
		c.crash()
		w.runPartitions(sec(60)+testL+testR, k, a, b)
		counts, free := checkOwners(t, k, a, b)
		if free != 0 {
			t.Fatalf("L + R after c crashed: %v owned, %d free; want every partition owned", counts, free)
		}
		w.runPartitions(sec(150), k, a, b)
		counts, _ = checkOwners(t, k, a, b)
		if counts["a"] != 6 || counts["b"] != 6 {
			t.Fatalf("after the crash: %v; want 6 each", counts)
		}
	})
}

// D8: a member that stops releases its partitions; the others own them again within R.
func TestD8StopTakenWithinR(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t)
		const k = 12
		a, b, c := w.partitions("a", k), w.partitions("b", k), w.partitions("c", k)
		w.runPartitions(sec(60), k, a, b, c)
		if err := c.p.Stop(context.Background()); err != nil {
			t.Fatal(err)
		}
		c.halt = true
		stopped := w.Since()
		w.runPartitions(stopped+testR, k, a, b)
		if counts, free := checkOwners(t, k, a, b); free != 0 {
			t.Fatalf("R after c stopped: %v owned, %d free; want every partition owned", counts, free)
		}
	})
}

// D8: a stopping member hands each of its partitions to the member the plan without it names,
// as a move does (D7): the release is reserved for that heir, whose watch takes it at once,
// not R later when a planner would see it free.
func TestD8StopHandsOverAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t)
		const k = 12
		a, b, c := w.partitions("a", k), w.partitions("b", k), w.partitions("c", k)
		w.runPartitions(sec(60), k, a, b, c)
		if err := c.p.Stop(context.Background()); err != nil {
			t.Fatal(err)
		}
		c.halt = true
		w.runPartitions(w.Since()+10*time.Millisecond, k, a, b)
		if counts, free := checkOwners(t, k, a, b); free != 0 {
			t.Fatalf("10ms after c stopped: %v owned, %d free; want every partition handed over", counts, free)
		}
	})
}

// D6: the constructor checks its settings, each error naming the field; a Lock that keeps no
// roster is refused naming the lease.
func TestD6Config(t *testing.T) {
	lock := cluster.NewStoreLock(newFaultStore(nil))
	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{Config{Lock: lock}, "Partitions is 0"},
		{Config{Lock: lock, Partitions: 4, MaxMoves: -1}, "MaxMoves"},
		{Config{Lock: noRoster{lock}, LeaseName: "work", Partitions: 4}, `"work": partitions need a Lock that keeps a roster`},
		{Config{Lock: lock, Partitions: 4, LeaseDuration: time.Second, RenewInterval: time.Second}, "RenewInterval"},
		{Config{}, "Lock is nil"},
	} {
		if _, err := New(tc.cfg); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("New(%+v): %v; want an error containing %q", tc.cfg, err, tc.want)
		}
	}
}

// D6: Stop before Start ends the election (Done closes) and a later Start is refused; a
// second Start is refused too.
func TestD6StartStop(t *testing.T) {
	p, err := New(Config{Lock: cluster.NewStoreLock(newFaultStore(nil)), Partitions: 2})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	<-p.Done()
	if err := p.Start(context.Background()); err == nil || !strings.Contains(err.Error(), "Start after Stop") {
		t.Fatalf("Start after Stop: %v", err)
	}
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t)
		m := w.partitions("a", 2)
		if err := m.p.Start(context.Background()); err == nil || !strings.Contains(err.Error(), "started twice") {
			t.Fatalf("second Start: %v", err)
		}
	})
}

// D6: members started together share the partitions from the start: none takes more than its
// share (no pile-up on the first to plan), and each owns its share from 2R on.
func TestD6StartTogetherNoPileUp(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t)
		const k = 12
		a, b, c := w.partitions("a", k), w.partitions("b", k), w.partitions("c", k)
		for d := time.Duration(0); d <= sec(60); d += 100 * time.Millisecond {
			w.At(d)
			counts, free := checkOwners(t, k, a, b, c)
			if _, hi := spread(counts); hi > 4 {
				t.Fatalf("at %v: %v owned; want none above its share, 4", d, counts)
			}
			if d >= 2*testR && (free != 0 || counts["a"] != 4 || counts["b"] != 4 || counts["c"] != 4) {
				t.Fatalf("at %v: %v owned, %d free; want 4 each from 2R", d, counts, free)
			}
		}
	})
}

// D6: ten members started one second apart, as a Deployment's pods come up: none plans before
// the roster has settled (no new member in a read, each member's lease seen), so none ever owns
// more than its share of the ten, and from 30s each owns its share. Before, the first planned
// R after it joined with the five members it saw, took 20 and handed half of them over at
// MaxMoves per R.
func TestD6StaggeredStartNoPileUp(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t)
		const k, n = 100, 10
		var ms []*pmember
		for d := time.Duration(0); d <= sec(40); d += 100 * time.Millisecond {
			w.At(d)
			if len(ms) < n && d == time.Duration(len(ms))*time.Second {
				ms = append(ms, w.partitions(fmt.Sprintf("m%d", len(ms)), k))
			}
			counts, free := checkOwners(t, k, ms...)
			if _, hi := spread(counts); hi > k/n {
				t.Fatalf("at %v: %v owned; want none above its share, %d", d, counts, k/n)
			}
			if lo, _ := spread(counts); d >= sec(30) && (free != 0 || len(counts) != n || lo != k/n) {
				t.Fatalf("at %v: %v owned, %d free; want %d each", d, counts, free, k/n)
			}
		}
	})
}

// noRoster is a Lock that keeps no roster.
type noRoster struct{ cluster.Lock }
