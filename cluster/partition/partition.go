// Package partition is a partitioned election over the engine of package cluster: each of K
// partitions is owned by at most one instance at a time, with a term of its own, and the live
// members share them evenly (D1–D10 in docs/design.md).
//
// Each member holds one lease of its own, its member lease, elected by a cluster.Elector (E1–E12
// hold for it), and owns a partition while the partition's record names that member lease's
// current term and the member lease holds. The Lock must keep a roster of the members
// (cluster.Roster): the store Lock does, and so does the Kubernetes Lock.
package partition

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/leasehold/leasehold/cluster"
	"github.com/leasehold/leasehold/internal/callbacks"
	"github.com/leasehold/leasehold/internal/leaseconf"
	"github.com/leasehold/leasehold/internal/recoverlock"
)

// Config configures a partitioned election: K partitions, each a record of its own
// (named as holders.SlotName names slot p of K), spread over the live members (D1–D8), each
// member holding its partitions on one lease of its own (D10).
type Config struct {
	Lock          cluster.Lock // must be a cluster.Roster too (the store Lock is)
	LeaseName     string
	Partitions    int // K, at least 1
	LeaseDuration time.Duration
	RenewInterval time.Duration
	InstanceID    string
	// MaxMoves is how many partitions a member hands over per R at most (D4); default 1.
	MaxMoves int
	Logger   *slog.Logger
	// Observer receives, one call at a time, the events of this member's lease (Event.Lease
	// its name), and for each partition (Event.Lease the partition's record name, Event.Term
	// its term): BecameLeader when this instance comes to own it, AttemptSucceeded for each
	// successful attempt of the member lease while it owns it (the renewal that renews it,
	// which sets its deadline, E5), and StoppedLeading when that ownership ends.
	Observer func(cluster.Event)
}

// Partitions is a partitioned election: each of K partitions is owned by at most one instance
// at a time, with a term of its own, and the live members share them evenly (D6).
//
// Each member holds one lease of its own, its member lease, elected by a cluster.Elector
// (E1–E12 hold for it), and owns a partition while the partition's record names that member
// lease's current term and the member lease holds (D10): a member renews one record per R
// however many partitions it owns, and a partition's record is written only when its owner
// changes. A plan, recomputed every R and whenever a record it depends on changes, decides
// which partitions this instance claims and which it hands over.
type Partitions struct {
	name     string
	id       string
	k        int
	l, r     time.Duration
	maxMoves int
	log      *slog.Logger
	lock     cluster.Lock // the configured Lock, its panics made errors (E8)
	raw      cluster.Lock // the configured Lock, for the fences' Electors (which wrap it themselves)
	session  string       // the member lease's session (E12), written in the claims (D10)
	watcher  cluster.Watcher
	roster   cluster.Roster
	observer func(cluster.Event)
	self     *cluster.Elector // this member's lease (D10)
	names    []string         // by partition: its record's name
	cbs      []*callbacks.Runner
	own      []atomic.Pointer[ownership] // by partition: set while claimed under an epoch
	poke     chan struct{}               // asks the planner for a plan at once
	troubles troubles                    // the watches' failures, logged at most once per R

	mu          sync.Mutex // guards the fields below, and orders ownership changes
	started     bool
	stopped     bool
	cancel      context.CancelFunc
	epoch       uint64                   // the member lease's current term, 0 when not leading
	ended       map[uint64]chan struct{} // by epoch: closed once its partitions have been ended
	view        []partView               // by partition: its record as last seen
	members     map[string]*memberView   // every other member seen, by ID
	handing     map[int]bool             // handovers under way
	unsure      map[int]uint64           // claims whose answer was lost, by the epoch they were sent in
	moves       []time.Time              // when the handovers of the last R began (D4)
	lastAttempt cluster.Event            // the member lease's last successful attempt
	base        context.Context          // Start's context without its cancellation: the callbacks'
	emitting    sync.Mutex               // one Observer call at a time

	done    chan struct{} // closed once every goroutine of the election has returned
	planned chan struct{} // closed once the planner has returned
	wg      sync.WaitGroup
}

// ownership is this instance's ownership of one partition, under one epoch of its member lease.
type ownership struct {
	epoch  uint64    // the member lease's term it was claimed under
	term   uint64    // the partition's term
	rev    string    // the record's revision as claimed
	at     time.Time // its RenewedAt
	cancel context.CancelFunc
}

// RosterName returns the name of the roster of the partitioned election name (D5): where to
// read its members (cluster.Roster.Members) from a tool that does not run the election.
func RosterName(name string) string { return leaseconf.LeaseName(name) + ".members" }

// New checks cfg and returns a partitioned election, not started.
func New(cfg Config) (*Partitions, error) {
	name := leaseconf.LeaseName(cfg.LeaseName)
	switch {
	case cfg.Lock == nil:
		return nil, errors.New("partition: Config.Lock is nil")
	case cfg.Partitions < 1:
		return nil, fmt.Errorf("partition: lease %q: Config.Partitions is %d, want at least 1", name, cfg.Partitions)
	case cfg.MaxMoves < 0:
		return nil, fmt.Errorf("partition: lease %q: Config.MaxMoves is %d, want 0 (the default, 1) or more", name, cfg.MaxMoves)
	}
	roster, ok := cfg.Lock.(cluster.Roster)
	if !ok {
		return nil, fmt.Errorf("partition: lease %q: partitions need a Lock that keeps a roster (a store's); %T does not", name, cfg.Lock)
	}
	l, r, err := leaseconf.Timing(cfg.LeaseDuration, cfg.RenewInterval, configNames)
	if err != nil {
		return nil, fmt.Errorf("partition: lease %q: %w", name, err)
	}
	if cfg.InstanceID == "" {
		cfg.InstanceID = cluster.DefaultInstanceID()
	}
	if cfg.MaxMoves == 0 {
		cfg.MaxMoves = 1
	}
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	p := &Partitions{
		name: name, id: cfg.InstanceID, k: cfg.Partitions, l: l, r: r, maxMoves: cfg.MaxMoves,
		log: log.With("lease", name, "instance", cfg.InstanceID), lock: recoverlock.Lock[cluster.Record]{Store: cfg.Lock, Pkg: "partition"}, raw: cfg.Lock, roster: roster,
		session:  newSession(),
		observer: cfg.Observer, poke: make(chan struct{}, 1),
		ended: make(map[uint64]chan struct{}), members: make(map[string]*memberView), handing: make(map[int]bool),
		done: make(chan struct{}), planned: make(chan struct{}),
		own: make([]atomic.Pointer[ownership], cfg.Partitions), view: make([]partView, cfg.Partitions),
	}
	p.watcher, _ = cfg.Lock.(cluster.Watcher)
	self, err := cluster.NewElector(cluster.ElectorConfig{
		Lock: cfg.Lock, LeaseName: memberLeaseName(name, cfg.InstanceID), LeaseDuration: l, RenewInterval: r,
		InstanceID: cfg.InstanceID, Session: p.session, Logger: cfg.Logger, Observer: p.memberEvent,
	})
	if err != nil {
		return nil, fmt.Errorf("partition: lease %q: %w", name, err)
	}
	p.self = self
	for i := range cfg.Partitions {
		p.names = append(p.names, leaseconf.SlotName(cfg.Lock, name, i, cfg.Partitions))
		p.cbs = append(p.cbs, callbacks.New(p.log.With("partition", i), func() bool { return p.owns(i) }))
	}
	// E7 for every partition: the member lease is released only once the callbacks of the
	// partitions it held have returned, so that no next owner starts beside them.
	self.WhenLeader(p.epochLife, nil)
	return p, nil
}

// InstanceID returns this instance's identity.
func (p *Partitions) InstanceID() string { return p.id }

// owns reports whether this instance owns partition i now: claimed under the member lease's
// current term, which has not reached its deadline (W7 by the clock, as IsLeader).
func (p *Partitions) owns(i int) bool {
	o := p.own[i].Load()
	if o == nil {
		return false
	}
	term, ok := p.self.Term()
	return ok && term == o.epoch
}

// Owned returns the partitions this instance owns now, in order.
func (p *Partitions) Owned() []int {
	var out []int
	term, ok := p.self.Term()
	if !ok {
		return nil
	}
	for i := range p.own {
		if o := p.own[i].Load(); o != nil && o.epoch == term {
			out = append(out, i)
		}
	}
	return out
}

// WhenOwner registers fn, run each time this instance comes to own a partition with that
// partition's number (its context carries the partition's term, TermOf, and is cancelled when
// that ownership ends), and deregistered, run once it has ended. The guarantees of
// cluster.Cluster.WhenLeader hold per partition; the calls for different partitions run concurrently.
func (p *Partitions) WhenOwner(fn func(ctx context.Context, partition int) error, deregistered func(partition int)) (remove func()) {
	removes := make([]func(), 0, p.k)
	for i, c := range p.cbs {
		var de func()
		if deregistered != nil {
			de = func() { deregistered(i) }
		}
		removes = append(removes, c.Add(func(ctx context.Context) error {
			if fn == nil {
				return nil
			}
			return fn(ctx, i)
		}, de))
	}
	return func() {
		for _, r := range removes {
			r()
		}
	}
}

// Start joins the roster and starts the member lease's election, the watches of the
// partitions' records and the planner.
func (p *Partitions) Start(ctx context.Context) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case p.stopped:
		return fmt.Errorf("partition: lease %q: Start after Stop", p.name)
	case p.started:
		return fmt.Errorf("partition: lease %q: partitions started twice", p.name)
	}
	p.started = true
	pctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	p.cancel = cancel
	p.base = context.WithoutCancel(ctx)
	err := p.self.Start(ctx)
	p.watchRecords(pctx)
	go func() {
		defer close(p.planned)
		p.plan(pctx)
	}()
	go func() {
		<-p.planned
		<-p.self.Done()
		p.wg.Wait()
		close(p.done)
	}()
	context.AfterFunc(ctx, cancel) // the partitions' election ends with ctx too
	return err
}

// Stop ends the planner, then the member lease's leadership: every partition's ownership ends,
// and the member lease is released once their callbacks have returned (E7), which frees every
// partition this instance owned at once; then it leaves the roster.
func (p *Partitions) Stop(ctx context.Context) error {
	p.mu.Lock()
	started, stopped, cancel := p.started, p.stopped, p.cancel
	p.stopped = true
	p.mu.Unlock()
	if !started {
		if !stopped {
			_ = p.self.Stop(ctx)
			close(p.done)
		}
		return nil
	}
	cancel()
	select {
	case <-p.planned:
	case <-ctx.Done():
		return fmt.Errorf("partition: lease %q: stop: %w", p.name, ctx.Err())
	}
	var errs []error
	if err := p.self.Stop(ctx); err != nil {
		errs = append(errs, err)
	}
	p.stopFences(ctx)
	if err := p.roster.Leave(ctx, RosterName(p.name), p.id); err != nil {
		errs = append(errs, fmt.Errorf("partition: lease %q: leave the roster: %w", p.name, err))
	}
	select { // no goroutine outlives Stop: the watches end with the planner's context
	case <-p.done:
	case <-ctx.Done():
		errs = append(errs, fmt.Errorf("partition: lease %q: stop: %w", p.name, ctx.Err()))
	}
	return errors.Join(errs...)
}

// Done returns a channel closed once every goroutine of the election has returned.
func (p *Partitions) Done() <-chan struct{} { return p.done }

// kick asks the planner for a plan at once.
func (p *Partitions) kick() {
	select {
	case p.poke <- struct{}{}:
	default:
	}
}

// emit sends ev about partition i to the Observer.
func (p *Partitions) emit(i int, ev cluster.Event) {
	if p.observer == nil {
		return
	}
	ev.Lease, ev.Instance = p.names[i], p.id
	if ev.Time.IsZero() {
		ev.Time = time.Now()
	}
	p.emitting.Lock()
	defer p.emitting.Unlock()
	p.observer(ev)
}

// configNames are Config's names of L and R, for the errors of leaseconf.Timing.
var configNames = leaseconf.Names{LeaseDuration: "Config.LeaseDuration", RenewInterval: "Config.RenewInterval"}

// newSession returns a random token of 16 hex digits: the member lease's session (E12), which
// this instance also writes, with the member lease's term, in the partitions' records it claims.
func newSession() string {
	var b [8]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	return hex.EncodeToString(b[:])
}
