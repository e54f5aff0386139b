package campaign

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/leasehold/leasehold/cluster"
	"github.com/leasehold/leasehold/internal/proctest"
	"github.com/leasehold/leasehold/store"

	// The stores the workers open, for their URL openers.
	_ "github.com/leasehold/leasehold/store/azblob"
	_ "github.com/leasehold/leasehold/store/dynamodb"
	_ "github.com/leasehold/leasehold/store/etcd"
	_ "github.com/leasehold/leasehold/store/file"
	_ "github.com/leasehold/leasehold/store/gcs"
	_ "github.com/leasehold/leasehold/store/mysql"
	_ "github.com/leasehold/leasehold/store/nats"
	_ "github.com/leasehold/leasehold/store/postgres"
	_ "github.com/leasehold/leasehold/store/redis"
	_ "github.com/leasehold/leasehold/store/s3"
	_ "github.com/leasehold/leasehold/store/sqlite"
	_ "github.com/leasehold/leasehold/store/zookeeper"
)

// envResource gives a worker the fenced resource's address, beside proctest's Config.
const envResource = "LEASEHOLD_FAULTS_RESOURCE"

// ActionInterval is how often a leading worker acts on the fenced resource.
const ActionInterval = 50 * time.Millisecond

// LockOpener opens the lease lock a worker elects over, from the URL the runner gave it. The
// returned closer is closed when the worker stops.
type LockOpener func(ctx context.Context, rawURL string) (cluster.Lock, io.Closer, error)

var (
	lockOpenersMu sync.Mutex
	lockOpeners   = map[string]LockOpener{}
)

// RegisterLockOpener makes the workers open URLs of scheme with open instead of store.Open and
// cluster.NewStoreLock: the hook for a backend whose lease is not a store record (Kubernetes
// Leases). It panics on a duplicate scheme.
func RegisterLockOpener(scheme string, open LockOpener) {
	lockOpenersMu.Lock()
	defer lockOpenersMu.Unlock()
	if _, dup := lockOpeners[scheme]; dup {
		panic("campaign: lock opener for " + scheme + " registered twice")
	}
	lockOpeners[scheme] = open
}

func openLock(ctx context.Context, rawURL string) (cluster.Lock, io.Closer, error) {
	if u, err := url.Parse(rawURL); err == nil {
		lockOpenersMu.Lock()
		open := lockOpeners[u.Scheme]
		lockOpenersMu.Unlock()
		if open != nil {
			return open(ctx, rawURL)
		}
	}
	s, err := store.Open(ctx, rawURL)
	if err != nil {
		return nil, nil, err
	}
	return cluster.NewStoreLock(s), closerFunc(func() error { return store.Close(s) }), nil
}

// hasLockOpener reports whether the workers open rawURL with a LockOpener, not as a store.
func hasLockOpener(rawURL string) bool {
	u, err := url.Parse(rawURL)
	if err != nil {
		return false
	}
	lockOpenersMu.Lock()
	defer lockOpenersMu.Unlock()
	return lockOpeners[u.Scheme] != nil
}

type closerFunc func() error

func (f closerFunc) Close() error { return f() }

// MaybeWorker runs the worker and exits when the environment says this process is one (the
// runner sets it); otherwise it returns at once. Call it first in main, or in TestMain.
//
// The worker runs a cluster.Elector over the lock of its URL, writes its leadership lines to
// the shared log and its stdout (proctest.Observer), reports on stdout whether its attempts
// succeed (lines "attempt ID T ok|fail", on each change), and while it leads acts on the fenced
// resource every ActionInterval with the term of its leadership (cluster.TermOf). It stops on
// SIGTERM and dies with the runner as proctest.ServeWorker's workers do. In the Locker mode
// (Options.Locker) it holds the lease through a locker.Locker instead (runLockerWorker), in
// the partitions mode (Options.Partitions) through a partition.Partitions (runPartitionsWorker).
// In the Ranked mode (Options.Ranked) its Elector has a priority, a stability window and a
// health check the runner controls (rankedConfig), and it reports its requests to hand over.
func MaybeWorker() { proctest.ServeWorker("faults", runWorker) }

func runWorker(w *proctest.Worker) int {
	ctx := context.Background()
	lock, closer, err := openLock(ctx, w.URL)
	if err != nil {
		return w.Fail("%s: %v", proctest.EnvURL, err) // store errors never hold a credential (T4)
	}
	defer closer.Close()
	// The watch faults sit between the Lock and the Elector (WatchMode).
	faulty, watchFaults := withWatchFaults(lock)
	cfg := cluster.ElectorConfig{
		Lock:          faulty,
		LeaseName:     w.Lease,
		LeaseDuration: w.LeaseDuration,
		RenewInterval: w.RenewInterval,
		InstanceID:    w.ID,
		Logger:        slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
	}
	health, err := rankedConfig(&cfg)
	if err != nil {
		return w.Fail("%v", err)
	}
	serveWatchControl(w.ID, os.Getenv(envWatchControl), watchFaults, health)

	switch {
	case os.Getenv(envLocker) == "1":
		return runLockerWorker(w, faulty)
	case os.Getenv(envPartitions) != "":
		return runPartitionsWorker(w, faulty, lock)
	}
	// Built here, not above: the Locker and partitions workers make their own, and each one
	// opens the worker's trace file.
	cfg.Observer = workerObserver(w)
	el, err := cluster.NewElector(cfg)
	if err != nil {
		return w.Fail("%v", err)
	}
	act := newActor(w.ID, os.Getenv(envResource))
	el.WhenLeader(func(ctx context.Context) error { return act.lead(ctx, el.IsLeader) }, nil)
	return w.RunElector(ctx, el)
}

// workerObserver writes the worker's leadership lines and its attempt lines.
func workerObserver(w *proctest.Worker) func(cluster.Event) {
	return cluster.Observers(w.Observer(), attemptsObserver(w), traceObserver(w.ID, os.Getenv(envTrace)))
}

// attemptsObserver writes the worker's attempt lines: on stdout, each time its attempts start
// or stop succeeding.
func attemptsObserver(w *proctest.Worker) func(cluster.Event) {
	var attempts string // "ok" or "fail" once an attempt has ended
	return func(ev cluster.Event) {
		// The runner waits for every instance's attempts to succeed before the next fault:
		// a client still reconnecting after an outage would make a takeover look slow. A
		// follower whose watch is healthy sends no attempts: a change its watch brought
		// counts as an answer of the store.
		ok := ev.Kind == cluster.AttemptSucceeded || ev.Kind == cluster.WatchedChange
		if !ok && ev.Kind != cluster.AttemptFailed {
			return
		}
		if now := map[bool]string{true: "ok", false: "fail"}[ok]; now != attempts {
			attempts = now
			proctest.WriteStdout(attemptLine{Instance: w.ID, T: proctest.Now(), OK: now == "ok"}.String())
		}
	}
}

// attemptLine reports on a worker's stdout that its attempts started or stopped succeeding.
type attemptLine struct {
	Instance string
	T        int64
	OK       bool
}

func (a attemptLine) String() string {
	s := "fail"
	if a.OK {
		s = "ok"
	}
	return fmt.Sprintf("attempt %s %d %s", a.Instance, a.T, s)
}

func parseAttemptLine(s string) (attemptLine, bool) {
	f := strings.Fields(s)
	if len(f) != 4 || f[0] != "attempt" || (f[3] != "ok" && f[3] != "fail") {
		return attemptLine{}, false
	}
	t, err := strconv.ParseInt(f[2], 10, 64)
	if err != nil {
		return attemptLine{}, false
	}
	return attemptLine{Instance: f[1], T: t, OK: f[3] == "ok"}, true
}

// actor performs a leader's actions on the fenced resource.
type actor struct {
	id     string
	base   string // http://host:port/act
	client *http.Client
}

func newActor(id, addr string) *actor {
	return &actor{id: id, base: "http://" + addr + "/act", client: &http.Client{Timeout: 250 * time.Millisecond}}
}

// MaxWork bounds the work a leader does between checking IsLeader and writing its action.
const MaxWork = 20 * time.Millisecond

// lead acts at once, then every ActionInterval, until its leadership ends. Each action is
// stamped before leading (the Elector's IsLeader, or the Locker's Held.IsHeld) is checked:
// when it says true, the stamp lies inside the leadership (W7), which the checks verify
// against the leadership lines. Then, as a real leader computes before it writes, it works
// for a random time up to MaxWork, and sends the action without ctx: a pause (SIGSTOP) in
// that window makes the write arrive after another instance took over, and the resource must
// reject it if a newer term acted meanwhile (W8). That is what fencing is for; IsLeader alone
// cannot prevent it.
func (a *actor) lead(ctx context.Context, leading func() bool) error {
	term, ok := cluster.TermOf(ctx)
	if !ok {
		return fmt.Errorf("faults worker %s: the leader callback's context carries no term (W8)", a.id)
	}
	tick := time.NewTicker(ActionInterval)
	defer tick.Stop()
	for {
		sent := proctest.Now()
		if ctx.Err() != nil {
			return nil
		}
		if leading() {
			time.Sleep(rand.N(MaxWork)) // the work: it picks a duration, it waits for nothing
			a.do(term, sent)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}

func (a *actor) do(term uint64, sent int64) {
	u := fmt.Sprintf("%s?i=%s&t=%d&s=%d", a.base, url.QueryEscape(a.id), term, sent)
	resp, err := a.client.Post(u, "text/plain", nil)
	if err != nil {
		return // the resource counts what reaches it; a lost action is no violation
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
}
