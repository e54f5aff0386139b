package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/leasehold/leasehold/cluster"
	"github.com/leasehold/leasehold/cluster/partition"
	"github.com/leasehold/leasehold/internal/proctest"
	"github.com/leasehold/leasehold/store"
)

// partitionsResult is what a partitions worker reports: N members of one partitioned election
// of K partitions in one process, each member with a store connection of its own as a replica
// would have, measured from the start to an even spread, over a steady window, across a join
// and across a crash; then the baseline, the same K leases as N independent elections each.
type partitionsResult struct {
	Partitions int           `json:"partitions"`
	Members    int           `json:"members"`
	MaxMoves   int           `json:"max_moves"`
	Spread     time.Duration `json:"spread"` // from the first Start to the first even spread (every partition owned)
	// SpreadReached is false when the wait for the first even spread gave up.
	SpreadReached bool `json:"spread_reached"`
	// SpreadUneven says how the ownership stood when that wait gave up.
	SpreadUneven string        `json:"spread_uneven,omitempty"`
	Window       time.Duration `json:"window"`
	// PerMemberPerR is the backend requests of a member per R during the window (roster
	// included), SteadyMoves the ownerships that began during it (0 once spread).
	PerMemberPerR float64        `json:"per_member_per_r"`
	SteadyMoves   int            `json:"steady_moves"`
	CPU           time.Duration  `json:"cpu"` // CPU time of the process (N members) during the window
	RSS           int64          `json:"rss"`
	Join          phaseResult    `json:"join"`
	Crash         phaseResult    `json:"crash"`
	Baseline      baselineResult `json:"baseline"`
	// MembersUp is the time from the first Start to the last of the first N members' first
	// leadership of its member lease; MemberLeasesLost counts the leaderships of member leases
	// that ended while the members ran (a member lease not renewed in time under load, which
	// ends every ownership under it), Stop's excepted.
	MembersUp        time.Duration `json:"members_up"`
	MemberLeasesLost int           `json:"member_leases_lost"`
	// DoubleOwners counts the times two members of this process owned one partition at once,
	// by their leaderships (from BecameLeader to StoppedLeading, the instants IsLeader turned
	// true and false): must be 0.
	DoubleOwners int `json:"double_owners"`
	// CallbacksOverlapped counts the times a member's callback of a partition started while
	// another member's had not yet returned. Beyond those whose leaderships overlapped
	// (DoubleOwners), the old owner's goroutine saw its context end late, which an overloaded
	// process does: the fencing term is what guards a target then.
	CallbacksOverlapped int `json:"callbacks_overlapped"`
}

// leaderships keeps each partition's leaderships, by the members' events.
type leaderships struct {
	mu    sync.Mutex
	spans map[string][]leadership // by lease name
}

type leadership struct {
	member     int
	start, end time.Time // end zero while open
}

func newLeaderships() *leaderships { return &leaderships{spans: map[string][]leadership{}} }

// observe is member m's Observer: it runs on the partition's election goroutine.
func (l *leaderships) observe(m int, ev cluster.Event) {
	switch ev.Kind {
	case cluster.BecameLeader:
		l.mu.Lock()
		l.spans[ev.Lease] = append(l.spans[ev.Lease], leadership{member: m, start: ev.Time})
		l.mu.Unlock()
	case cluster.StoppedLeading:
		l.mu.Lock()
		ss := l.spans[ev.Lease]
		for i := len(ss) - 1; i >= 0; i-- {
			if ss[i].member == m && ss[i].end.IsZero() {
				ss[i].end = ev.Time
				break
			}
		}
		l.mu.Unlock()
	}
}

// memberLeases returns, over the leases whose name holds marker (the member leases), each
// member's first leadership's start and how many leaderships there were in all.
func (l *leaderships) memberLeases(marker string) (first map[int]time.Time, total int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	first = map[int]time.Time{}
	for name, ss := range l.spans {
		if !strings.Contains(name, marker) {
			continue
		}
		for _, s := range ss {
			total++
			if f, ok := first[s.member]; !ok || s.start.Before(f) {
				first[s.member] = s.start
			}
		}
	}
	return first, total
}

// overlaps counts the pairs of leaderships of one partition, by different members, that
// overlapped in time (an open one lasts until now).
func (l *leaderships) overlaps() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := time.Now()
	n := 0
	for _, ss := range l.spans {
		for i, a := range ss {
			for _, b := range ss[i+1:] {
				if a.member != b.member && a.start.Before(endOr(b.end, now)) && b.start.Before(endOr(a.end, now)) {
					n++
				}
			}
		}
	}
	return n
}

func endOr(t, now time.Time) time.Time {
	if t.IsZero() {
		return now
	}
	return t
}

// phaseResult is a join's or a crash's: how long until the spread was even again, the
// partitions that changed owner, and, per partition left without an owner, for how long.
type phaseResult struct {
	EvenAfter time.Duration `json:"even_after"`
	Even      bool          `json:"even"` // false: the wait gave up
	Moved     int           `json:"moved"`
	Ownerless int           `json:"ownerless"` // partitions that had no owner for a while
	GapP50    time.Duration `json:"gap_p50"`
	GapP99    time.Duration `json:"gap_p99"`
	GapMax    time.Duration `json:"gap_max"`
	MinOwned  int           `json:"min_owned"` // at the end of the phase
	MaxOwned  int           `json:"max_owned"`
	// Uneven says how the ownership stood when the wait for an even spread gave up.
	Uneven string `json:"uneven,omitempty"`
}

// baselineResult is the pile-up baseline: N members each running K independent Electors.
type baselineResult struct {
	AllHeldAfter  time.Duration `json:"all_held_after"`
	AllHeld       bool          `json:"all_held"`
	MinOwned      int           `json:"min_owned"`
	MaxOwned      int           `json:"max_owned"`
	PerMemberPerR float64       `json:"per_member_per_r"`
}

// What a partitions worker runs, beside envWindow.
const (
	envPartitions = "LEASEHOLD_BENCH_PARTITIONS" // K
	envMembers    = "LEASEHOLD_BENCH_MEMBERS"    // N
	envMaxMoves   = "LEASEHOLD_BENCH_MAX_MOVES"  // partition.Config.MaxMoves
	kindParts     = "partitions"
)

// memberLock is a member's Lock: it counts the member's requests and, once killed, fails
// every call, as the store would look to a process that crashed (it writes nothing more, its
// records stay as they were).
type memberLock struct {
	cluster.Lock
	n    atomic.Int64
	dead atomic.Bool
}

var (
	_ cluster.Watcher = (*memberLock)(nil)
	_ cluster.Roster  = (*memberLock)(nil)
)

var errKilled = errors.New("bench: member crashed")

func (l *memberLock) call() error {
	if l.dead.Load() {
		return errKilled
	}
	l.n.Add(1)
	return nil
}

func (l *memberLock) Get(ctx context.Context, name string) (cluster.Record, error) {
	if err := l.call(); err != nil {
		return cluster.Record{}, err
	}
	return l.Lock.Get(ctx, name)
}

func (l *memberLock) Create(ctx context.Context, name string, r cluster.Record) (cluster.Record, error) {
	if err := l.call(); err != nil {
		return cluster.Record{}, err
	}
	return l.Lock.Create(ctx, name, r)
}

func (l *memberLock) Update(ctx context.Context, name string, r cluster.Record) (cluster.Record, error) {
	if err := l.call(); err != nil {
		return cluster.Record{}, err
	}
	return l.Lock.Update(ctx, name, r)
}

// Watch forwards the inner watch (counted once, at its start) until the member crashes.
func (l *memberLock) Watch(ctx context.Context, name string, fn func(cluster.Record, error)) error {
	if err := l.call(); err != nil {
		return err
	}
	w, ok := l.Lock.(cluster.Watcher)
	if !ok {
		return fmt.Errorf("bench: %w", cluster.ErrWatchUnsupported)
	}
	return w.Watch(ctx, name, func(r cluster.Record, err error) {
		if !l.dead.Load() {
			fn(r, err)
		}
	})
}

func (l *memberLock) Beat(ctx context.Context, name string, m cluster.Member) error {
	if err := l.call(); err != nil {
		return err
	}
	return l.Lock.(cluster.Roster).Beat(ctx, name, m)
}

func (l *memberLock) Leave(ctx context.Context, name, member string) error {
	if err := l.call(); err != nil {
		return err
	}
	return l.Lock.(cluster.Roster).Leave(ctx, name, member)
}

func (l *memberLock) Members(ctx context.Context, name string) ([]cluster.Member, error) {
	if err := l.call(); err != nil {
		return nil, err
	}
	return l.Lock.(cluster.Roster).Members(ctx, name)
}

// ownership follows who owns each partition in this process, from the members' callbacks.
type ownership struct {
	k  int
	mu sync.Mutex
	// owners[p] are the members whose callback of p runs; count[m] how many m owns.
	owners    [][]int
	count     map[int]int
	freeSince []time.Time // when p last lost its owner (zero: owned, or never owned)
	gaps      []time.Duration
	moved     int
	double    int
	changed   chan struct{} // signalled (without blocking) at each change
}

func newOwnership(k int) *ownership {
	return &ownership{k: k, owners: make([][]int, k), count: map[int]int{}, freeSince: make([]time.Time, k), changed: make(chan struct{}, 1)}
}

func (o *ownership) own(m, p int) {
	o.mu.Lock()
	if len(o.owners[p]) > 0 {
		o.double++
	}
	o.owners[p] = append(o.owners[p], m)
	o.count[m]++
	o.moved++
	if !o.freeSince[p].IsZero() {
		o.gaps = append(o.gaps, time.Since(o.freeSince[p]))
		o.freeSince[p] = time.Time{}
	}
	o.mu.Unlock()
	o.signal()
}

func (o *ownership) unown(m, p int) {
	o.mu.Lock()
	// A forgotten member's (crashed) partitions were counted as free already.
	if i := slices.Index(o.owners[p], m); i >= 0 {
		o.owners[p] = slices.Delete(o.owners[p], i, i+1)
		o.count[m]--
		if len(o.owners[p]) == 0 {
			o.freeSince[p] = time.Now()
		}
	}
	o.mu.Unlock()
	o.signal()
}

// forget drops member m (crashed): its partitions count as without an owner from now, though
// its callbacks end only at its deadline.
func (o *ownership) forget(m int) {
	o.mu.Lock()
	now := time.Now()
	for p, ms := range o.owners {
		if i := slices.Index(ms, m); i >= 0 {
			o.owners[p] = slices.Delete(ms, i, i+1)
			if len(o.owners[p]) == 0 {
				o.freeSince[p] = now
			}
		}
	}
	delete(o.count, m)
	o.mu.Unlock()
	o.signal()
}

func (o *ownership) signal() {
	select {
	case o.changed <- struct{}{}:
	default:
	}
}

// even says whether every partition has one owner and the members' counts, over members,
// differ by at most one; it returns the smallest and largest counts.
func (o *ownership) even(members []int) (ok bool, lo, hi int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	owned := 0
	for _, ms := range o.owners {
		if len(ms) == 1 {
			owned++
		}
	}
	lo, hi = o.k, 0
	for _, m := range members {
		lo, hi = min(lo, o.count[m]), max(hi, o.count[m])
	}
	return owned == o.k && hi-lo <= 1, lo, hi
}

// describe says how the ownership stands: the counts of members, the partitions with no
// owner and with more than one (callbacks still running), for a phase that did not even out.
func (o *ownership) describe(members []int) string {
	o.mu.Lock()
	defer o.mu.Unlock()
	none, several := 0, 0
	for _, ms := range o.owners {
		switch {
		case len(ms) == 0:
			none++
		case len(ms) > 1:
			several++
		}
	}
	counts := make([]string, 0, len(members))
	for _, m := range members {
		counts = append(counts, fmt.Sprintf("m%d:%d", m, o.count[m]))
	}
	return fmt.Sprintf("%d without an owner, %d with callbacks of two members, counts %s", none, several, strings.Join(counts, " "))
}

// phase resets the counters of a phase (moves, gaps) and returns what they held.
func (o *ownership) phase() (moved int, gaps []time.Duration) {
	o.mu.Lock()
	defer o.mu.Unlock()
	moved, gaps = o.moved, o.gaps
	o.moved, o.gaps = 0, nil
	return moved, gaps
}

// waitEven waits until even(members) holds or wait passes, and says which and when.
func (o *ownership) waitEven(members []int, wait time.Duration) (bool, time.Duration) {
	start := time.Now()
	deadline := time.NewTimer(wait)
	defer deadline.Stop()
	for {
		if ok, _, _ := o.even(members); ok {
			return true, time.Since(start)
		}
		select {
		case <-o.changed:
		case <-deadline.C:
			return false, time.Since(start)
		}
	}
}

// partsMember is one member of the partitioned election.
type partsMember struct {
	i     int
	lock  *memberLock
	close func()
	p     *partition.Partitions
}

// runPartitions is the partitions worker (see partitionsResult). It writes its result on
// stdout, prefixed as a many worker's.
func runPartitions(w *proctest.Worker) int {
	k, err1 := strconv.Atoi(os.Getenv(envPartitions))
	n, err2 := strconv.Atoi(os.Getenv(envMembers))
	window, err3 := time.ParseDuration(os.Getenv(envWindow))
	moves, err4 := strconv.Atoi(os.Getenv(envMaxMoves))
	if err := errors.Join(err1, err2, err3, err4); err != nil || k < 1 || n < 2 || moves < 1 {
		return w.Fail("%s=%q %s=%q %s=%q %s=%q: want K ≥ 1, N ≥ 2, a window and M ≥ 1 (%v)", envPartitions, os.Getenv(envPartitions),
			envMembers, os.Getenv(envMembers), envWindow, os.Getenv(envWindow), envMaxMoves, os.Getenv(envMaxMoves), err)
	}
	ctx := context.Background()
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))
	own := newOwnership(k)
	leads := newLeaderships()
	res := partitionsResult{Partitions: k, Members: n, MaxMoves: moves, Window: window}
	wait := max(60*time.Second, 20*w.LeaseDuration)

	var members []*partsMember
	defer func() {
		for _, m := range members {
			m.close()
		}
	}()
	start := func(i int) (*partsMember, error) {
		s, err := store.Open(ctx, w.URL)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", proctest.EnvURL, err)
		}
		m := &partsMember{i: i, lock: &memberLock{Lock: cluster.NewStoreLock(s)}, close: func() { _ = store.Close(s) }}
		members = append(members, m)
		m.p, err = partition.New(partition.Config{
			Lock: m.lock, LeaseName: w.Lease, Partitions: k, LeaseDuration: w.LeaseDuration, RenewInterval: w.RenewInterval,
			InstanceID: fmt.Sprintf("%s-m%d", w.ID, i), Logger: logger, MaxMoves: moves,
			Observer: func(ev cluster.Event) { leads.observe(i, ev) },
		})
		if err != nil {
			return nil, err
		}
		m.p.WhenOwner(func(ctx context.Context, p int) error {
			own.own(i, p)
			<-ctx.Done()
			own.unown(i, p)
			return nil
		}, nil)
		return m, m.p.Start(ctx)
	}
	ids := func() []int {
		var out []int
		for _, m := range members {
			if !m.lock.dead.Load() {
				out = append(out, m.i)
			}
		}
		return out
	}
	phase := func(r *phaseResult) {
		r.Even, r.EvenAfter = own.waitEven(ids(), wait)
		moved, gaps := own.phase()
		slices.Sort(gaps)
		r.Moved, r.Ownerless = moved, len(gaps)
		r.GapP50, r.GapP99 = quantile(gaps, 0.50), quantile(gaps, 0.99)
		if len(gaps) > 0 {
			r.GapMax = gaps[len(gaps)-1]
		}
		_, r.MinOwned, r.MaxOwned = own.even(ids())
		if !r.Even {
			r.Uneven = own.describe(ids())
		}
	}

	t0 := time.Now()
	for i := range n {
		if _, err := start(i); err != nil {
			return w.Fail("member %d: %v", i, err)
		}
	}
	res.SpreadReached, res.Spread = own.waitEven(ids(), wait)
	if !res.SpreadReached {
		res.SpreadUneven = own.describe(ids())
	}
	res.Spread = time.Since(t0)
	own.phase()
	if first, _ := leads.memberLeases(".member-"); len(first) == n {
		for _, t := range first {
			res.MembersUp = max(res.MembersUp, t.Sub(t0))
		}
	}

	// The steady window: requests per member per R, and no move.
	r0 := make([]int64, len(members))
	for i, m := range members {
		r0[i] = m.lock.n.Load()
	}
	c0 := cpuTime()
	time.Sleep(window) // the measurement window: the elections run on their own
	res.CPU, res.RSS = cpuTime()-c0, rssBytes()
	var reqs int64
	for i, m := range members {
		reqs += m.lock.n.Load() - r0[i]
	}
	res.PerMemberPerR = float64(reqs) / float64(n) / (float64(window) / float64(w.RenewInterval))
	res.SteadyMoves, _ = own.phase()

	// A join: one more member.
	if _, err := start(n); err != nil {
		return w.Fail("member %d: %v", n, err)
	}
	phase(&res.Join)

	// A crash: the first member stops answering, its records left as they were.
	crashed := members[0]
	crashed.lock.dead.Store(true)
	own.forget(crashed.i)
	phase(&res.Crash)
	_, epochs := leads.memberLeases(".member-")
	res.MemberLeasesLost = epochs - len(members)

	stopCtx, cancel := context.WithTimeout(ctx, max(w.LeaseDuration, 30*time.Second))
	defer cancel()
	var wg sync.WaitGroup
	for _, m := range members {
		wg.Go(func() { _ = m.p.Stop(stopCtx) })
	}
	wg.Wait()
	res.DoubleOwners = leads.overlaps()
	res.CallbacksOverlapped = own.double

	res.Baseline = partitionsBaseline(w, k, n, wait, logger)
	b, err := json.Marshal(res)
	if err != nil {
		return w.Fail("%v", err)
	}
	proctest.WriteStdout(manyPrefix + string(b))
	return proctest.ExitOK
}

// partitionsBaseline runs the pile-up baseline: n members, each with a store connection of its
// own, each running k Electors on the k lease names (another prefix than the partitions'),
// until every lease is held; it reports how the leases spread and the requests per member per
// R over the last R.
func partitionsBaseline(w *proctest.Worker, k, n int, wait time.Duration, logger *slog.Logger) baselineResult {
	ctx := context.Background()
	var (
		mu    sync.Mutex
		count = map[int]int{}
		held  int
		all   = make(chan struct{})
		once  sync.Once
		res   baselineResult
	)
	type member struct {
		lock  *memberLock
		close func()
		els   []*cluster.Elector
	}
	var ms []*member
	defer func() {
		stopCtx, cancel := context.WithTimeout(ctx, max(w.LeaseDuration, 30*time.Second))
		defer cancel()
		var wg sync.WaitGroup
		for _, m := range ms {
			for _, e := range m.els {
				wg.Go(func() { _ = e.Stop(stopCtx) })
			}
		}
		wg.Wait()
		for _, m := range ms {
			m.close()
		}
	}()
	start := time.Now()
	for i := range n {
		s, err := store.Open(ctx, w.URL)
		if err != nil {
			fmt.Fprintf(os.Stderr, "bench: baseline: %v\n", err)
			return res
		}
		m := &member{lock: &memberLock{Lock: cluster.NewStoreLock(s)}, close: func() { _ = store.Close(s) }}
		ms = append(ms, m)
		for p := range k {
			e, err := cluster.NewElector(cluster.ElectorConfig{
				Lock: m.lock, LeaseName: fmt.Sprintf("%s-solo-%d", w.Lease, p), LeaseDuration: w.LeaseDuration, RenewInterval: w.RenewInterval,
				InstanceID: fmt.Sprintf("%s-b%d", w.ID, i), Logger: logger,
				Observer: func(ev cluster.Event) {
					switch ev.Kind {
					case cluster.BecameLeader:
						mu.Lock()
						count[i]++
						held++
						if held == k {
							once.Do(func() { close(all) })
						}
						mu.Unlock()
					case cluster.StoppedLeading:
						mu.Lock()
						count[i]--
						held--
						mu.Unlock()
					}
				},
			})
			if err != nil {
				fmt.Fprintf(os.Stderr, "bench: baseline: %v\n", err)
				return res
			}
			m.els = append(m.els, e)
			if err := e.Start(ctx); err != nil {
				fmt.Fprintf(os.Stderr, "bench: baseline: %v\n", err)
				return res
			}
		}
	}
	select {
	case <-all:
		res.AllHeld = true
	case <-time.After(wait):
	}
	res.AllHeldAfter = time.Since(start)
	// A few R more: a follower that started late settles into following.
	time.Sleep(2 * w.RenewInterval)
	r0 := make([]int64, len(ms))
	for i, m := range ms {
		r0[i] = m.lock.n.Load()
	}
	time.Sleep(w.RenewInterval * 4)
	var reqs int64
	for i, m := range ms {
		reqs += m.lock.n.Load() - r0[i]
	}
	res.PerMemberPerR = float64(reqs) / float64(n) / 4
	mu.Lock()
	res.MinOwned, res.MaxOwned = k, 0
	for i := range n {
		res.MinOwned, res.MaxOwned = min(res.MinOwned, count[i]), max(res.MaxOwned, count[i])
	}
	mu.Unlock()
	return res
}

// unevenSummary says, for each wait of row that gave up, how the ownership stood then.
func unevenSummary(row partitionsResult) string {
	var parts []string
	for _, u := range []struct{ phase, what string }{
		{"first", row.SpreadUneven}, {"join", row.Join.Uneven}, {"crash", row.Crash.Uneven},
	} {
		if u.what != "" {
			parts = append(parts, u.phase+": "+u.what)
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return "; " + strings.Join(parts, "; ")
}
