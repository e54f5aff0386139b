// Package holders elects up to N holders of a lease at once (H1–H3 in docs/design.md): the
// lease has N slots, each a record of its own (SlotName) with its own election, term and
// leader, and an instance holds at most one slot at a time.
//
// Each slot is an election of the engine (cluster.Elector), so a slot is taken, renewed, lost
// and released by the Elector's rules; the slots of one instance share a cluster.Gate that
// lets one of them at a time write to hold its record (H2).
package holders

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/leasehold/leasehold/cluster"
	"github.com/leasehold/leasehold/internal/leaseconf"
)

// SlotNamer is implemented by a Lock whose record names cannot take SlotName's default form
// NAME/i: a Kubernetes Lease's name is a DNS subdomain, which has no "/" (H1).
type SlotNamer interface {
	SlotName(lease string, slot int) string
}

// SlotName returns the name of the record of slot (0-based) of lease among n holders in lock
// (H1): the lease's own name when n is 1, so that one holder is exactly the election of
// cluster.Elector; otherwise NAME/slot, or what lock's SlotName says.
func SlotName(lock cluster.Lock, lease string, slot, n int) string {
	return leaseconf.SlotName(lock, lease, slot, n)
}

type slotKey struct{}

// withSlot returns ctx carrying the slot a Holders leadership holds.
func withSlot(ctx context.Context, slot int) context.Context {
	return context.WithValue(ctx, slotKey{}, slot)
}

// SlotOf returns the slot (0-based) carried by the context of a LeaderFunc registered with
// Holders.WhenLeader.
func SlotOf(ctx context.Context) (int, bool) {
	s, ok := ctx.Value(slotKey{}).(int)
	return s, ok
}

// Holders elects up to N holders of a lease at once (H1–H3): the lease has N slots, each a
// record of its own (SlotName) with its own election, term and leader, and an instance holds
// at most one slot at a time. It implements cluster.Cluster: IsLeader is true while the
// instance holds a slot, and fn runs for each slot it comes to hold, its context carrying the
// slot (SlotOf) and that slot's term (cluster.TermOf).
//
// An instance runs one Elector per slot, each with the timing of E1–E8 (so a free slot is
// seen by every instance within R, and an expired one judged on each instance's own clock),
// but only one of them may write to take or renew a slot: the first to decide that it would
// write claims the instance, and the others follow whatever they read until that slot is done
// with (it follows, its leadership has ended and its callbacks have returned). With N = 1 it
// is one Elector on the lease itself.
type Holders struct {
	name  string
	id    string
	slots []*cluster.Elector
	done  chan struct{}
}

var _ cluster.Cluster = (*Holders)(nil)

// New returns the election of n holders of cfg's lease, not started. cfg is checked as
// cluster.NewElector checks it (E0); n must be at least 1, and cfg.Gate nil: the slots' gate
// is the Holders' own. cfg.Observer receives the events of every slot: Event.Lease is the
// slot's record name.
func New(cfg cluster.ElectorConfig, n int) (*Holders, error) {
	cfg.LeaseName = leaseconf.LeaseName(cfg.LeaseName)
	if n < 1 {
		return nil, fmt.Errorf("holders: lease %q: %d holders: want at least 1", cfg.LeaseName, n)
	}
	if cfg.Gate != nil {
		return nil, fmt.Errorf("holders: lease %q: ElectorConfig.Gate is set: the slots' gate is the Holders' own", cfg.LeaseName)
	}
	if cfg.InstanceID == "" {
		cfg.InstanceID = cluster.DefaultInstanceID() // one identity in every slot
	}
	h := &Holders{name: cfg.LeaseName, id: cfg.InstanceID, done: make(chan struct{})}
	var claim *slotClaim
	if n > 1 {
		claim = &slotClaim{owner: -1}
	}
	for i := range n {
		c := cfg
		c.LeaseName = SlotName(cfg.Lock, cfg.LeaseName, i, n)
		if claim != nil {
			c.Gate = slotGate{claim, i}
		}
		e, err := cluster.NewElector(c)
		if err != nil {
			return nil, err
		}
		h.slots = append(h.slots, e)
	}
	if claim != nil {
		claim.slots = h.slots
	}
	return h, nil
}

// Slots returns the Electors of the slots, in slot order: for a program that reports or
// watches one slot's election (its term, its events' lease) rather than the holding as a whole.
func (h *Holders) Slots() []*cluster.Elector { return h.slots }

// LeaseName returns the lease's name (slot 0's record is SlotName(lock, name, 0, n)).
func (h *Holders) LeaseName() string { return h.name }

// InstanceID returns this instance's identity, the same in every slot.
func (h *Holders) InstanceID() string { return h.id }

// IsLeader reports whether this instance holds a slot.
func (h *Holders) IsLeader() bool {
	for _, e := range h.slots {
		if e.IsLeader() {
			return true
		}
	}
	return false
}

// Slot returns the slot this instance holds and its term, and whether it holds one.
func (h *Holders) Slot() (slot int, term uint64, ok bool) {
	for i, e := range h.slots {
		if t, ok := e.Term(); ok {
			return i, t, true
		}
	}
	return 0, 0, false
}

// WhenLeader registers fn and deregistered on every slot, with the guarantees of
// cluster.Cluster.WhenLeader for each slot; since the instance holds one slot at a time and a
// slot's callbacks return before another slot may be taken (H2), the calls of one registration
// never overlap across slots either. fn's context carries the slot (SlotOf).
func (h *Holders) WhenLeader(fn cluster.LeaderFunc, deregistered func()) (remove func()) {
	if fn == nil {
		fn = func(context.Context) error { return nil }
	}
	removes := make([]func(), 0, len(h.slots))
	for i, e := range h.slots {
		removes = append(removes, e.WhenLeader(func(ctx context.Context) error { return fn(withSlot(ctx, i)) }, deregistered))
	}
	return func() {
		for _, r := range removes {
			r()
		}
	}
}

// Start starts the election of every slot (see cluster.Elector.Start).
func (h *Holders) Start(ctx context.Context) error {
	var errs []error
	for _, e := range h.slots {
		errs = append(errs, e.Start(ctx))
	}
	go func() {
		for _, e := range h.slots {
			<-e.Done()
		}
		close(h.done)
	}()
	return errors.Join(errs...)
}

// Stop ends the election of every slot, at once (see cluster.Elector.Stop): the slot held is
// released once its callbacks have returned. It returns the slots' errors joined.
func (h *Holders) Stop(ctx context.Context) error {
	errs := make([]error, len(h.slots))
	var wg sync.WaitGroup
	for i, e := range h.slots {
		wg.Go(func() { errs[i] = e.Stop(ctx) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// Done returns a channel closed once the election of every slot has ended.
func (h *Holders) Done() <-chan struct{} { return h.done }

// slotClaim lets one slot of an instance at a time take or renew its record (H2). owner is the
// slot that claimed last; it is done with the claim once its attempts no longer write (want
// false) and its Elector is idle (it does not lead, StoppedLeading has been emitted, and its
// callbacks have returned): only then may another slot claim.
type slotClaim struct {
	mu    sync.Mutex
	owner int  // -1 before any claim
	want  bool // owner's last attempt wrote, or was about to, to hold its slot
	slots []*cluster.Elector
}

// acquire is called by an attempt of slot i that is about to write to hold its slot. It
// returns false when another slot of the instance holds, or may hold, its own, or its
// callbacks have not all returned.
func (c *slotClaim) acquire(i int) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	j := c.owner
	if j < 0 || j == i {
		c.owner, c.want = i, true
		return true
	}
	// Once StoppedLeading has been emitted for j's last leadership, its deregistered calls
	// are queued already: once they have returned, j is idle, and done. Until then this
	// attempt follows, and the next one looks again: a slot's attempt never waits for another
	// slot's callbacks (a CMD's grace), which would make it time out (E3).
	if c.want || !c.slots[j].Idle() {
		return false
	}
	c.owner, c.want = i, true
	return true
}

// drop records that an attempt of slot i does not write to hold its slot.
func (c *slotClaim) drop(i int) {
	c.mu.Lock()
	if c.owner == i {
		c.want = false
	}
	c.mu.Unlock()
}

// slotGate is slot i's cluster.Gate: the instance's slotClaim.
type slotGate struct {
	c *slotClaim
	i int
}

var _ cluster.Gate = slotGate{}

func (g slotGate) Admit(*cluster.Record, bool) bool { return g.c.acquire(g.i) }
func (g slotGate) Drop()                            { g.c.drop(g.i) }
