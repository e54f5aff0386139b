package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/leasehold/leasehold/cluster"
)

// watchLine is one line of status --watch --json: the lease's status after a change, and when
// this host read it.
type watchLine struct {
	ObservedAt time.Time `json:"observedAt"`
	leaseStatus
}

// watchStatus is status --watch: one line per change of the lease's holder, term or pending
// resign, as
// cluster.Observe delivers them (O1), until SIGINT or SIGTERM, which exit 0. A failed read is
// logged and the watch goes on.
func watchStatus(f *commonFlags, asJSON bool, interval, timeout time.Duration, stdout, stderr io.Writer) (int, error) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	log := f.logger(stderr)
	openCtx, cancelOpen := context.WithTimeout(ctx, timeout)
	r, err := newLeaseReader(openCtx, f, statusUsage)
	cancelOpen()
	if err != nil {
		if ctx.Err() != nil {
			return exitOK, nil
		}
		return 0, err
	}
	lock := &watchLock{f: f, r: r}
	ctx, cancel := context.WithCancel(ctx)
	changes, err := cluster.Observe(ctx, cluster.ObserveConfig{
		Lock: lock, LeaseName: r.lease, Interval: interval, Timeout: timeout,
		OnError: func(err error) {
			log.Warn("leasehold: cannot read the lease: reading again", "lease", r.lease, "in", interval, "error", err)
		},
	})
	if err != nil {
		cancel()
		_ = lock.close(context.Background())
		return 0, err
	}
	defer func() {
		cancel()
		for range changes { // the observer has returned once its channel is closed: close is safe
		}
		_ = lock.close(context.Background())
	}()
	enc := json.NewEncoder(stdout)
	for rec := range changes {
		now := time.Now()
		st := leaseStatus{Lease: r.lease, Store: r.where, State: "missing"}
		if rec.Revision != "" { // a Lock's records always have one; the missing record has none
			st = describeRecord(r.lease, r.where, rec, now)
		}
		if asJSON {
			err = enc.Encode(watchLine{ObservedAt: now.UTC(), leaseStatus: st})
		} else {
			err = printChange(stdout, now, st)
		}
		if err != nil {
			return 0, fmt.Errorf("status --watch: %w", err)
		}
	}
	return exitOK, nil
}

// printChange prints st on one line: the time it was read, the state, then the holder and the
// term when there are some, the holder's priority when not 0 and "unhealthy" when it says so,
// and a pending resign with the instance it names (and that instance's priority, when it
// preempts the holder).
func printChange(w io.Writer, at time.Time, st leaseStatus) error {
	line := at.UTC().Format("2006-01-02T15:04:05.000Z07:00") + " " + st.State
	if st.Holder != "" {
		line += " holder=" + st.Holder
	}
	if st.Exists {
		line += fmt.Sprintf(" term=%d", st.Term)
	}
	if st.Value != "" {
		line += " value=" + st.Value
	}
	if st.Priority != 0 {
		line += fmt.Sprintf(" priority=%d", st.Priority)
	}
	if st.Unhealthy {
		line += " unhealthy"
	}
	if st.ResignRequested != nil {
		line += " resign-requested"
	}
	if st.NextHolder != "" {
		line += " next=" + st.NextHolder
	}
	if st.Preempt {
		line += fmt.Sprintf(" next-priority=%d", *st.NextPriority)
	}
	_, err := fmt.Fprintln(w, line)
	return err
}

// watchLock is the Lock status --watch reads through. A file store whose file did not exist
// as the watch began is opened once the file appears: status only reads, so it never creates
// the file (see absentStore), yet a watch begun before the first run must see that run's
// lease. Only the observer's goroutine calls Get; close runs once it has returned.
type watchLock struct {
	f *commonFlags
	r *leaseReader
}

var errReadOnly = errors.New("leasehold: the lease is only read")

func (l *watchLock) Get(ctx context.Context, name string) (cluster.Record, error) {
	if _, absent := l.r.lock.(absentLock); absent && !absentStore(l.f) {
		r, err := newLeaseReader(ctx, l.f, statusUsage)
		if err != nil {
			return cluster.Record{}, err
		}
		l.r = r // the absent store's reader has nothing to close
	}
	return l.r.lock.Get(ctx, name)
}

func (l *watchLock) Create(context.Context, string, cluster.Record) (cluster.Record, error) {
	return cluster.Record{}, errReadOnly
}

func (l *watchLock) Update(context.Context, string, cluster.Record) (cluster.Record, error) {
	return cluster.Record{}, errReadOnly
}

func (l *watchLock) close(ctx context.Context) error { return l.r.close(ctx) }
