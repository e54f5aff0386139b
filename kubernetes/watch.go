package kubernetes

import (
	"context"
	"errors"
	"fmt"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/leasehold/leasehold/cluster"
)

var _ cluster.HeartbeatWatcher = (*leaseLock)(nil)

// WatchHeartbeats says that the Lease watch sends no heartbeats (cluster.HeartbeatWatcher): a
// client cannot ask a Kubernetes watch to prove it is alive (the BOOKMARK events it may ask
// for come about once a minute, for R of seconds), so the Elector takes the leader's renewals,
// one every R, for the proof, and trusts the watch R + R/2 after the last (E9).
func (l *leaseLock) WatchHeartbeats() bool { return false }

// Watch follows the Lease name (cluster.Watcher, T8). It gets the Lease for its state and
// resourceVersion, opens a watch on that one Lease (field selector metadata.name) from that
// resourceVersion, and only once the API server has accepted the watch calls fn with the
// state it got (an error wrapping cluster.ErrNotFound when there is no Lease), then with each
// state the watch reports: ADDED and MODIFIED are the Lease's record, DELETED an error wrapping
// cluster.ErrNotFound. A Lease that does not fit a record is an error naming its field.
//
// It returns an error wrapping ctx's error when ctx ends; an error when the server closes the
// watch or sends an ERROR event (410 Gone once the resourceVersion is too old): the caller
// watches again, and the new watch begins with the current state; and an error wrapping
// cluster.ErrWatchUnsupported when the API server refuses the watch (403 Forbidden: the Role
// lacks the optional watch verb). The Lock's get, create and update work without that verb.
//
// The request timeout bounds the get and the opening of the watch, not the watch itself.
func (l *leaseLock) Watch(ctx context.Context, name string, fn func(cluster.Record, error)) error {
	first, firstErr, rv, err := l.watchStart(ctx, name)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	w, err := l.openWatch(ctx, cancel, name, rv)
	if err != nil {
		return err
	}
	defer w.Stop()
	fn(first, firstErr)
	for {
		select {
		case <-ctx.Done():
			return l.fail("watch", name, ctx.Err())
		case ev, ok := <-w.ResultChan():
			if !ok {
				if err := ctx.Err(); err != nil {
					return l.fail("watch", name, err)
				}
				return l.fail("watch", name, errors.New("the API server closed the watch"))
			}
			if err := l.deliver(name, ev, fn); err != nil {
				return err
			}
		}
	}
}

// watchStart gets the Lease: the first state to deliver (a record, or an error wrapping
// ErrNotFound or saying why the Lease does not fit) and the resourceVersion to watch from ("",
// the most recent, when there is no Lease: a Lease created after the get is then reported as
// ADDED). err is a failed get: the watch does not start.
func (l *leaseLock) watchStart(ctx context.Context, name string) (first cluster.Record, firstErr error, rv string, err error) {
	gctx, cancel := l.bound(ctx)
	defer cancel()
	lease, err := l.client.Get(gctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return cluster.Record{}, l.wrap("watch", name, err), "", nil
	case err != nil:
		if ctx.Err() != nil {
			return cluster.Record{}, nil, "", l.fail("watch", name, ctx.Err())
		}
		return cluster.Record{}, nil, "", l.wrap("watch", name, err)
	}
	l.remember(lease)
	first, firstErr = l.record(lease)
	return first, firstErr, lease.ResourceVersion, nil
}

// openWatch opens the watch from rv on ctx, which the stream lives on: cancel is ctx's cancel
// function, called when the opening takes longer than the request timeout.
func (l *leaseLock) openWatch(ctx context.Context, cancel context.CancelFunc, name, rv string) (watch.Interface, error) {
	timer := time.AfterFunc(max(l.timeout, 0), cancel)
	if l.timeout <= 0 {
		timer.Stop()
	}
	w, err := l.client.Watch(ctx, metav1.ListOptions{
		FieldSelector:   fields.OneTermEqualSelector("metadata.name", name).String(),
		ResourceVersion: rv,
	})
	if l.timeout > 0 && !timer.Stop() {
		// The timer fired: the opening was cut short, and ctx is cancelled.
		if err == nil {
			w.Stop()
		}
		return nil, l.fail("watch", name, fmt.Errorf("the API server did not open the watch within %v", l.timeout))
	}
	switch {
	case err == nil:
		return w, nil
	case ctx.Err() != nil:
		return nil, l.fail("watch", name, ctx.Err())
	case apierrors.IsForbidden(err):
		return nil, fmt.Errorf("%w: %w", cluster.ErrWatchUnsupported, l.fail("watch", name,
			fmt.Errorf("%w (watching is optional: grant watch on leases.coordination.k8s.io in namespace %q to learn of changes at once instead of at the next attempt)", err, l.namespace)))
	}
	return nil, l.wrap("watch", name, err)
}

// deliver hands one event of the watch to fn; an ERROR event, or an object that is not the
// Lease watched, ends the watch with an error.
func (l *leaseLock) deliver(name string, ev watch.Event, fn func(cluster.Record, error)) error {
	switch ev.Type {
	case watch.Bookmark:
		return nil
	case watch.Error:
		err := apierrors.FromObject(ev.Object)
		if apierrors.IsGone(err) || apierrors.IsResourceExpired(err) {
			return l.fail("watch", name, fmt.Errorf("the watch's resourceVersion is too old (%w): watch again", err))
		}
		return l.fail("watch", name, fmt.Errorf("error event: %w", err))
	}
	lease, ok := ev.Object.(*coordinationv1.Lease)
	if !ok {
		return l.fail("watch", name, fmt.Errorf("%s event with a %T, want a Lease", ev.Type, ev.Object))
	}
	if lease.Name != name {
		return l.fail("watch", name, fmt.Errorf("%s event for Lease %q", ev.Type, lease.Name))
	}
	switch ev.Type {
	case watch.Added, watch.Modified:
		l.remember(lease)
		fn(l.record(lease))
	case watch.Deleted:
		fn(cluster.Record{}, fmt.Errorf("%w: %w", cluster.ErrNotFound, l.fail("watch", name, errors.New("the Lease was deleted"))))
	default:
		return l.fail("watch", name, fmt.Errorf("unknown event type %q", ev.Type))
	}
	return nil
}
