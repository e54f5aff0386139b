package partition

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/leasehold/leasehold/cluster"
	"github.com/leasehold/leasehold/internal/leaseconf"
)

// memberLeaseName names the member lease of instance id in the partitioned election name (D10):
// a hash of the ID, so that any ID makes a name every Lock accepts.
func memberLeaseName(name, id string) string {
	sum := sha256.Sum256([]byte(id))
	return leaseconf.LeaseName(name) + ".member-" + hex.EncodeToString(sum[:8])
}

// partitionSession is the Session a member writes in the records of the partitions it claims:
// its member lease's session and term, which name the one leadership of the member lease the
// claim holds under (D10). A later leadership of the same lease, even by the same process, has
// another term, so it never takes a record claimed under an earlier one for its own.
func partitionSession(session string, epoch uint64) string {
	return session + "." + strconv.FormatUint(epoch, 10)
}

// partitionEpoch returns the member lease term a partition record's Session names, false when
// it names none (a record written otherwise: its holder's leadership is unknown).
func partitionEpoch(session string) (uint64, bool) {
	i := strings.LastIndexByte(session, '.')
	if i < 0 {
		return 0, false
	}
	e, err := strconv.ParseUint(session[i+1:], 10, 64)
	return e, err == nil && e > 0
}

// memberEvent follows this member's lease: a leadership of it is an epoch, under which the
// partitions claimed are owned; its end ends them all, at the instant IsLeader turned false
// (W7).
func (p *Partitions) memberEvent(ev cluster.Event) {
	if p.observer != nil {
		p.emitting.Lock()
		p.observer(ev) // Event.Lease is the member lease's name
		p.emitting.Unlock()
	}
	switch ev.Kind {
	case cluster.AttemptSucceeded:
		// A renewal of the member lease renews every partition owned under it: each gets
		// the attempt, with its own term, so that an Observer knows each one's deadline.
		p.mu.Lock()
		p.lastAttempt = ev
		for i := range p.own {
			if o := p.own[i].Load(); o != nil && o.epoch == ev.Term {
				p.emit(i, cluster.Event{Kind: cluster.AttemptSucceeded, Holder: p.id, Term: o.term, Duration: ev.Duration, Time: ev.Time})
			}
		}
		p.mu.Unlock()
	case cluster.BecameLeader:
		p.mu.Lock()
		p.epoch = ev.Term
		p.ended[ev.Term] = make(chan struct{})
		p.mu.Unlock()
		p.kick()
	case cluster.StoppedLeading:
		p.endEpoch(ev.Term, ev.Time, ev.Reason)
	}
}

// endEpoch ends every ownership claimed under epoch: contexts cancelled, deregistered queued,
// StoppedLeading sent with the time and reason the member lease's leadership ended.
func (p *Partitions) endEpoch(epoch uint64, at time.Time, reason string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.epoch == epoch {
		p.epoch = 0
	}
	for i := range p.own {
		o := p.own[i].Load()
		if o == nil || o.epoch != epoch {
			continue
		}
		p.own[i].Store(nil)
		o.cancel()
		p.cbs[i].StopLeading()
		p.emit(i, cluster.Event{Kind: cluster.StoppedLeading, Term: o.term, Reason: reason, Time: at})
	}
	if ch := p.ended[epoch]; ch != nil {
		close(ch)
		delete(p.ended, epoch)
	}
}

// epochLife is the member lease's WhenLeader callback: it returns once the epoch has ended and
// the callbacks of every partition have returned, so that the member lease is released only
// then (E7).
func (p *Partitions) epochLife(ctx context.Context) error {
	epoch, _ := cluster.TermOf(ctx)
	p.mu.Lock()
	ended := p.ended[epoch]
	p.mu.Unlock()
	<-ctx.Done()
	if ended != nil {
		<-ended // closed by the StoppedLeading the Elector emits once it has cancelled ctx
	}
	for _, c := range p.cbs {
		_ = c.Wait(context.Background())
	}
	return nil
}

// memberView is what this instance knows of another member's lease.
type memberView struct {
	rec      cluster.Record
	found    bool
	seenAt   time.Time // when rec's revision (or its absence) was first seen
	readAt   time.Time // when it was last read
	read     bool      // read at least once
	dirty    bool      // its fence saw a change: read it again at once
	inRoster bool
	fence    *cluster.Elector
	// overTerm is the highest term its fence saw the lease at: every leadership of the
	// member's lease of a lower term has ended (E5, E6), whatever a later read shows (B3).
	overTerm uint64
}

// epochOver reports whether the leadership of member's lease of term epoch has ended, as far as
// this instance knows (D10): the lease was written since with a later term, or released at that
// term. A leadership ends before either write can be made (E5, E6, E7), so a partition claimed
// under it can be claimed again. A missing record counts as written since once it has been
// missing for the lease's duration on this instance's clock (E6).
func (p *Partitions) epochOver(member string, epoch uint64, now time.Time) bool {
	mv := p.members[member]
	switch {
	case mv == nil:
		return false
	case mv.overTerm > epoch:
		return true
	case !mv.read:
		return false
	case !mv.found:
		return now.Sub(mv.seenAt) >= p.l
	}
	return mv.rec.Term > epoch || (mv.rec.Term == epoch && mv.rec.Holder == "")
}

// readMember reads member's lease and records what it shows.
func (p *Partitions) readMember(ctx context.Context, member string) {
	rctx, cancel := context.WithTimeout(ctx, p.l-p.r)
	rec, err := p.lock.Get(rctx, memberLeaseName(p.name, member))
	cancel()
	found := err == nil
	if err != nil && !errors.Is(err, cluster.ErrNotFound) {
		return // E8: unknown, judged on the next read
	}
	now := time.Now()
	p.mu.Lock()
	defer p.mu.Unlock()
	mv := p.members[member]
	if mv == nil {
		mv = &memberView{}
		p.members[member] = mv
	}
	if !mv.read || mv.found != found || (found && rec.Revision != mv.rec.Revision) {
		mv.seenAt = now
	}
	mv.rec, mv.found, mv.read, mv.dirty, mv.readAt = rec, found, true, false, now
}

// live reports whether member holds its lease and had renewed it within the last within when
// this instance last read it, and no fence has seen that leadership end since: planned for
// (D5, D7). Judged at the last read, not now: a planner kept from reading by its own claims (a
// slow store, thousands of them) must not take the members it has not read lately for
// stopped, plan alone and claim their shares. A crashed member's end comes by its fence.
func (mv *memberView) live(id string, within time.Duration) bool {
	return mv != nil && mv.read && mv.found && mv.rec.Holder == id && mv.readAt.Sub(mv.seenAt) <= within && mv.overTerm <= mv.rec.Term
}

// gone reports whether member's lease is known to have left it: read released, taken over or
// another's, or its leadership seen ended by its fence. A lease not read yet, or missing (a
// member still joining), is not.
func (mv *memberView) gone(id string) bool {
	return (mv.read && mv.found && mv.rec.Holder != id) || (mv.overTerm > 0 && (!mv.found || mv.overTerm > mv.rec.Term))
}

// fenceGate lets a fence take over another member's lease only once it has expired (E6), so
// that the partitions claimed under it can be claimed again (D10). It never takes a released or
// missing lease: the member's own Elector does. It follows the member's record as it is while
// it refuses (FollowsExpiry), so that the fence judges its expiry.
type fenceGate struct{}

var _ cluster.Gate = fenceGate{}

func (fenceGate) Admit(rec *cluster.Record, expired bool) bool {
	return rec != nil && expired && rec.Holder != ""
}
func (fenceGate) Drop()               {}
func (fenceGate) FollowsExpiry() bool { return true }

// startFence starts the fence of member's lease: an Elector of the engine on that lease that
// takes it over once it has expired (E6) and releases it at once. Called with p.mu held.
func (p *Partitions) startFence(ctx context.Context, member string, mv *memberView) {
	var f *cluster.Elector
	f, err := cluster.NewElector(cluster.ElectorConfig{
		Lock: p.raw, LeaseName: memberLeaseName(p.name, member), LeaseDuration: p.l, RenewInterval: p.r,
		InstanceID: p.id, Logger: p.log, Gate: fenceGate{},
		Observer: func(ev cluster.Event) {
			switch ev.Kind {
			case cluster.BecameLeader:
				// Taken over: the member's leadership has ended. Released at once, so that
				// the member, if it lives on, takes its lease again within R.
				p.wg.Go(func() {
					sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), p.l)
					defer cancel()
					_ = f.Stop(sctx)
				})
				p.markDirty(member, f, ev.Term)
			case cluster.WatchedChange, cluster.ObservedLeader, cluster.ObservedRevision:
				p.markDirty(member, nil, ev.Term)
			}
		},
	})
	if err != nil {
		p.log.Warn("leasehold: partitions: fence", "member", member, "error", err)
		return
	}
	mv.fence = f
	if err := f.Start(ctx); err != nil {
		mv.fence = nil
		return
	}
	p.wg.Go(func() { <-f.Done() })
}

// markDirty tells the planner that member's lease changed to term, as its fence saw: a term
// later than any read ends the leaderships before it at once (epochOver), without the read
// that would otherwise come first on a crashed member's partitions' way to a new owner (D8);
// any other change is read again at once. ended, when not nil, is a fence that has ended its
// work.
func (p *Partitions) markDirty(member string, ended *cluster.Elector, term uint64) {
	p.mu.Lock()
	if mv := p.members[member]; mv != nil {
		if !mv.read || !mv.found || term > mv.rec.Term {
			mv.overTerm = max(mv.overTerm, term) // the roster's next read brings the record
		} else {
			mv.dirty = true
		}
		if ended != nil && mv.fence == ended {
			mv.fence = nil
		}
	}
	p.mu.Unlock()
	p.kick()
}

// stopFences stops every fence.
func (p *Partitions) stopFences(ctx context.Context) {
	p.mu.Lock()
	var fs []*cluster.Elector
	for _, mv := range p.members {
		if mv.fence != nil {
			fs = append(fs, mv.fence)
			mv.fence = nil
		}
	}
	p.mu.Unlock()
	for _, f := range fs {
		_ = f.Stop(ctx)
	}
}

// MemberLease returns, for rec, a record of a partition of the partitioned election lease,
// the name of the member lease it is held under and that lease's term (D10); ok is false when
// rec is released or names no member lease. The partition is owned while that member lease's
// record names rec.Holder at that term and has not expired: how a tool that does not run the
// election (leasehold status) tells an owned partition from one whose owner is gone, as a
// partition's record is written only when its owner changes.
func MemberLease(lease string, rec cluster.Record) (memberLease string, term uint64, ok bool) {
	if rec.Holder == "" {
		return "", 0, false
	}
	term, ok = partitionEpoch(rec.Session)
	if !ok {
		return "", 0, false
	}
	return memberLeaseName(lease, rec.Holder), term, true
}
