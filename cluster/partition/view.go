package partition

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/leasehold/leasehold/cluster"
	"github.com/leasehold/leasehold/internal/pace"
)

// partView is a partition's record as this instance last saw it.
type partView struct {
	rec   cluster.Record
	found bool
	read  bool   // seen at least once
	seen  uint64 // the highest term seen in it (E11)
	gen   int64  // how many sights were taken: a read that began at another is late
	// freeSince is when the plan first saw it without an owner, zero while it has one.
	freeSince time.Time
	seenAt    time.Time // when its revision was first seen (E6)
}

// setView records a sight of partition i's record, and asks for a plan when it changed. The
// view never goes back: a watched record older than the one seen (a watch behind this
// instance's own write or read) is not taken, nor is a read older than the one seen that began
// before the view last changed (a read that crossed this instance's own write). A read that
// began after, and says the record is older, is taken: a store that went back (B3). gen is
// the view's generation when the read began, -1 for a watched record, -2 for the answer to
// this instance's own write (always taken).
func (p *Partitions) setView(i int, rec cluster.Record, found bool, gen int64) {
	p.mu.Lock()
	v := &p.view[i]
	if found && v.read && v.found && !rec.NewerThan(v.rec) && rec.Revision != v.rec.Revision {
		if gen == -1 || (gen >= 0 && gen != v.gen) {
			p.mu.Unlock()
			return
		}
	}
	v.gen++
	changed := !v.read || v.found != found || (found && v.rec.Revision != rec.Revision)
	if changed {
		v.seenAt = time.Now()
	}
	v.rec, v.found, v.read = rec, found, true
	if found {
		v.seen = max(v.seen, rec.Term)
	}
	p.mu.Unlock()
	// Only a partition that became free calls for a plan at once (a release, reserved for
	// this instance or not); another member's claim changes counts, which the plan of the
	// next R sees: K claims in a burst (a crash, a start) then cost no K plans.
	if changed && (!found || rec.Holder == "") {
		p.kick()
	}
}

// watchRecords keeps every partition's view current: through the Lock's watch, one per record
// (a record changes only when its owner does, D10), or, without one, by reading them all every R.
func (p *Partitions) watchRecords(ctx context.Context) {
	if p.watcher == nil {
		p.wg.Go(func() { p.pollRecords(ctx) })
		return
	}
	for i := range p.names {
		p.wg.Go(func() { p.watchRecord(ctx, i) })
	}
}

func (p *Partitions) watchRecord(ctx context.Context, i int) {
	for ctx.Err() == nil {
		err := p.watcher.Watch(ctx, p.names[i], func(rec cluster.Record, err error) {
			switch {
			case err == nil:
				p.setView(i, rec, true, -1)
			case errors.Is(err, cluster.ErrNotFound):
				p.setView(i, cluster.Record{}, false, -1)
			case !errors.Is(err, cluster.ErrHeartbeat):
				p.troubles.note(p, "a watched record was not taken", i, err)
			}
		})
		if errors.Is(err, cluster.ErrWatchUnsupported) {
			// Polled instead, by the one goroutine that polls: started by the first to learn.
			if i == 0 {
				p.pollRecords(ctx)
			}
			return
		}
		if ctx.Err() != nil {
			return
		}
		p.troubles.note(p, "watch ended, read and watched again R later", i, err)
		// A watch that failed is a hint lost, never safety (E9): read once, watch again.
		p.readRecord(ctx, i)
		if !pace.Sleep(ctx, p.r) {
			return
		}
	}
}

// pollRecords reads every partition's record every R.
func (p *Partitions) pollRecords(ctx context.Context) {
	pace.Every(ctx, p.r, func() bool {
		for i := range p.names {
			if ctx.Err() != nil {
				return false
			}
			p.readRecord(ctx, i)
		}
		return true
	})
}

func (p *Partitions) readRecord(ctx context.Context, i int) {
	p.mu.Lock()
	gen := p.view[i].gen
	p.mu.Unlock()
	rctx, cancel := context.WithTimeout(ctx, p.l-p.r)
	defer cancel()
	rec, err := p.lock.Get(rctx, p.names[i])
	switch {
	case err == nil:
		p.setView(i, rec, true, gen)
	case errors.Is(err, cluster.ErrNotFound):
		p.setView(i, cluster.Record{}, false, gen)
	case ctx.Err() == nil:
		p.troubles.note(p, "read failed", i, err)
	}
}

// troubles logs what goes wrong with the partitions' watches, at most one line per R: a store
// that drops its connections ends every watch at once, thousands of them, and a line for each
// would bury every other line. Each line names one partition and its error, and counts the
// others since the line before.
type troubles struct {
	mu     sync.Mutex
	last   time.Time // of the last line
	others int       // not logged since
}

func (t *troubles) note(p *Partitions, what string, i int, err error) {
	t.mu.Lock()
	now := time.Now()
	if !t.last.IsZero() && now.Sub(t.last) < p.r {
		t.others++
		t.mu.Unlock()
		return
	}
	others := t.others
	t.last, t.others = now, 0
	t.mu.Unlock()
	p.log.Info("leasehold: partitions: "+what, "partition", i, "error", err, "othersSinceLastLine", others)
}
