package partition

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"testing/synctest"
	"time"

	"github.com/leasehold/leasehold/cluster"
)

// D6-D8 under faults: 3 to 4 members of a 8-partition election, each through a faultStore of
// its own (errors, hangs, latency above L-R), crashing and restarting under new IDs, stopping
// and starting again, for a fake hour per seed. Every 100ms, no partition has two owners
// (IsLeader; a crashed member's Electors keep their deadline, W7). After the faults end and
// every member is back, within 2 minutes every partition is owned and the counts differ by at
// most one.
func TestD6RandomFaults(t *testing.T) {
	for _, seed := range randomSeedList(t, 3) { // -random.seeds=N, -random.seed=S as TestRandomFaults
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) { runPartitionsSeed(t, seed) })
		})
	}
}

type rpmember struct {
	p      *Partitions
	faults *faultStore
	lock   crashLock
	gone   bool // crashed or stopped
	// crashed: its Lock fails every call; it is stopped, writing nothing, once the test ends
	crashed bool
}

func runPartitionsSeed(t *testing.T, seed uint64) {
	const k = 8
	rng := rand.New(rand.NewPCG(seed, 0x9a271))
	w := newWorld(t)
	var all []*rpmember
	start := func(id string) *rpmember {
		f := newFaultStore(w.Mem)
		lock := newCrashLock(cluster.NewStoreLock(f))
		p, err := New(Config{
			Lock: lock, LeaseName: "work", Partitions: k, LeaseDuration: testL, RenewInterval: testR,
			InstanceID: id, Logger: quietLogger(), MaxMoves: 1 + rng.IntN(2),
		})
		if err != nil {
			t.Fatal(err)
		}
		if err := p.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		m := &rpmember{p: p, faults: f, lock: lock}
		all = append(all, m)
		return m
	}
	n := 3 + rng.IntN(2)
	slots := make([]*rpmember, n)
	incs := make([]int, n)
	for i := range slots {
		slots[i] = start(fmt.Sprintf("m%d.0", i))
	}
	check := func() {
		t.Helper()
		var ms []*pmember
		for _, m := range all {
			ms = append(ms, &pmember{p: m.p}) // crashed ones too: their IsLeader keeps its deadline
		}
		checkOwners(t, k, ms...)
	}
	end := time.Hour
	next := sec(5)
	for d := time.Duration(0); d < end; d += 100 * time.Millisecond {
		w.At(d)
		check()
		if d < next {
			continue
		}
		next = d + time.Duration(rng.Int64N(int64(40*time.Second)))
		i := rng.IntN(n)
		m := slots[i]
		switch r := rng.IntN(10); {
		case m.gone:
			incs[i]++
			slots[i] = start(fmt.Sprintf("m%d.%d", i, incs[i]))
		case r < 2:
			m.gone, m.crashed = true, true
			crash(m.p, m.lock)
		case r < 4:
			m.gone = true
			ctx, cancel := context.WithTimeout(context.Background(), testL)
			go func() { defer cancel(); _ = m.p.Stop(ctx) }()
		case r < 6:
			m.faults.Set(func(f *faultStore) { f.Err = errInjected })
			time.AfterFunc(time.Duration(rng.Int64N(int64(30*time.Second))), m.faults.Heal)
		case r < 8:
			m.faults.Set(func(f *faultStore) { f.Hang = true })
			time.AfterFunc(time.Duration(rng.Int64N(int64(30*time.Second))), m.faults.Heal)
		default:
			m.faults.Set(func(f *faultStore) { f.Latency = testL - testR + time.Second })
			time.AfterFunc(time.Duration(rng.Int64N(int64(30*time.Second))), m.faults.Heal)
		}
	}
	// Calm: every fault healed, every member back.
	w.At(end + 31*time.Second) // the last heal is due by now
	for i, m := range slots {
		if m.gone {
			incs[i]++
			slots[i] = start(fmt.Sprintf("m%d.%d", i, incs[i]))
		}
	}
	calm := w.Since()
	var live []*pmember
	for _, m := range slots {
		live = append(live, &pmember{p: m.p})
	}
	for d := calm; d <= calm+2*time.Minute; d += 100 * time.Millisecond {
		w.At(d)
		check()
	}
	counts, free := checkOwners(t, k, live...)
	if lo, hi := spread(counts); free != 0 || hi-lo > 1 || len(counts) != n {
		t.Fatalf("2 minutes after the last fault: %v owned, %d free; want all %d partitions over the %d members, counts within one", counts, free, k, n)
	}
	for _, m := range all {
		if !m.gone || m.crashed {
			_ = m.p.Stop(context.Background())
		}
	}
}
