package cluster

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/leasehold/leasehold/internal/leaseconf"
)

// ObserveConfig configures Observe.
type ObserveConfig struct {
	Lock      Lock
	LeaseName string        // default DefaultLeaseName
	Interval  time.Duration // time between two reads, start to start; default DefaultRenewInterval
	// Timeout bounds each read; zero leaves only ctx to bound it. A read that times out is a
	// failed read like any other.
	Timeout time.Duration
	// OnError, when set, receives the error of each failed read, on the observer's goroutine:
	// it must return quickly. A failed read delivers nothing; the next read is at its usual time.
	OnError func(error)
}

// Observe follows the lease cfg.LeaseName in cfg.Lock without taking part in its election (O1):
// it never writes, so it needs no instance ID and cannot become the leader. It reads the record
// at once, then every Interval, and delivers on the returned channel the record as first read,
// then the record each time its holder, its term or its pending resign (ResignPending, and
// then the NextHolder it names) differs from the one delivered last. A renewal (same holder,
// same term, same request) is not delivered. A missing record is delivered as the zero
// Record (empty Revision); a released one has an empty Holder and keeps its Term.
//
// The channel is unbuffered: the observer reads again only once the record it read has been
// received, so a receiver that is slow misses intermediate holders, never the latest one.
//
// Cancelling ctx ends the observer: a read under way is cancelled (through its context), a
// delivery under way is dropped, the channel is closed, and the observer's goroutine has
// returned once the receiver has seen the close. Observe itself never blocks.
//
// Changes are seen by reading the record: what was held and released between two reads is not
// seen. Observe judges nothing by the record's timestamps (E6): a record whose holder crashed
// stays delivered as held until another instance takes the lease over.
func Observe(ctx context.Context, cfg ObserveConfig) (<-chan Record, error) {
	if cfg.Lock == nil {
		return nil, errors.New("cluster: ObserveConfig.Lock is nil")
	}
	cfg.LeaseName = leaseconf.LeaseName(cfg.LeaseName)
	if cfg.Interval < 0 {
		return nil, fmt.Errorf("cluster: lease %q: ObserveConfig.Interval %v must be positive", cfg.LeaseName, cfg.Interval)
	}
	if cfg.Timeout < 0 {
		return nil, fmt.Errorf("cluster: lease %q: ObserveConfig.Timeout %v must not be negative", cfg.LeaseName, cfg.Timeout)
	}
	if cfg.Interval == 0 {
		cfg.Interval = DefaultRenewInterval
	}
	out := make(chan Record)
	o := &leaseObserver{cfg: cfg, lock: recovering(cfg.Lock), wait: pollEvery(cfg.Interval)}
	go o.run(ctx, out)
	return out, nil
}

type leaseObserver struct {
	cfg  ObserveConfig
	lock Lock
	wait waitFunc
}

// waitFunc returns once the record may have changed since the read that started at last, or
// with ctx's error once ctx ends. Observe polls (pollEvery); a Lock able to notify changes can
// end the wait as soon as the record changes, with nothing else in the observer to change.
type waitFunc func(ctx context.Context, last time.Time) error

// pollEvery waits until interval after the start of the last read.
func pollEvery(interval time.Duration) waitFunc {
	return func(ctx context.Context, last time.Time) error {
		d := time.Until(last.Add(interval))
		if d <= 0 {
			return ctx.Err()
		}
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func (o *leaseObserver) run(ctx context.Context, out chan<- Record) {
	defer close(out)
	var (
		last      Record
		delivered bool
	)
	for {
		start := time.Now()
		rec, err := o.read(ctx)
		if ctx.Err() != nil {
			return
		}
		switch {
		case err != nil:
			if o.cfg.OnError != nil {
				o.cfg.OnError(err)
			}
		case !delivered || rec.Holder != last.Holder || rec.Term != last.Term || resignChanged(rec, last) || rankChanged(rec, last):
			select {
			case out <- rec:
				last, delivered = rec, true
			case <-ctx.Done():
				return
			}
		}
		if o.wait(ctx, start) != nil {
			return
		}
	}
}

// read returns the record, the zero Record when there is none.
func (o *leaseObserver) read(ctx context.Context) (Record, error) {
	if o.cfg.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, o.cfg.Timeout)
		defer cancel()
	}
	rec, err := o.lock.Get(ctx, o.cfg.LeaseName)
	if errors.Is(err, ErrNotFound) {
		return Record{}, nil
	}
	if err != nil {
		return Record{}, fmt.Errorf("cluster: lease %q: observe: %w", o.cfg.LeaseName, err)
	}
	return rec, nil
}

// rankChanged reports whether the holder's priority or health changed within its term (Q1,
// U2): a leader that starts or stops reporting itself unhealthy keeps its term.
func rankChanged(rec, last Record) bool {
	p, u := rec.CurrentPriority()
	lp, lu := last.CurrentPriority()
	return p != lp || u != lu
}

// resignChanged reports whether a resign request appeared, went or changed between last and
// rec: status --watch shows a request the holder has not acted on yet.
func resignChanged(rec, last Record) bool {
	pending := ResignPending(rec)
	if pending != ResignPending(last) {
		return true
	}
	return pending && (!rec.ResignRequested.Equal(last.ResignRequested) || rec.NextHolder != last.NextHolder)
}
