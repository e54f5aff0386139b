package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"github.com/leasehold/leasehold/cluster"
	"github.com/leasehold/leasehold/internal/proctest"
)

// envTrace names the directory where leasehold workers trace (--trace): one file per worker,
// named after its lease and its ID, with a line per lock call (at its start and at its
// answer), per watch delivery and per Elector event, each stamped with proctest.Now. It is
// what explains a slow trial after the fact: whether the followers heard the release, when
// they attempted, and what the store answered.
const envTrace = "LEASEHOLD_BENCH_TRACE"

// tracer writes a worker's trace lines; a nil tracer writes nothing.
type tracer struct {
	mu sync.Mutex
	f  *os.File
}

// openTracer opens the worker's trace file when the driver asked for one.
func openTracer(w *proctest.Worker) (*tracer, error) {
	dir := os.Getenv(envTrace)
	if dir == "" {
		return nil, nil
	}
	f, err := os.OpenFile(filepath.Join(dir, w.Lease+"-"+w.ID+".log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", envTrace, err)
	}
	return &tracer{f: f}, nil
}

func (t *tracer) printf(format string, args ...any) {
	if t == nil {
		return
	}
	line := fmt.Sprintf("%d %s\n", proctest.Now(), fmt.Sprintf(format, args...))
	t.mu.Lock()
	_, _ = t.f.WriteString(line) // a trace that cannot be written only loses its lines
	t.mu.Unlock()
}

func (t *tracer) close() {
	if t != nil {
		t.f.Close()
	}
}

func traceRecord(r cluster.Record) string {
	return fmt.Sprintf("holder=%q term=%d rev=%s renewed=%s", r.Holder, r.Term, r.Revision, r.RenewedAt.Format("15:04:05.000000"))
}

// tracingLock traces the calls of the lock under it. It is a Watcher only in the way
// countingLock is: it forwards to the inner lock, which may answer ErrWatchUnsupported.
type tracingLock struct {
	countingLock
	t *tracer
}

func (c tracingLock) Get(ctx context.Context, name string) (cluster.Record, error) {
	c.t.printf("get")
	r, err := c.countingLock.Get(ctx, name)
	c.t.printf("get: %s err=%v", traceRecord(r), err)
	return r, err
}

func (c tracingLock) Create(ctx context.Context, name string, r cluster.Record) (cluster.Record, error) {
	c.t.printf("create %s", traceRecord(r))
	r, err := c.countingLock.Create(ctx, name, r)
	c.t.printf("create: %s err=%v", traceRecord(r), err)
	return r, err
}

func (c tracingLock) Update(ctx context.Context, name string, r cluster.Record) (cluster.Record, error) {
	c.t.printf("update %s", traceRecord(r))
	r, err := c.countingLock.Update(ctx, name, r)
	c.t.printf("update: %s err=%v", traceRecord(r), err)
	return r, err
}

func (c tracingLock) Watch(ctx context.Context, name string, fn func(cluster.Record, error)) error {
	c.t.printf("watch")
	err := c.countingLock.Watch(ctx, name, func(r cluster.Record, err error) {
		c.t.printf("pushed %s err=%v", traceRecord(r), err)
		fn(r, err)
	})
	c.t.printf("watch ended: %v", err)
	return err
}

// tracing wraps an Observer so that every event is traced before it is observed.
func (t *tracer) tracing(observe func(cluster.Event)) func(cluster.Event) {
	if t == nil {
		return observe
	}
	return func(ev cluster.Event) {
		t.printf("event %v holder=%q term=%d reason=%q took=%v err=%v", ev.Kind, ev.Holder, ev.Term, ev.Reason, ev.Duration, ev.Err)
		observe(ev)
	}
}
