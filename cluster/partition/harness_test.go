package partition

import (
	"context"
	"flag"
	"io"
	"log/slog"
	"os"
	"strconv"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/leasehold/leasehold/cluster"
	"github.com/leasehold/leasehold/internal/faultstore"
	"github.com/leasehold/leasehold/internal/logcapture"
	"github.com/leasehold/leasehold/store"
	"github.com/leasehold/leasehold/store/memory"
)

const (
	testL = 15 * time.Second
	testR = 5 * time.Second
)

// faultStore is one process's connection to the store, with faults.
type faultStore = faultstore.Store

var (
	newFaultStore = faultstore.New
	errInjected   = faultstore.ErrInjected
)

// watchingStore is a faultStore that passes on the watch of the store below it, which the
// faultStore alone does not offer.
type watchingStore struct{ *faultStore }

func (s watchingStore) Watch(ctx context.Context, key string, fn func(store.Change)) error {
	return s.Inner().(store.Watcher).Watch(ctx, key, fn)
}

// world is the store the processes of a test share, and the fake time it began at.
type world struct {
	t     *testing.T
	mem   *memory.Store
	start time.Time
}

func newWorld(t *testing.T) *world {
	return &world{t: t, mem: memory.New(), start: time.Now()}
}

// since returns the fake time elapsed since the world began.
func (w *world) since() time.Duration { return time.Since(w.start) }

// at sleeps until d after the world began (fake time inside a bubble) and waits for every
// goroutine of the bubble to block.
func (w *world) at(d time.Duration) {
	w.t.Helper()
	if wait := w.start.Add(d).Sub(time.Now()); wait > 0 {
		time.Sleep(wait)
	}
	synctest.Wait()
}

func sec(f float64) time.Duration { return time.Duration(f * float64(time.Second)) }

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// logCapture collects JSON log records for assertions.
type logCapture = logcapture.Capture

// crashLock is one process's Lock (a cluster.Roster and a cluster.Watcher too): once crashed,
// every call fails and no watch delivers, as for a process that was killed: its Electors (the
// member lease's, the fences) write nothing more, and its records are left as they are.
type crashLock struct {
	cluster.Lock
	down *atomic.Bool
}

func newCrashLock(l cluster.Lock) crashLock { return crashLock{Lock: l, down: new(atomic.Bool)} }

// crash makes every call fail from now on.
func (l crashLock) crash() { l.down.Store(true) }

func (l crashLock) Get(ctx context.Context, name string) (cluster.Record, error) {
	if l.down.Load() {
		return cluster.Record{}, errInjected
	}
	return l.Lock.Get(ctx, name)
}

func (l crashLock) Create(ctx context.Context, name string, rec cluster.Record) (cluster.Record, error) {
	if l.down.Load() {
		return cluster.Record{}, errInjected
	}
	return l.Lock.Create(ctx, name, rec)
}

func (l crashLock) Update(ctx context.Context, name string, rec cluster.Record) (cluster.Record, error) {
	if l.down.Load() {
		return cluster.Record{}, errInjected
	}
	return l.Lock.Update(ctx, name, rec)
}

func (l crashLock) Watch(ctx context.Context, name string, fn func(cluster.Record, error)) error {
	if l.down.Load() {
		return errInjected
	}
	w, ok := l.Lock.(cluster.Watcher)
	if !ok {
		return cluster.ErrWatchUnsupported
	}
	return w.Watch(ctx, name, func(rec cluster.Record, err error) {
		if !l.down.Load() {
			fn(rec, err)
		}
	})
}

func (l crashLock) Beat(ctx context.Context, name string, m cluster.Member) error {
	if l.down.Load() {
		return errInjected
	}
	return l.Lock.(cluster.Roster).Beat(ctx, name, m)
}

func (l crashLock) Leave(ctx context.Context, name, member string) error {
	if l.down.Load() {
		return errInjected
	}
	return l.Lock.(cluster.Roster).Leave(ctx, name, member)
}

func (l crashLock) Members(ctx context.Context, name string) ([]cluster.Member, error) {
	if l.down.Load() {
		return nil, errInjected
	}
	return l.Lock.(cluster.Roster).Members(ctx, name)
}

var (
	flagRandomSeeds = flag.Int("random.seeds", 0, "TestD6RandomFaults: seeds (default $LEASEHOLD_RANDOM_SEEDS, else 3)")
	flagRandomSeed  = flag.Uint64("random.seed", 0, "TestD6RandomFaults: run this seed only")
	flagRandomFirst = flag.Uint64("random.first", 0, "TestD6RandomFaults: number of the first seed (default $LEASEHOLD_RANDOM_FIRST, else 1)")
)

// randomSeedList returns the seeds to run, n unless the flags or the environment say
// otherwise, as cluster's TestRandomFaults chooses its own.
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
	first := uint64(1)
	if v := os.Getenv("LEASEHOLD_RANDOM_FIRST"); v != "" {
		var err error
		if first, err = strconv.ParseUint(v, 10, 64); err != nil || first < 1 {
			t.Fatalf("LEASEHOLD_RANDOM_FIRST=%q: want a positive integer", v)
		}
	}
	if *flagRandomFirst > 0 {
		first = *flagRandomFirst
	}
	seeds := make([]uint64, n)
	for i := range seeds {
		seeds[i] = first + uint64(i)
	}
	return seeds
}
