package partition

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/leasehold/leasehold/cluster"
	"github.com/leasehold/leasehold/internal/fencing"
	"github.com/leasehold/leasehold/internal/pace"
	"github.com/leasehold/leasehold/internal/termctx"
	"github.com/leasehold/leasehold/internal/wallclock"
)

// unknownOwner stands, in a plan, for the owner of a partition whose record has not been read
// yet: no member, so the plan leaves the partition alone (D2).
const unknownOwner = "\x00unknown"

// plan is the planner (D6): every R it reads the roster and the members' leases, and on every
// change it learns of (a record, a fence) it plans again from the live members and the owners
// seen, claims the partitions planned for this instance and hands over the ones planned away.
func (p *Partitions) plan(ctx context.Context) {
	t := time.NewTimer(0)
	defer t.Stop()
	// The first plan waits for the roster to settle (D6): R after this member joined it, then
	// until a read shows no member the read before did not, each with its member lease seen,
	// reading every R/4 meanwhile, and at most L. Members started together, or one after
	// another as a Deployment's pods are, then see each other before any claims a free
	// partition, rather than the first to plan taking the shares of those still starting and
	// handing them over at MaxMoves per R.
	reads := 0
	ready := false
	var beat uint64
	var prev map[string]bool
	begun := time.Now()
	for {
		due := false
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			due = true
		case <-p.poke:
		}
		if due {
			start := time.Now()
			seen := p.readRoster(ctx, &beat)
			reads++
			next := p.r
			if !ready {
				ready = reads >= 2 && (p.settled(prev, seen) || time.Since(begun) >= p.l)
				prev = seen
				if !ready && reads >= 2 {
					next = p.r / 4
				}
				if ready {
					p.readUnread(ctx)
				}
			}
			t.Reset(time.Until(start.Add(next)))
		} else {
			p.readDirty(ctx)
		}
		if ctx.Err() != nil {
			return
		}
		if ready {
			p.apply(ctx)
		}
	}
}

// readUnread reads the records that no watch has brought yet, readsInFlight at a time: a
// partition not read is planned for nobody (unknownOwner), and a store whose watches take long
// to bring their first states (one read each, thousands of them) would hold the first plan's
// claims back by as long. A store that batches its reads sends them as a few.
func (p *Partitions) readUnread(ctx context.Context) {
	p.mu.Lock()
	var unread []int
	for i := range p.view {
		if !p.view[i].read {
			unread = append(unread, i)
		}
	}
	p.mu.Unlock()
	inFlight(ctx, readsInFlight, unread, func(i int) { p.readRecord(ctx, i) })
}

// inFlight calls fn for each of items, at most n at a time, and returns once every call has
// returned; it starts none once ctx has ended.
func inFlight(ctx context.Context, n int, items []int, fn func(int)) {
	sem := make(chan struct{}, n)
	var wg sync.WaitGroup
	for _, i := range items {
		if ctx.Err() != nil {
			break
		}
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			fn(i)
		})
	}
	wg.Wait()
}

// readsInFlight is how many records readUnread reads at once.
const readsInFlight = 512

// settled reports whether the roster read last, seen (the other members, nil when the read
// failed), holds no member that the read before, prev, did not, and every member's lease in it
// has been read and found: the members starting with this one have joined and hold their
// leases, and a first plan counts them (D6).
func (p *Partitions) settled(prev, seen map[string]bool) bool {
	if seen == nil || prev == nil {
		return false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for id := range seen {
		mv := p.members[id]
		if !prev[id] || mv == nil || !mv.read || !mv.found {
			return false
		}
	}
	return true
}

// readRoster reads the roster, joins it again if this instance is missing from it, reads the
// lease of every member known (in the roster, or named by a partition's record), starts the
// fences of the members of the roster and drops the members gone for good. It returns the other
// members the roster held, nil when it could not be read.
func (p *Partitions) readRoster(ctx context.Context, beat *uint64) map[string]bool {
	inRoster, err := p.rosterOthers(ctx, beat)
	known := p.knownMembers(inRoster)
	// Read together: the planner answers no fence while it reads, and a fence's news of a
	// crash waits for the last of these reads (D8).
	var wg sync.WaitGroup
	for id := range known {
		wg.Go(func() { p.readMember(ctx, id) })
	}
	wg.Wait()
	if ctx.Err() != nil {
		return nil
	}
	stops, leaves := p.dropOrFence(ctx, inRoster, err == nil)
	for _, f := range stops {
		p.wg.Go(func() {
			sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), p.l)
			defer cancel()
			_ = f.Stop(sctx)
		})
	}
	for _, id := range leaves {
		rctx, cancel := context.WithTimeout(ctx, p.l-p.r)
		_ = p.roster.Leave(rctx, RosterName(p.name), id)
		cancel()
	}
	if err != nil {
		return nil
	}
	return inRoster
}

// rosterOthers reads the roster and returns the other members it holds, with the read's error,
// and joins the roster again when the read shows this instance missing from it, or there under
// another session: to the others, a member missing from the roster is dropped once no record
// names it, and then planned for by nobody.
func (p *Partitions) rosterOthers(ctx context.Context, beat *uint64) (map[string]bool, error) {
	rctx, cancel := context.WithTimeout(ctx, p.l-p.r)
	ms, err := p.roster.Members(rctx, RosterName(p.name))
	cancel()
	inRoster := make(map[string]bool, len(ms))
	if err != nil {
		p.log.Warn("leasehold: partitions: roster", "error", err) // E8: the election goes on
	}
	joined := false
	for _, m := range ms {
		if m.ID == p.id {
			joined = m.Session == p.session
			continue
		}
		inRoster[m.ID] = true
	}
	if err == nil && !joined {
		*beat++
		rctx, cancel := context.WithTimeout(ctx, p.l-p.r)
		if err := p.roster.Beat(rctx, RosterName(p.name), cluster.Member{ID: p.id, Session: p.session, Beat: *beat, Duration: p.l}); err != nil {
			p.log.Warn("leasehold: partitions: join the roster", "error", err)
		}
		cancel()
	}
	return inRoster, err
}

// knownMembers returns the members whose leases a roster read reads: those already viewed, those
// of the roster, and the holders named by a partition's record, so that a member that left the
// roster while holding partitions is still seen (and fenced) until its records change.
func (p *Partitions) knownMembers(inRoster map[string]bool) map[string]bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	known := make(map[string]bool)
	for id := range p.members {
		known[id] = true
	}
	for id := range inRoster {
		known[id] = true
	}
	for i := range p.view {
		if h := p.view[i].rec.Holder; p.view[i].found && h != "" && h != p.id {
			known[h] = true
		}
	}
	return known
}

// dropOrFence decides, once the leases are read, what becomes of each member viewed: one of the
// roster whose lease has not been its own for L is made to leave it, one neither in the roster
// nor named by a record is dropped (its fence to stop), and one whose lease is held and not yet
// fenced is fenced. It returns the fences to stop and the members to make leave; leaving and
// dropping need rosterRead, as a roster that could not be read says nothing of who is in it.
func (p *Partitions) dropOrFence(ctx context.Context, inRoster map[string]bool, rosterRead bool) (stops []*cluster.Elector, leaves []string) {
	now := time.Now()
	p.mu.Lock()
	defer p.mu.Unlock()
	for id := range inRoster {
		if p.members[id] == nil {
			p.members[id] = &memberView{} // its lease could not be read: counted, not live
		}
	}
	named := make(map[string]bool)
	for i := range p.view {
		if p.view[i].found {
			named[p.view[i].rec.Holder] = true
		}
	}
	for id, mv := range p.members {
		mv.inRoster = inRoster[id]
		gone := mv.read && (!mv.found || mv.rec.Holder != id) && now.Sub(mv.seenAt) >= p.l
		switch {
		case rosterRead && gone && mv.inRoster:
			// Its lease has not been its own for L: a member that crashed, or was stopped
			// without leaving. It joins again if it lives on.
			leaves = append(leaves, id)
		case rosterRead && !mv.inRoster && !named[id]:
			if mv.fence != nil {
				stops = append(stops, mv.fence)
			}
			delete(p.members, id)
		case mv.fence == nil && mv.found && mv.rec.Holder != "":
			// Held: fenced, whether in the roster or only named by a partition's record (a
			// member that left the roster and lives on, or crashed after it was dropped).
			p.startFence(ctx, id, mv)
		}
	}
	return stops, leaves
}

// readDirty reads again the leases its fences saw change.
func (p *Partitions) readDirty(ctx context.Context) {
	p.mu.Lock()
	var ids []string
	for id, mv := range p.members {
		if mv.dirty {
			ids = append(ids, id)
		}
	}
	p.mu.Unlock()
	for _, id := range ids {
		p.readMember(ctx, id)
	}
}

// apply plans with the live members and the owners seen, and acts on this instance's part.
func (p *Partitions) apply(ctx context.Context) {
	now := time.Now()
	p.mu.Lock()
	epoch := p.epoch
	if epoch == 0 {
		p.mu.Unlock()
		return // no member lease, no claim
	}
	live, isLive := p.liveMembers()
	owner, reserved, adopt := p.owners(now, epoch, isLive)
	moves := planPartitions(live, owner, p.maxMoves)
	claims := p.claimsToMake(now, live, isLive, owner, reserved, moves)
	var handovers []partitionMove
	for _, m := range moves {
		if m.From == p.id && p.own[m.Partition].Load() != nil && !p.handing[m.Partition] && p.mayHandOver(now) {
			handovers = append(handovers, m)
		}
	}
	views := make(map[int]partView, len(claims))
	for _, i := range claims {
		views[i] = p.view[i]
	}
	for _, i := range adopt {
		p.becomeOwner(i, epoch, p.view[i].rec)
	}
	p.mu.Unlock()
	for _, m := range handovers {
		p.handOver(ctx, m.Partition, m.To)
	}
	// The claims go out together, up to claimsInFlight at once: after a crash a member claims
	// its share of the crashed member's partitions, and one round trip after another would
	// put the last of them that many round trips past the first (D8). A store that batches
	// its requests sends them as one.
	inFlight(ctx, claimsInFlight, claims, func(i int) { p.claim(ctx, i, views[i], epoch) })
}

// liveMembers returns the members a plan is made for, this instance among them, sorted, and
// the same as a set: the plan is made for members that renew, not for all those with a lease.
// Called with p.mu held.
func (p *Partitions) liveMembers() ([]string, map[string]bool) {
	live := []string{p.id}
	isLive := map[string]bool{p.id: true}
	for id, mv := range p.members {
		// Planned for while it renews (D5): a member seen renewing within 2R at the last read,
		// not merely one whose lease has not expired yet, so that nothing is planned for, nor
		// handed over to, a member that stopped, whose lease would take L more to expire (D7).
		if mv.live(id, 2*p.r+p.r/2) {
			live = append(live, id)
			isLive[id] = true
		}
	}
	slices.Sort(live)
	return live, isLive
}

// owners decides whom the plan counts as each partition's owner ("" for free, unknownOwner for
// not read yet, which the plan leaves alone), whether that owner only holds a reservation (R3),
// and which partitions this instance adopts: those whose records name its epoch and which it
// does not run. The plan starts from these owners, so whom it trusts decides what it moves.
// Called with p.mu held.
func (p *Partitions) owners(now time.Time, epoch uint64, isLive map[string]bool) (owner []string, reserved []bool, adopt []int) {
	owner = make([]string, p.k)
	reserved = make([]bool, p.k)
	for i := range p.view {
		v := &p.view[i]
		switch {
		case !v.read:
			owner[i] = unknownOwner
		case !v.found || v.rec.Holder == "":
			owner[i] = ""
			// A release reserved for a live member (R3) is that member's in the plan until it
			// takes it, or until it is stuck (below): planned as free, it could be planned for
			// this instance, which would skip it as reserved and leave another free partition
			// planned for nobody until that one is stuck, L + R later (D7).
			next := v.rec.NextHolder
			if v.found && isLive[next] && (next == p.id || v.freeSince.IsZero() || now.Sub(v.freeSince) < p.l+p.r) {
				owner[i], reserved[i] = next, true
			}
		case v.rec.Holder == p.id && v.rec.Session == partitionSession(p.session, epoch):
			owner[i] = p.id
			if p.own[i].Load() == nil && !p.handing[i] {
				// Claimed, and its answer lost: nobody else writes a record that names a
				// live epoch, and no release of it is in flight (handing), so it is ours.
				adopt = append(adopt, i)
			}
		case v.rec.Holder == p.id:
			owner[i] = "" // claimed under an earlier epoch, or by another process of this ID
		default:
			if e, ok := partitionEpoch(v.rec.Session); ok {
				if !p.epochOver(v.rec.Holder, e, now) {
					owner[i] = v.rec.Holder
				}
			} else if now.Sub(v.seenAt) < max(p.l, v.rec.Duration) {
				// A record that names no member lease (written by an Elector of its own):
				// its holder's, until it has stayed the same for its duration (E6).
				owner[i] = v.rec.Holder
			}
		}
	}
	return owner, reserved, adopt
}

// claimsToMake decides which partitions this instance claims now: those the plan moves to it
// from nobody, up to claimLimit, those reserved for it, and those free for so long that views
// must disagree (stuck); and it marks since when each partition has been free. The bounds keep
// this instance from claiming shares it would hand back at MaxMoves per R. Called with p.mu
// held.
func (p *Partitions) claimsToMake(now time.Time, live []string, isLive map[string]bool, owner []string, reserved []bool, moves []partitionMove) []int {
	var claims []int
	planned := make(map[int]bool)
	for _, m := range moves {
		if m.To == p.id && m.From == "" {
			planned[m.Partition] = true
		}
	}
	// Partitions claimed only for being stuck (below) go beyond this instance's share once it
	// holds it: those count as moves, at most MaxMoves per R (D4), so that members slow to
	// claim their share (a start under load) do not see it all taken by the first member whose
	// view says it has been free for L + R, and then wait for it at MaxMoves per R.
	held := 0 // owned, then planned claims as they are made
	for i := range owner {
		if owner[i] == p.id {
			held++
		}
	}
	mine := held + len(planned)
	share := (p.k + len(live) - 1) / len(live)
	limit := p.claimLimit(len(live), isLive)
	for i := range p.view {
		v := &p.view[i]
		if owner[i] != "" && !reserved[i] {
			v.freeSince = time.Time{}
			continue
		}
		if v.freeSince.IsZero() {
			v.freeSince = now
		}
		if reserved[i] {
			if owner[i] == p.id {
				claims = append(claims, i) // reserved for this instance (R3)
			}
			continue // reserved for a live member (R3)
		}
		// A partition free for L + R in this view is claimed whatever the plan or a
		// reservation says, beyond the share as a move (D7): views that disagree (a member
		// that plans it for another, which sees it owned) must not leave it without an owner
		// for good. A view that is wrong costs a failed write.
		stuck := now.Sub(v.freeSince) >= p.l+p.r
		switch {
		case planned[i] && held < limit:
			held++
			claims = append(claims, i)
		case stuck && (mine < min(share, limit) || p.mayHandOver(now)):
			mine++
			claims = append(claims, i)
		}
	}
	return claims
}

// claimLimit decides how many partitions this instance's own claims may bring it to, given the
// number of live members and which they are. Called with p.mu held.
func (p *Partitions) claimLimit(nLive int, isLive map[string]bool) int {
	// This instance's own claims stop at its share among the members it cannot tell are gone:
	// the live ones, and those of the roster whose lease no read or fence has shown released,
	// taken over or another's (one still joining, one whose lease could not be read). A view
	// that misses members (reads that failed or time out under load) then does not make this
	// instance claim their shares, which it would hand back at MaxMoves per R (D7).
	counted := nLive
	for id, mv := range p.members {
		if !isLive[id] && mv.inRoster && !mv.gone(id) {
			counted++
		}
	}
	return (p.k + counted - 1) / counted
}

// claimsInFlight is how many claims a plan sends at once.
const claimsInFlight = 64

// mayHandOver reports whether a handover may start now, at most MaxMoves per R (D4), and
// counts it. Called with p.mu held.
func (p *Partitions) mayHandOver(now time.Time) bool {
	p.moves = slices.DeleteFunc(p.moves, func(t time.Time) bool { return now.Sub(t) >= p.r })
	if len(p.moves) >= p.maxMoves {
		return false
	}
	p.moves = append(p.moves, now)
	return true
}

// claim writes partition i's record for this instance under epoch, on the revision seen
// (E10): a record that changed since is never overwritten.
func (p *Partitions) claim(ctx context.Context, i int, from partView, epoch uint64) {
	now := time.Now()
	wall := wallclock.Reading(now)
	at := fencing.After(wall, from.rec.RenewedAt)
	rec := cluster.Record{
		Holder: p.id, Session: partitionSession(p.session, epoch),
		Term:       fencing.Next(from.rec.Term, from.seen, wall),
		AcquiredAt: at, RenewedAt: at, Duration: p.l,
	}
	rctx, cancel := context.WithTimeout(ctx, p.l-p.r)
	defer cancel()
	var written cluster.Record
	var err error
	if from.found {
		rec.Revision = from.rec.Revision
		written, err = p.lock.Update(rctx, p.names[i], rec)
	} else {
		written, err = p.lock.Create(rctx, p.names[i], rec)
	}
	switch {
	case err == nil:
		p.setView(i, written, true, -2)
	case errors.Is(err, cluster.ErrConflict), errors.Is(err, cluster.ErrNotFound):
		p.readRecord(ctx, i) // another member came first: see whom
		return
	default:
		p.log.Info("leasehold: partitions: claim", "partition", i, "error", err)
		// The write may have landed: the record will say, and if it names this epoch the
		// partition is this instance's (adopted by the plan), as nobody else writes it now.
		p.readRecord(ctx, i)
		return
	}
	p.mu.Lock()
	p.becomeOwner(i, epoch, written)
	p.mu.Unlock()
}

// becomeOwner makes this instance the owner of partition i, whose record rec names epoch, if
// that epoch is still the member lease's current leadership. Called with p.mu held.
func (p *Partitions) becomeOwner(i int, epoch uint64, rec cluster.Record) {
	term, leading := p.self.Term()
	if p.epoch != epoch || !leading || term != epoch || p.own[i].Load() != nil {
		return // that leadership has ended: the record names it, and so is free for all
	}
	ctx, cancel := context.WithCancel(termctx.With(p.base, rec.Term))
	p.own[i].Store(&ownership{epoch: epoch, term: rec.Term, rev: rec.Revision, at: rec.RenewedAt, cancel: cancel})
	if a := p.lastAttempt; a.Term == epoch {
		// The attempt whose deadline this ownership has, as each renewal will be (memberEvent).
		p.emit(i, cluster.Event{Kind: cluster.AttemptSucceeded, Holder: p.id, Term: rec.Term, Duration: a.Duration, Time: a.Time})
	}
	p.emit(i, cluster.Event{Kind: cluster.BecameLeader, Term: rec.Term, Holder: p.id})
	p.cbs[i].StartLeading(ctx)
}

// handOver ends this instance's ownership of partition i and, once its callbacks have
// returned (R2), releases its record for to (R3), whose watch takes it at once (D4).
func (p *Partitions) handOver(ctx context.Context, i int, to string) {
	p.mu.Lock()
	o := p.own[i].Load()
	if o == nil || p.handing[i] {
		p.mu.Unlock()
		return
	}
	p.handing[i] = true
	p.own[i].Store(nil)
	o.cancel()
	p.cbs[i].StopLeading()
	p.emit(i, cluster.Event{Kind: cluster.StoppedLeading, Term: o.term, Reason: cluster.ReasonResign})
	p.mu.Unlock()
	p.log.Info("leasehold: partitions: handing over", "partition", i, "to", to)
	p.wg.Go(func() {
		defer func() {
			p.mu.Lock()
			delete(p.handing, i)
			p.mu.Unlock()
			p.kick()
		}()
		if p.cbs[i].Wait(ctx) != nil {
			return // stopping: the member lease's release frees it
		}
		// Until the release is known to have landed or the record to have changed, the
		// partition stays handing: a record that names this epoch and is not handing is
		// this instance's to run (adopted), which a release landing later would make two.
		for {
			if p.release(ctx, i, o, to) {
				return
			}
			if !pace.Sleep(ctx, p.r) {
				return
			}
			p.mu.Lock()
			over := p.epoch != o.epoch
			p.mu.Unlock()
			if over {
				return // that epoch has ended: its records are free for all already
			}
		}
	})
}

// release writes partition i's record released for to, on the revision o claimed, and says
// whether the record is known to have changed from that claim since (released by this write
// or an earlier one whose answer was lost, or written by another member once this epoch ended).
func (p *Partitions) release(ctx context.Context, i int, o *ownership, to string) bool {
	p.mu.Lock()
	gen := p.view[i].gen
	p.mu.Unlock()
	rctx, cancel := context.WithTimeout(ctx, p.l-p.r)
	defer cancel()
	written, err := p.lock.Update(rctx, p.names[i], cluster.Record{
		Term: o.term, NextHolder: to, Duration: p.l, RenewedAt: fencing.After(wallclock.Reading(time.Now()), o.at), Revision: o.rev,
	})
	if err == nil {
		p.setView(i, written, true, -2)
		return true
	}
	p.log.Info("leasehold: partitions: hand over", "partition", i, "to", to, "error", err)
	rec, err := p.lock.Get(rctx, p.names[i])
	switch {
	case errors.Is(err, cluster.ErrNotFound):
		p.setView(i, cluster.Record{}, false, gen)
		return true
	case err != nil:
		return false
	}
	p.setView(i, rec, true, gen)
	return rec.Revision != o.rev
}
