package cluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"
)

// PartitionsConfig configures a partitioned election: K partitions, each a lease of its own
// (SlotName(Lock, LeaseName, p, K)), spread over the live members (D1–D8).
type PartitionsConfig struct {
	Lock          Lock // must be a Roster too (the store Lock is)
	LeaseName     string
	Partitions    int // K, at least 1
	LeaseDuration time.Duration
	RenewInterval time.Duration
	InstanceID    string
	// MaxMoves is how many partitions a member hands over per R at most (D4); default 1.
	MaxMoves int
	Logger   *slog.Logger
	// Observer receives the events of every partition's Elector (Event.Lease is the
	// partition's record name), on that Elector's goroutine.
	Observer func(Event)
}

// Partitions is a partitioned election: each of K partitions is owned by at most one instance
// at a time, on a lease of its own with its own term, and the live members share them evenly
// (D6). Each partition runs an Elector of the engine (E1–E12 hold per partition); a plan,
// recomputed every R from the roster (D5) and the owners seen, decides which partitions this
// instance asks for and which it hands over.
type Partitions struct {
	name     string
	id       string
	session  string
	k        int
	l, r     time.Duration
	maxMoves int
	log      *slog.Logger
	lock     Lock
	roster   Roster
	parts    []*Elector
	gate     *partitionGate

	mu      sync.Mutex
	started bool
	stopped bool
	cancel  context.CancelFunc
	done    chan struct{} // closed once the planner and every partition's election have ended
	planned chan struct{} // closed once the planner has returned

	// live is the members of the planner's last plan (written by the planner, read by Stop
	// once the planner has returned).
	live []string
}

// RosterName returns the name of the roster of the partitioned election name (D5): where to
// read its members (Roster.Members) from a tool that does not run the election.
func RosterName(name string) string { return ResolveLeaseName(name) + ".members" }

// NewPartitions checks cfg and returns a partitioned election, not started.
func NewPartitions(cfg PartitionsConfig) (*Partitions, error) {
	name := ResolveLeaseName(cfg.LeaseName)
	switch {
	case cfg.Lock == nil:
		return nil, errors.New("cluster: PartitionsConfig.Lock is nil")
	case cfg.Partitions < 1:
		return nil, fmt.Errorf("cluster: lease %q: PartitionsConfig.Partitions is %d, want at least 1", name, cfg.Partitions)
	case cfg.MaxMoves < 0:
		return nil, fmt.Errorf("cluster: lease %q: PartitionsConfig.MaxMoves is %d, want 0 (the default, 1) or more", name, cfg.MaxMoves)
	}
	roster, ok := cfg.Lock.(Roster)
	if !ok {
		return nil, fmt.Errorf("cluster: lease %q: partitions need a Lock that keeps a roster (a store's); %T does not", name, cfg.Lock)
	}
	if cfg.InstanceID == "" {
		cfg.InstanceID = DefaultInstanceID()
	}
	if cfg.MaxMoves == 0 {
		cfg.MaxMoves = 1
	}
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	p := &Partitions{
		name: name, id: cfg.InstanceID, session: newSession(), k: cfg.Partitions, maxMoves: cfg.MaxMoves,
		log: log.With("lease", name, "instance", cfg.InstanceID), lock: cfg.Lock, roster: roster,
		done: make(chan struct{}), planned: make(chan struct{}),
	}
	p.gate = &partitionGate{owner: make([]string, cfg.Partitions), heir: make([]string, cfg.Partitions), id: cfg.InstanceID}
	for i := range cfg.Partitions {
		e, err := NewElector(ElectorConfig{
			Lock: cfg.Lock, LeaseName: SlotName(cfg.Lock, name, i, cfg.Partitions), LeaseDuration: cfg.LeaseDuration,
			RenewInterval: cfg.RenewInterval, InstanceID: cfg.InstanceID, Logger: cfg.Logger,
			Observer: Observers(func(ev Event) { p.gate.observe(i, ev) }, cfg.Observer),
		})
		if err != nil {
			return nil, err
		}
		e.slot, e.claim = i, p.gate
		p.parts = append(p.parts, e)
	}
	p.l, p.r = p.parts[0].l, p.parts[0].r
	return p, nil
}

// InstanceID returns this instance's identity.
func (p *Partitions) InstanceID() string { return p.id }

// Owned returns the partitions this instance owns now, in order.
func (p *Partitions) Owned() []int {
	var out []int
	for i, e := range p.parts {
		if e.IsLeader() {
			out = append(out, i)
		}
	}
	return out
}

// WhenOwner registers fn, run each time this instance comes to own a partition with that
// partition's number (its context carries the partition's term, TermOf, and is cancelled when
// that ownership ends), and deregistered, run once it has ended. The guarantees of
// Cluster.WhenLeader hold per partition; the calls for different partitions run concurrently.
func (p *Partitions) WhenOwner(fn func(ctx context.Context, partition int) error, deregistered func(partition int)) (remove func()) {
	removes := make([]func(), 0, len(p.parts))
	for i, e := range p.parts {
		var de func()
		if deregistered != nil {
			de = func() { deregistered(i) }
		}
		removes = append(removes, e.WhenLeader(func(ctx context.Context) error {
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

// Start joins the roster and starts every partition's election and the planner.
func (p *Partitions) Start(ctx context.Context) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case p.stopped:
		return fmt.Errorf("cluster: lease %q: partitions: Start after Stop", p.name)
	case p.started:
		return fmt.Errorf("cluster: lease %q: partitions started twice", p.name)
	}
	p.started = true
	pctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	p.cancel = cancel
	var errs []error
	for _, e := range p.parts {
		errs = append(errs, e.Start(ctx))
	}
	go func() {
		defer close(p.planned)
		p.plan(pctx)
	}()
	go func() {
		<-p.planned
		for _, e := range p.parts {
			<-e.Done()
		}
		close(p.done)
	}()
	context.AfterFunc(ctx, cancel) // the partitions' elections end with ctx too
	return errors.Join(errs...)
}

// Stop ends the planner, then every partition's election at once (each releases its partition
// once its callbacks have returned, E7), then leaves the roster.
func (p *Partitions) Stop(ctx context.Context) error {
	p.mu.Lock()
	started, stopped, cancel := p.started, p.stopped, p.cancel
	p.stopped = true
	p.mu.Unlock()
	if !started {
		if !stopped {
			close(p.done)
		}
		return nil
	}
	cancel()
	select {
	case <-p.planned:
	case <-ctx.Done():
		return fmt.Errorf("cluster: lease %q: stop: %w", p.name, ctx.Err())
	}
	heirs := p.heirs()
	errs := make([]error, len(p.parts))
	var wg sync.WaitGroup
	for i, e := range p.parts {
		wg.Go(func() {
			if heirs[i] != "" && e.IsLeader() {
				// D8: handed over as a move is (D7): the release that Stop writes keeps the
				// request, and so is reserved for the heir, whose watch takes it at once,
				// rather than free until a planner plans it, up to R later.
				if _, err := resign(ctx, p.lock, e.name, heirs[i], true); err != nil {
					p.log.Info("leasehold: partitions: hand over on stop", "partition", i, "to", heirs[i], "error", err)
				}
			}
			errs[i] = e.Stop(ctx)
		})
	}
	wg.Wait()
	if err := p.roster.Leave(ctx, RosterName(p.name), p.id); err != nil {
		errs = append(errs, fmt.Errorf("cluster: lease %q: leave the roster: %w", p.name, err))
	}
	return errors.Join(errs...)
}

// heirs plans, for Stop, who takes each partition this instance owns: the plan of the last
// live members without this one, its partitions counted as free (D2). It returns "" for a
// partition with no heir (none of its own, or no other member).
func (p *Partitions) heirs() []string {
	heirs := make([]string, p.k)
	var others []string
	for _, m := range p.live {
		if m != p.id {
			others = append(others, m)
		}
	}
	if len(others) == 0 {
		return heirs
	}
	mine := p.gate.owners()
	owner := slices.Clone(mine)
	for i, o := range owner {
		if o == p.id {
			owner[i] = ""
		}
	}
	for _, m := range planPartitions(others, owner, 0) {
		if m.From == "" && mine[m.Partition] == p.id {
			heirs[m.Partition] = m.To
		}
	}
	return heirs
}

// Done returns a channel closed once the planner and every partition's election have ended.
func (p *Partitions) Done() <-chan struct{} { return p.done }

// plan is the planner (D6): every R it beats the roster, reads it, plans the assignment from
// the live members and the owners seen, opens the gates of the partitions planned for this
// instance, and hands over the ones planned away from it.
func (p *Partitions) plan(ctx context.Context) {
	view := newRosterView(p.l)
	var beat uint64
	// The first plan waits for the second read of the roster, R after this member's first
	// beat: members started together then see each other before any takes a free partition,
	// rather than the first to plan taking them all and handing them over at MaxMoves per R.
	reads := 0
	every(ctx, p.r, func() bool {
		beat++
		rctx, cancel := context.WithTimeout(ctx, p.l-p.r)
		err := p.roster.Beat(rctx, RosterName(p.name), Member{ID: p.id, Session: p.session, Beat: beat, Duration: p.l})
		var ms []Member
		if err == nil {
			ms, err = p.roster.Members(rctx, RosterName(p.name))
		}
		cancel()
		switch {
		case ctx.Err() != nil:
			return false
		case err != nil:
			p.log.Warn("leasehold: partitions: roster", "error", err) // E8: the partitions' elections go on
			return true
		}
		now := time.Now()
		view.update(ms, now)
		if reads++; reads >= 2 {
			// Planned with the members seen beating within 2R, not merely not yet judged gone
			// (D5's L): a partition is never planned for, nor handed over to, a member that
			// has stopped beating, whose roster entry would take L more to expire (D7).
			p.apply(ctx, view.recent(now, 2*p.r))
		}
		return true
	})
}

// apply plans with the live members and acts on this instance's part of the plan.
func (p *Partitions) apply(ctx context.Context, live []string) {
	if !slices.Contains(live, p.id) {
		live = append(live, p.id) // its own beat may not have been read back yet
	}
	slices.Sort(live)
	p.live = live
	owner := p.gate.owners()
	moves := planPartitions(live, owner, p.maxMoves)
	heir := make([]string, p.k)
	for _, m := range moves {
		heir[m.Partition] = m.To
	}
	opened := p.gate.set(heir)
	for _, i := range opened {
		select {
		case p.parts[i].poke <- struct{}{}:
		default:
		}
	}
	for _, m := range moves {
		if m.From != p.id || !p.parts[m.Partition].IsLeader() {
			continue
		}
		// D4: hand over to the member the plan names, once this partition's callbacks have
		// returned (R2); the release is reserved for it (R3).
		rctx, cancel := context.WithTimeout(ctx, p.l-p.r)
		_, err := resign(rctx, p.lock, p.parts[m.Partition].name, m.To, true)
		cancel()
		if err != nil {
			p.log.Info("leasehold: partitions: hand over", "partition", m.Partition, "to", m.To, "error", err)
			continue
		}
		p.log.Info("leasehold: partitions: handing over", "partition", m.Partition, "to", m.To)
	}
}

// partitionGate is the claimer of a partitioned election's Electors (D6): it knows, from their
// events, who owns each partition, and from the last plan, which free partitions go to this
// instance.
type partitionGate struct {
	id string

	mu    sync.Mutex
	owner []string // by partition: the holder last seen ("" released, missing or unknown)
	heir  []string // by partition: the member the last plan gives it to, when it is free
}

var _ claimer = (*partitionGate)(nil)

// observe follows a partition's owner from its Elector's events.
func (g *partitionGate) observe(i int, ev Event) {
	g.mu.Lock()
	defer g.mu.Unlock()
	switch ev.Kind {
	case BecameLeader:
		g.owner[i] = g.id
	case StoppedLeading:
		if g.owner[i] == g.id {
			g.owner[i] = "" // until the record is read again
		}
	case ObservedLeader, ObservedRevision, WatchedChange:
		g.owner[i] = ev.Holder
	}
}

func (g *partitionGate) owners() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return slices.Clone(g.owner)
}

// set records a plan, and returns the partitions whose gate it opened for a free record.
func (g *partitionGate) set(heir []string) []int {
	g.mu.Lock()
	defer g.mu.Unlock()
	var opened []int
	for i, h := range heir {
		if h == g.id && g.heir[i] != g.id {
			opened = append(opened, i)
		}
	}
	g.heir = heir
	return opened
}

// acquire: a record of its own is always kept (moves are handovers, D4); a record reserved
// for this instance is taken; a free one when the plan gives it to this instance; another
// holder's expired one always (D8).
func (g *partitionGate) acquire(i int, rec *Record, expired bool) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	switch {
	case rec != nil && rec.Holder == g.id:
		return true
	case rec != nil && rec.Holder == "" && rec.NextHolder == g.id:
		return true
	case expired:
		// Its holder renewed nothing for D on this instance's clock (E6): presumed gone, its
		// partitions are raced for by every member at once, so that they are owned again
		// within L + R and spread by the race; the plan then evens the counts (D7).
		return true
	default:
		return g.heir[i] == g.id
	}
}

func (g *partitionGate) drop(int) {}

func (g *partitionGate) watchesExpiry() bool { return true }
