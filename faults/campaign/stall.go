package campaign

import (
	"context"
	"time"

	"github.com/leasehold/leasehold/internal/proctest"
	"github.com/leasehold/leasehold/internal/storecluster"
)

// A cluster that answered again after a member's fault may stall afterwards: on a loaded
// host, a raft leader whose loop stops for half a second holds every client's request
// meanwhile (etcd logs it as "leader failed to send out heartbeat on time"). The instances can lead again only
// once the store answers, so the takeover after a member's fault is timed from the store's
// last return: from StoreBack, or from the end of a stall after it (effectiveBack). The runner
// probes the cluster (storecluster.Prober) from StoreBack to the next fault, and a probe that
// takes longer than the slack, or fails, is a stall from its start to its answer. It probes it
// through a fault of the leader (a kill, a pause, a partition) as well, from the fault's pick
// to the takeover: a takeover across a stall is timed from the stall's end (stalledTakeover).

// stallEvery is the time between two probes.
const stallEvery = 50 * time.Millisecond

// stallWatch probes a cluster until stopped, and records its stalls: its goroutine writes
// them, stop reads them once the goroutine has returned.
type stallWatch struct {
	cancel context.CancelFunc
	done   chan struct{}
	stalls [][2]int64
}

// watchStalls starts probing p every interval; a probe slower than slack on the clock now, or
// failed, is a stall.
func watchStalls(ctx context.Context, p storecluster.Prober, slack, every time.Duration, now func() int64) *stallWatch {
	ctx, cancel := context.WithCancel(ctx)
	w := &stallWatch{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(w.done)
		for ctx.Err() == nil {
			t0 := now()
			pctx, pcancel := context.WithTimeout(ctx, recoverTimeout)
			err := p.Probe(pctx)
			pcancel()
			t1 := now()
			// A probe the stop cut short is a stall only if it was slow already.
			if time.Duration(t1-t0) > slack || err != nil && ctx.Err() == nil {
				w.add(t0, t1)
			}
			select {
			case <-ctx.Done():
			case <-time.After(every):
			}
		}
	}()
	return w
}

// add records a stall, merged with the one before when no more than two probes apart.
func (w *stallWatch) add(from, to int64) {
	if n := len(w.stalls); n > 0 && from <= w.stalls[n-1][1]+int64(stallEvery)*2 {
		w.stalls[n-1][1] = max(w.stalls[n-1][1], to)
		return
	}
	w.stalls = append(w.stalls, [2]int64{from, to})
}

// stop ends the probes and returns the stalls.
func (w *stallWatch) stop() [][2]int64 {
	w.cancel()
	<-w.done
	return w.stalls
}

// effectiveBack is when the store answered again for a gap without a leader that ended at
// end: f.StoreBack, or the end of the last stall after it that began before end (end itself
// when that stall outlasted the gap: the fleet led again while the store was stalled).
func effectiveBack(f *Fault, end int64) int64 { return afterStalls(f.StoreBack, end, f.Stalls) }

// afterStalls is from, or the end of the last of stalls that began before end and ended after
// from (end itself when that stall outlasted end).
func afterStalls(from, end int64, stalls [][2]int64) int64 {
	for _, s := range stalls {
		if s[0] < end && s[1] > from {
			from = min(s[1], end)
		}
	}
	return from
}

// stalledTakeover measures t, a takeover after a fault of the leader measured from since to
// at (the next leader's lead line), from the end of a stall of the store in between instead,
// as a time without a leader after a member's fault is: a stall a moment after a failover
// held every instance's writes, and the next leader's with them.
func stalledTakeover(t *Takeover, since, at int64, stalls [][2]int64) {
	if back := afterStalls(since, at, stalls); back > since {
		t.Took = time.Duration(at - back)
		t.Since += ", then the end of a stall of the store"
	}
}

// startStalls probes the cluster from f's StoreBack until the next fault (endStalls), when it
// can be probed.
func (d *driver) startStalls(f *Fault) {
	p, ok := d.srv.Cluster.(storecluster.Prober)
	if !ok {
		return
	}
	d.stalls, d.stallsOf = watchStalls(d.ctx, p, d.o.Slack, stallEvery, proctest.Now), f.N
}

// endStalls stops the probes and gives their stalls to the fault they followed.
func (d *driver) endStalls() {
	if d.stalls == nil {
		return
	}
	stalls := d.stalls.stop()
	d.stalls = nil
	for i := range d.faults {
		if d.faults[i].N == d.stallsOf {
			d.faults[i].Stalls = stalls
		}
	}
}

// answering waits, at the end of the faults, until the cluster answers a probe within the
// slack, when it can be probed, so that the workers stop over a store that serves: a stop
// right after a member's fault had a release meet a member that did not answer yet, and fail
// through no fault of the election's. It gives up after settleTimeout, saying so.
func (d *driver) answering() {
	p, ok := d.srv.Cluster.(storecluster.Prober)
	if !ok {
		return
	}
	deadline := time.Now().Add(d.settleWait)
	for {
		ctx, cancel := context.WithTimeout(d.ctx, d.o.Slack)
		err := p.Probe(ctx)
		cancel()
		if err == nil {
			return
		}
		if d.ctx.Err() != nil || time.Now().After(deadline) {
			d.o.Logf("campaign %s: the cluster did not answer a probe within %v before the workers stopped: %v", d.o.Backend, d.o.Slack, err)
			return
		}
		select {
		case <-d.ctx.Done():
		case <-time.After(stallEvery):
		}
	}
}
