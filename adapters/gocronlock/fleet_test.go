package gocronlock_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/leasehold/leasehold/internal/proctest"
	"github.com/leasehold/leasehold/internal/testenv"
	"github.com/leasehold/leasehold/internal/testurl"
	"github.com/leasehold/leasehold/store"
	"github.com/leasehold/leasehold/store/redis"
)

// The fleet's timing: a job every second (period), L and R short enough for a takeover within
// a few ticks, and Hold inside the window of the package documentation,
// skew + R + δ < Hold < period − skew − δ, with a margin of 350 ms on either side for the
// replicas' scheduling on a loaded host.
const (
	period    = time.Second
	fleetL    = 2 * time.Second
	fleetR    = 250 * time.Millisecond
	fleetHold = 600 * time.Millisecond
	// slack covers process scheduling under the race detector on a loaded host, and the
	// store's round trips.
	slack = 500 * time.Millisecond
)

// The four fleets run side by side: each has a table or key prefix of its own, and each
// spends its seconds waiting for ticks, not computing.
func TestFleetElectorPostgres(t *testing.T) { t.Parallel(); fleet(t, postgresURL(t), "elector") }
func TestFleetLockerPostgres(t *testing.T)  { t.Parallel(); fleet(t, postgresURL(t), "locker") }
func TestFleetElectorRedis(t *testing.T)    { t.Parallel(); fleet(t, redisURL(t), "elector") }
func TestFleetLockerRedis(t *testing.T)     { t.Parallel(); fleet(t, redisURL(t), "locker") }

// postgresURL returns the PostgreSQL server's URL on a table of this test's own, dropped when
// the test ends.
func postgresURL(t *testing.T) string {
	server := testenv.Postgres.URL(t)
	table := testenv.TableName(t)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, server)
		if err != nil {
			t.Errorf("drop table %s: %v", table, err)
			return
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, `DROP TABLE IF EXISTS `+pgx.Identifier{table}.Sanitize()); err != nil {
			t.Errorf("drop table %s: %v", table, err)
		}
	})
	return testurl.With(t, server, "table", table)
}

// redisURL returns the Redis server's URL under a key prefix of this test's own, whose keys
// are deleted when the test ends.
func redisURL(t *testing.T) string {
	prefix := "leasehold-test:" + testenv.TableName(t) + ":"
	raw := testurl.With(t, testenv.Redis.URL(t), "prefix", prefix)
	t.Cleanup(func() {
		ctx := context.Background()
		s, err := redis.Open(ctx, raw)
		if err != nil {
			t.Errorf("clean up %s*: %v", prefix, err)
			return
		}
		defer store.Close(s)
		iter := s.Client().Scan(ctx, 0, prefix+"*", 1000).Iterator()
		for iter.Next(ctx) {
			s.Client().Del(ctx, iter.Val())
		}
		if err := iter.Err(); err != nil {
			t.Errorf("clean up %s*: %v", prefix, err)
		}
	})
	return raw
}

// message is a line of a worker, or its exit.
type message struct {
	worker string
	line   string
	exited bool
}

// fleetDriver runs worker processes and keeps what their lines say.
type fleetDriver struct {
	t       *testing.T
	url     string
	mode    string
	log     string
	inbox   *proctest.Inbox[message]
	procs   map[string]*proctest.Proc
	exited  map[string]bool
	ready   map[string]bool
	leader  string // elector: from the last lead line, until its unlead line
	runs    []runLine
	started int
}

// fleet runs three gocron schedulers in separate processes over url, each with a job every
// second distributed by mode ("elector" or "locker"), then SIGKILLs the replica that leads
// (elector) or that holds the job's key, having just run a tick (locker), and checks that no
// tick ran twice and that the next ticks ran elsewhere within the bound.
func fleet(t *testing.T, url, mode string) {
	if testing.Short() {
		t.Skip("starts processes and runs for seconds")
	}
	if runtime.GOOS == "windows" {
		t.Skip("SIGKILLs worker processes")
	}
	d := &fleetDriver{
		t: t, url: url, mode: mode,
		log:    filepath.Join(t.TempDir(), "leadership.log"),
		inbox:  proctest.NewInbox[message](),
		procs:  map[string]*proctest.Proc{},
		exited: map[string]bool{},
		ready:  map[string]bool{},
	}
	t.Cleanup(func() {
		for _, p := range d.procs {
			p.Kill()
		}
		for _, p := range d.procs {
			<-p.Done()
		}
	})
	for range 3 {
		d.start()
	}
	const before, after = 6, 5
	d.wait(fmt.Sprintf("%d runs", before), func() bool { return len(d.runs) >= before })

	// The victim: the leader, or the replica whose run just took the key (it keeps it for
	// Hold, so the next tick finds it held by a dead process).
	var victim string
	if mode == "elector" {
		d.wait("a leader", func() bool { return d.leader != "" })
		victim = d.leader
	} else {
		n := len(d.runs)
		d.wait("a run", func() bool { return len(d.runs) > n })
		victim = d.runs[len(d.runs)-1].instance
	}
	lastTick := d.lastTick()
	killAt := proctest.Now()
	if err := d.procs[victim].Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	d.wait(victim+" exited", func() bool { return d.exited[victim] })
	// The first run elsewhere after the kill.
	var first runLine
	d.wait("a run on another replica", func() bool {
		for _, r := range d.runs {
			if r.instance != victim && r.started > killAt {
				first = r
				return true
			}
		}
		return false
	})
	took := time.Duration(first.started - killAt)
	n := len(d.runs)
	d.wait(fmt.Sprintf("%d runs after the takeover", after), func() bool { return len(d.runs) >= n+after })
	for id, p := range d.procs {
		if !d.exited[id] {
			if err := p.Signal(syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
		}
	}
	d.wait("every worker's exit", func() bool { return len(d.exited) == len(d.procs) })
	for id, p := range d.procs {
		if id != victim {
			if err := p.Wait(); err != nil {
				t.Errorf("worker %s: %v%s", id, err, p.StderrTail(2000))
			}
		}
	}

	// Count the runs of each tick.
	count := map[int64][]string{}
	var lo, hi int64
	for i, r := range d.runs {
		if r.fired < 0 || r.fired > period/4 {
			t.Errorf("run of %s by %s: gocron asked %v after the tick, not as it fired", r.tick.UTC().Format("15:04:05.000"), r.instance, r.fired)
		}
		s := r.tick.Unix()
		count[s] = append(count[s], r.instance)
		if i == 0 || s < lo {
			lo = s
		}
		if s > hi {
			hi = s
		}
	}
	var dups, missed []string
	for s := lo; s <= hi; s++ {
		switch c := count[s]; {
		case len(c) > 1:
			dups = append(dups, fmt.Sprintf("%s by %v", time.Unix(s, 0).UTC().Format("15:04:05"), c))
		case len(c) == 0:
			missed = append(missed, time.Unix(s, 0).UTC().Format("15:04:05"))
		}
	}
	by := map[string]int{}
	for _, r := range d.runs {
		by[r.instance]++
	}
	t.Logf("%s: %d ticks from %s to %s, %d runs %v, %d duplicates, %d missed %v",
		mode, hi-lo+1, time.Unix(lo, 0).UTC().Format("15:04:05"), time.Unix(hi, 0).UTC().Format("15:04:05"),
		len(d.runs), by, len(dups), len(missed), missed)
	t.Logf("%s: SIGKILL %s after its tick %s; first run elsewhere: %s, tick %s (started %v after it), %v after the kill",
		mode, victim, time.Unix(lastTick, 0).UTC().Format("15:04:05"), first.instance,
		first.tick.UTC().Format("15:04:05"), first.delay.Round(time.Millisecond), took.Round(time.Millisecond))
	if len(dups) > 0 {
		t.Errorf("ticks run more than once: %s", strings.Join(dups, "; "))
	}
	// The bound. Elector: the crashed leader's lease is taken within L + R of its last
	// renewal (E6), and the job runs at the next tick. Locker: a Lock that read the crashed
	// holder's record at the next tick, within a period, takes the key L later and skips
	// that tick (ErrLate); the job runs at the tick after.
	if bound := 2*period + fleetL + fleetR + slack; took > bound {
		t.Errorf("first run elsewhere %v after the kill, want within %v", took, bound)
	}
}

// start starts a worker and waits for its ready line.
func (d *fleetDriver) start() {
	d.t.Helper()
	d.started++
	id := fmt.Sprintf("w%d", d.started)
	p, err := proctest.Start(proctest.Spec{
		Config: proctest.Config{ID: id, URL: d.url, Lease: "gocron", LeaseDuration: fleetL, RenewInterval: fleetR, Log: d.log},
		Path:   os.Args[0],
		Args:   []string{"-test.run=^$"},
		Env:    []string{envMode + "=" + d.mode, envHold + "=" + fleetHold.String()},
		Line:   func(line string) { d.inbox.Put(message{worker: id, line: line}) },
		Exit:   func(error) { d.inbox.Put(message{worker: id, exited: true}) },
	})
	if err != nil {
		d.t.Fatal(err)
	}
	d.procs[id] = p
	d.wait("worker "+id+" ready", func() bool { return d.ready[id] })
}

// wait takes messages until cond holds, failing the test after a minute or when a worker
// exits unasked.
func (d *fleetDriver) wait(what string, cond func() bool) {
	d.t.Helper()
	timeout := time.NewTimer(time.Minute)
	defer timeout.Stop()
	for !cond() {
		m, ok := d.inbox.Take()
		if !ok {
			select {
			case <-d.inbox.Notify():
			case <-timeout.C:
				d.t.Fatalf("waiting for %s: no event for a minute%s", what, d.stderr())
			}
			continue
		}
		d.observe(m)
	}
}

func (d *fleetDriver) observe(m message) {
	d.t.Helper()
	if m.exited {
		d.exited[m.worker] = true
		return
	}
	if r, ok, err := parseRunLine(m.line); ok {
		if err != nil {
			d.t.Fatal(err)
		}
		d.runs = append(d.runs, r)
		return
	}
	l, err := proctest.ParseLine(m.line)
	if err != nil {
		d.t.Fatalf("worker %s: %v", m.worker, err)
	}
	switch l.Kind {
	case proctest.KindReady:
		d.ready[m.worker] = true
	case proctest.KindLead:
		d.leader = m.worker
	case proctest.KindUnlead:
		if d.leader == m.worker {
			d.leader = ""
		}
	}
}

// lastTick returns the latest tick run so far, in Unix seconds.
func (d *fleetDriver) lastTick() int64 {
	ticks := make([]int64, 0, len(d.runs))
	for _, r := range d.runs {
		ticks = append(ticks, r.tick.Unix())
	}
	sort.Slice(ticks, func(i, j int) bool { return ticks[i] < ticks[j] })
	return ticks[len(ticks)-1]
}

func (d *fleetDriver) stderr() string {
	var b strings.Builder
	for _, p := range d.procs {
		b.WriteString(p.StderrTail(2000))
	}
	return b.String()
}
