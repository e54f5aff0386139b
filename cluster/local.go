package cluster

import (
	"context"
	"fmt"
	"log/slog"
	"sync/atomic"

	"github.com/leasehold/leasehold/internal/callbacks"
	"github.com/leasehold/leasehold/internal/termctx"
)

// Local is the cluster of a single instance: it leads from its creation until Stop, so fn
// runs at once. Applications without a cluster service use one.
type Local struct {
	id string
	cb *callbacks.Runner

	cancel  context.CancelFunc
	stopped atomic.Bool
}

var _ Cluster = (*Local)(nil)

// NewLocal returns a leading local cluster; id defaults to DefaultInstanceID().
func NewLocal(id string) *Local {
	if id == "" {
		id = DefaultInstanceID()
	}
	l := &Local{id: id}
	l.cb = callbacks.New(slog.Default().With("instance", id), l.IsLeader)
	ctx, cancel := context.WithCancel(termctx.With(context.Background(), 1))
	l.cancel = cancel
	l.cb.StartLeading(ctx)
	return l
}

// IsLeader reports true until Stop.
func (l *Local) IsLeader() bool { return !l.stopped.Load() }

// InstanceID returns the instance's identity.
func (l *Local) InstanceID() string { return l.id }

// WhenLeader registers fn and deregistered, with the guarantees of Cluster.WhenLeader: fn runs
// at once (its context carries term 1), deregistered when the registration is removed or the
// cluster stops.
func (l *Local) WhenLeader(fn LeaderFunc, deregistered func()) (remove func()) {
	if fn == nil {
		fn = func(context.Context) error { return nil }
	}
	return l.cb.Add(fn, deregistered)
}

// Stop ends the leadership: fn contexts are cancelled and Stop waits for every deregistered
// callback to return, or for ctx to end (then it returns an error). It must not be called from
// a callback, which it would wait for (see Cluster.WhenLeader).
func (l *Local) Stop(ctx context.Context) error {
	l.stopped.Store(true)
	l.cancel()
	l.cb.StopLeading()
	if err := l.cb.Wait(ctx); err != nil {
		return fmt.Errorf("cluster: local: stop: leader callbacks have not returned: %w", err)
	}
	return nil
}
