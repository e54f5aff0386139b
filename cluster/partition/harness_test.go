package partition

import (
	"context"
	"flag"
	"sync/atomic"
	"testing"
	"time"

	"github.com/leasehold/leasehold/cluster"
	"github.com/leasehold/leasehold/internal/bubble"
	"github.com/leasehold/leasehold/internal/faultstore"
	"github.com/leasehold/leasehold/internal/logcapture"
	"github.com/leasehold/leasehold/store"
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

// world is the store the instances of a test share, and the fake time it began at, with the
// test's own helpers.
type world struct{ *bubble.World }

func newWorld(t *testing.T) *world { return &world{bubble.New(t)} }

var sec = bubble.Sec

var quietLogger = bubble.QuietLogger

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

// randomSeedList returns the seeds to run: n unless the flags or the environment say
// otherwise (bubble.Seeds).
func randomSeedList(t *testing.T, n int) []uint64 {
	return bubble.Seeds(t, n, *flagRandomSeed, *flagRandomSeeds, *flagRandomFirst)
}
