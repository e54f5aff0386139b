package partition

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/leasehold/leasehold/cluster"
	"github.com/leasehold/leasehold/internal/leaseconf"
)

// D10: a member that is out of the roster but still named by the partitions' records (it was
// dropped from the roster, then crashed) is fenced all the same: a new member that never saw it
// in the roster takes its partitions once its member lease expires.
func TestD10FenceAMemberOutOfTheRoster(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t)
		const k = 12
		c := w.partitions("c", k)
		w.runPartitions(sec(30), k, c)
		if got := len(c.p.Owned()); got != k {
			t.Fatalf("c owns %d partitions alone; want %d", got, k)
		}
		c.crash()
		if err := cluster.NewStoreLock(w.Mem).(cluster.Roster).Leave(context.Background(), RosterName("work"), "c"); err != nil {
			t.Fatal(err)
		}
		a := w.partitions("a", k)
		// a's first plan comes 2R after it starts; c's lease, renewed at most R before the
		// crash, expires for a L after a first reads it, and a's fence attempts every R.
		w.runPartitions(sec(30)+testL+4*testR, k, a)
		if counts, free := checkOwners(t, k, a); free != 0 || counts["a"] != k {
			t.Fatalf("%v owned, %d free; want every partition owned by a", counts, free)
		}
	})
}

// D6: the view of a record never goes back: after this instance's own release, neither the
// claim it replaced delivered late by the watch nor a read of it that began before the release
// is taken. A read that began after, and says the record is the older one, is: a store that
// went back (B3).
func TestD6ViewNeverGoesBack(t *testing.T) {
	p := &Partitions{view: make([]partView, 1), poke: make(chan struct{}, 1)}
	claim := cluster.Record{Holder: "a", Session: "s.1", Term: 7, RenewedAt: time.Unix(1, 0), Revision: "r1"}
	release := cluster.Record{Term: 7, NextHolder: "b", RenewedAt: time.Unix(2, 0), Revision: "r2"}
	p.setView(0, claim, true, -2)
	before := p.view[0].gen // a read begins
	p.setView(0, release, true, -2)
	p.setView(0, claim, true, -1) // the watch, late
	if got := p.view[0].rec.Revision; got != "r2" {
		t.Fatalf("view after a late watched claim: revision %s; want the release, r2", got)
	}
	p.setView(0, claim, true, before) // the read that crossed the release
	if got := p.view[0].rec.Revision; got != "r2" {
		t.Fatalf("view after a read begun before the release: revision %s; want the release, r2", got)
	}
	p.setView(0, claim, true, p.view[0].gen) // a read begun now: the store went back
	if got := p.view[0].rec.Revision; got != "r1" {
		t.Fatalf("view after a read begun after the release: revision %s; want r1", got)
	}
}

// D10: PartitionLease names the member lease and the term a partition's record is held under,
// and nothing for a released record or one that names no member lease.
func TestD10MemberLease(t *testing.T) {
	rec := cluster.Record{Holder: "web-1", Session: partitionSession("4f1c9a0b7e2d3c58", 42), Term: 9}
	ml, term, ok := MemberLease("jobs", rec)
	if !ok || ml != memberLeaseName("jobs", "web-1") || term != 42 {
		t.Fatalf("PartitionLease = %q, %d, %v; want %q, 42, true", ml, term, ok, memberLeaseName("jobs", "web-1"))
	}
	for _, r := range []cluster.Record{{Session: rec.Session, Term: 9}, {Holder: "web-1", Session: "4f1c9a0b7e2d3c58", Term: 9}} {
		if _, _, ok := MemberLease("jobs", r); ok {
			t.Errorf("MemberLease(%+v) is ok; want none", r)
		}
	}
}

// D7: a release reserved for a member that is live (it renews its member lease) but never
// claims it is claimed by another member once it has been free for L + R in that member's
// view: a partition is not left without an owner for good, whatever the views. (The plan may
// then hand it to that member again: a member that never claims costs its partitions L + R
// of each round.)
func TestD7ReservationNotTakenIsClaimedAfterLPlusR(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t)
		const k = 4
		ctx := context.Background()
		lock := cluster.NewStoreLock(w.Mem)
		// ghost renews a member lease and is in the roster, but runs no partitions.
		startGhost(t, lock)
		name := leaseconf.SlotName(lock, "work", 2, k)
		if _, err := lock.Create(ctx, name, cluster.Record{Term: 5, NextHolder: "ghost", Duration: testL, RenewedAt: time.Now()}); err != nil {
			t.Fatal(err)
		}
		a := w.partitions("a", k)
		claimed := time.Duration(-1)
		for d := time.Duration(0); d <= 4*testR+testL && claimed < 0; d += 100 * time.Millisecond {
			w.At(d)
			if slices.Contains(a.p.Owned(), 2) {
				claimed = d
			}
		}
		// a's first plan comes R after it starts (its second read of the roster); from then
		// on partition 2 is free in its view, and reserved for a live member until L + R.
		// The other partition planned for ghost is stuck at the same time: a, at its share,
		// claims stuck partitions as moves, one per R (MaxMoves), so either goes first.
		if first := testR + testL + testR; claimed != first && claimed != first+testR {
			t.Fatalf("partition 2, reserved for ghost which never claims it, first owned by a at %v; want L + R after a's first plan, %v, or R later", claimed, first)
		}
	})
}

// D8: once a crashed member's lease is taken over, its partitions are owned again one write
// later on every member that learns of it through its fence: the planner takes the fence's term
// for the end of the leadership without reading the lease again, and sends its claims
// together, not one round trip after another. With 200ms per store call and 24 partitions,
// the crashed member's 8 are all owned again within 3 calls of the takeover (6 calls and more
// when the news was read again and each claim waited for the one before).
func TestD8CrashClaimsSoonAfterTheTakeover(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t)
		const k = 24
		const call = 200 * time.Millisecond
		start := func(id string) *pmember {
			fs := newFaultStore(w.Mem)
			fs.Set(func(f *faultStore) { f.Latency = call })
			lock := newCrashLock(cluster.NewStoreLock(watchingStore{fs}))
			p, err := New(Config{
				Lock: lock, LeaseName: "work", Partitions: k, LeaseDuration: testL, RenewInterval: testR,
				InstanceID: id, Logger: quietLogger(),
			})
			if err != nil {
				t.Fatal(err)
			}
			m := &pmember{p: p, lock: lock}
			if err := p.Start(context.Background()); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(m.cleanup)
			return m
		}
		a, b, c := start("a"), start("b"), start("c")
		w.runPartitions(sec(60), k, a, b, c)
		held := c.p.Owned()
		if len(held) != k/3 {
			t.Fatalf("c owns %d partitions before the crash; want %d", len(held), k/3)
		}
		c.crash()
		lock := cluster.NewStoreLock(w.Mem)
		var takenAt time.Duration
		ownedAt := make(map[int]time.Duration)
		for d := w.Since(); d <= sec(60)+testL+3*testR && len(ownedAt) < len(held); d += 10 * time.Millisecond {
			w.At(d)
			if rec, err := lock.Get(context.Background(), memberLeaseName("work", "c")); takenAt == 0 && err == nil && rec.Holder != "c" {
				takenAt = d
			}
			os := owners(k, a, b)
			for _, i := range held {
				if _, ok := ownedAt[i]; !ok && len(os[i]) == 1 {
					ownedAt[i] = d
				}
			}
		}
		if takenAt == 0 {
			t.Fatalf("c's member lease never taken over")
		}
		for _, i := range held {
			at, ok := ownedAt[i]
			switch {
			case !ok:
				t.Errorf("partition %d: never owned again", i)
			case at-takenAt > 3*call:
				t.Errorf("partition %d: owned again %v after c's member lease was taken over; want within %v", i, at-takenAt, 3*call)
			}
		}
	})
}

// D7: a member that is live but slow to claim its share (a start under load) does not see it
// all taken at once by the first member whose view says it has been free for L + R: beyond
// the share, such claims are moves, MaxMoves per R (1 here). ghost holds its member lease and
// is in the roster, but never claims its 6 of 12 partitions; a takes one of them L + R after
// its first plan, then one more each R. (Over its share then, a hands them back to ghost at
// MaxMoves per R, and takes them again L + R later: a member that never claims costs its
// partitions that time without an owner, never an owner for good.)
func TestD7StuckClaimsBeyondTheShareAreMoves(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t)
		const k = 12
		startGhost(t, cluster.NewStoreLock(w.Mem))
		a := w.partitions("a", k)
		firstPlan := testR // a's second read of the roster
		for _, c := range []struct {
			at   time.Duration
			owns int
		}{
			{firstPlan + testR, k / 2},                 // its share, claimed at once
			{firstPlan + testL + testR/2, k / 2},       // the rest not free for L + R yet
			{firstPlan + testL + testR + testR/2, 7},   // one stuck partition, a move
			{firstPlan + testL + 2*testR + testR/2, 8}, // one more per R
			{firstPlan + testL + 6*testR + testR/2, k}, // all of them 4 R later
		} {
			w.runPartitions(c.at, k, a)
			if got := len(a.p.Owned()); got != c.owns {
				t.Fatalf("at %v a owns %d partitions; want %d", c.at, got, c.owns)
			}
		}
	})
}

// startGhost makes ghost a member of the partitioned election "work" that holds its member
// lease and is in the roster, but runs no partitions: it never claims any. It ends with t.
func startGhost(t *testing.T, lock cluster.Lock) {
	t.Helper()
	startMember(t, lock, "ghost")
}

// blindLock fails every read of another member's lease: a member whose reads time out under
// load.
type blindLock struct {
	cluster.Lock
	cluster.Roster
	own string
}

func (l blindLock) Get(ctx context.Context, name string) (cluster.Record, error) {
	if strings.Contains(name, ".member-") && name != l.own {
		return cluster.Record{}, errInjected
	}
	return l.Lock.Get(ctx, name)
}

// D7: a member that cannot read the other members' leases (reads that time out under load)
// does not take them for gone and claim their shares: its claims stop at its share among the
// roster's members whose lease it has not seen leave them. Nine members hold their leases and
// are in the roster but never claim; a, blind to their leases, plans alone once its wait for
// the roster to settle ends (L), and claims 10 of 100, not all of them.
func TestD7ClaimsStopAtTheRosterShare(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t)
		const k = 100
		lock := cluster.NewStoreLock(w.Mem)
		for i := range 9 {
			startMember(t, lock, fmt.Sprintf("g%d", i))
		}
		p := startPartitions(t, blindLock{Lock: lock, Roster: lock.(cluster.Roster), own: memberLeaseName("work", "a")}, k, quietLogger())
		w.At(testL + testR/2)
		if got := len(p.Owned()); got != k/10 {
			t.Fatalf("a owns %d partitions at L + R/2; want %d, its share among the roster's ten members", got, k/10)
		}
	})
}

// startPartitions starts a, a member of the partitioned election "work" of k partitions over
// lock, logging to log. It ends with t.
func startPartitions(t *testing.T, lock cluster.Lock, k int, log *slog.Logger) *Partitions {
	t.Helper()
	p, err := New(Config{
		Lock: lock, LeaseName: "work", Partitions: k,
		LeaseDuration: testL, RenewInterval: testR, InstanceID: "a", Logger: log,
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Stop(context.Background()) })
	return p
}

// startMember makes id a member of the partitioned election "work" that holds its member lease
// and is in the roster, but runs no partitions. It ends with t.
func startMember(t *testing.T, lock cluster.Lock, id string) {
	t.Helper()
	ctx := context.Background()
	e, err := cluster.NewElector(cluster.ElectorConfig{Lock: lock, LeaseName: memberLeaseName("work", id), LeaseDuration: testL, RenewInterval: testR, InstanceID: id, Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Stop(ctx) })
	if err := lock.(cluster.Roster).Beat(ctx, RosterName("work"), cluster.Member{ID: id, Session: id, Beat: 1, Duration: testL}); err != nil {
		t.Fatal(err)
	}
}

// D7: a release reserved for a live member counts as that member's in the plan until it takes
// it (or until it is stuck), not as free: a member that planned it as free could plan it for
// itself, skip it as reserved, and leave another free partition planned for nobody, which then
// waits until it is stuck, L + R. A crashed member's partition waited so behind a reservation
// that a member's watch had missed the heir's claim of. Here ghost is live and never claims:
// partition r is released for it, the three others are free; a, whose share of four among two
// members is two, claims two of the three free ones at its first plan.
func TestD7ReservedCountsAsTheHeirs(t *testing.T) {
	for r := range 4 {
		t.Run(fmt.Sprint("reserved ", r), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				w := newWorld(t)
				const k = 4
				lock := cluster.NewStoreLock(w.Mem)
				startGhost(t, lock)
				name := leaseconf.SlotName(lock, "work", r, k)
				if _, err := lock.Create(context.Background(), name, cluster.Record{Term: 5, NextHolder: "ghost", Duration: testL, RenewedAt: time.Now()}); err != nil {
					t.Fatal(err)
				}
				a := w.partitions("a", k)
				w.At(2 * testR)
				owned := a.p.Owned()
				if len(owned) != 2 || slices.Contains(owned, r) {
					t.Fatalf("a owns %v at 2R, partition %d reserved for ghost; want two of the three others", owned, r)
				}
			})
		})
	}
}

// muteLock's watches of partition records never bring a state: a store whose watches take
// long to bring their first ones (thousands of first reads queued).
type muteLock struct {
	cluster.Lock
	cluster.Roster
}

func (l muteLock) Watch(ctx context.Context, name string, fn func(cluster.Record, error)) error {
	if strings.Contains(name, ".member-") {
		return l.Lock.(cluster.Watcher).Watch(ctx, name, fn)
	}
	<-ctx.Done()
	return ctx.Err()
}

// D6: the first plan reads the records no watch has brought yet: a member whose watches are
// slow to bring their first states claims its share at its first plan, not once they come.
func TestD6FirstPlanReadsWhatNoWatchBrought(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t)
		const k = 8
		lock := cluster.NewStoreLock(w.Mem)
		p := startPartitions(t, muteLock{Lock: lock, Roster: lock.(cluster.Roster)}, k, quietLogger())
		w.At(2 * testR)
		if got := len(p.Owned()); got != k {
			t.Fatalf("a, alone, owns %d of %d partitions at 2R; want all", got, k)
		}
	})
}

// failingWatchLock's watches of partition records end at once with an error: a store that
// drops its watch streams.
type failingWatchLock struct {
	cluster.Lock
	cluster.Roster
}

func (l failingWatchLock) Watch(ctx context.Context, name string, fn func(cluster.Record, error)) error {
	if strings.Contains(name, ".member-") {
		return l.Lock.(cluster.Watcher).Watch(ctx, name, fn)
	}
	return errInjected
}

// D6: the partitions' watches that fail are logged, one line per R at most, each naming a
// partition and its error and counting the failures since the line before: thousands of
// watches that end together make a line, not thousands, and not none.
func TestD6WatchFailuresLoggedOncePerR(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t)
		const k = 8
		lock := cluster.NewStoreLock(w.Mem)
		var logs logCapture
		startPartitions(t, failingWatchLock{Lock: lock, Roster: lock.(cluster.Roster)}, k, logs.Logger())
		w.At(3*testR + testR/2)
		lines := logs.Find("leasehold: partitions: watch ended, read and watched again R later")
		// The k watches fail at the start, then again R later, each R: a line each time.
		if len(lines) < 3 || len(lines) > 4 {
			t.Fatalf("%d lines about the failed watches over 3.5 R; want one per R: %v", len(lines), lines)
		}
		for _, l := range lines {
			if !strings.Contains(fmt.Sprint(l["error"]), errInjected.Error()) {
				t.Errorf("line %v does not give the watch's error %q", l, errInjected)
			}
			if _, ok := l["partition"].(float64); !ok {
				t.Errorf("line %v does not name a partition", l)
			}
		}
		if n := lines[len(lines)-1]["othersSinceLastLine"]; n != float64(k-1) {
			t.Errorf("the last line counts %v other failures since the one before; want %d, the other partitions' watches", n, k-1)
		}
	})
}
