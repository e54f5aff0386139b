package cluster

import (
	"context"
	"errors"
	"fmt"

	"github.com/leasehold/leasehold/store"
)

// Watcher is implemented by a Lock that can tell when a record changes. An Elector over such
// a Lock learns of a release or a takeover the moment it happens instead of at its next poll,
// and sends no periodic read while the watch is healthy (E9). A watch is a hint: every safety
// rule holds when it is late, silent, repeated or down.
type Watcher interface {
	// Watch calls fn with the record named name once the watch is established, then after
	// changes to it, until ctx ends or the watch fails; one call at a time, in the order of
	// the record's writes, states possibly skipped or repeated (store.Watcher's rules, T8).
	// fn's error is nil for a record, wraps ErrNotFound when there is none, says why for a
	// record that cannot be read (E8), and is ErrHeartbeat, with a zero Record, when the watch
	// only proves it is alive (asked by store.WithHeartbeat on ctx). fn must return quickly.
	//
	// Watch returns an error, never nil: one wrapping ctx's error when ctx ended, the failure
	// that ended the watch, or one wrapping ErrWatchUnsupported when the Lock's backend cannot
	// notify (or is not allowed to: a Kubernetes Role without the watch verb).
	Watch(ctx context.Context, name string, fn func(Record, error)) error
}

// HeartbeatWatcher is implemented by a Watcher that says whether its watch sends the
// heartbeats its caller asks for (store.WithHeartbeat); a Watcher that does not implement it
// is taken to send them. A watch that cannot (a Kubernetes watch has no heartbeat) proves it
// is alive only by the changes it delivers, among them the leader's renewals, one every R:
// its followers trust it for R + R/2 after the last of them rather than R, so that a renewal
// may come up to R/2 late before they read, as a heartbeat may (E9).
type HeartbeatWatcher interface {
	Watcher
	// WatchHeartbeats reports whether Watch sends the heartbeats asked of it.
	WatchHeartbeats() bool
}

// ErrHeartbeat is what a watch's fn gets, with a zero Record, when the watch proves it is
// alive without a change: its connection answered just now. It is not a failure.
var ErrHeartbeat = errors.New("cluster: lease watch heartbeat")

// ErrWatchUnsupported means a Lock cannot watch its records; an Elector over it polls.
var ErrWatchUnsupported = errors.New("cluster: lease watch not supported")

var _ Watcher = storeLock{}

func (l storeLock) Watch(ctx context.Context, name string, fn func(Record, error)) error {
	key := storeKeyPrefix + name
	err := store.Watch(ctx, l.s, key, func(c store.Change) {
		if c.Heartbeat {
			fn(Record{}, ErrHeartbeat)
			return
		}
		if !c.Found {
			fn(Record{}, fmt.Errorf("%w: %q", ErrNotFound, key))
			return
		}
		fn(decodeRecord(key, c.Doc))
	})
	if errors.Is(err, store.ErrWatchUnsupported) {
		return fmt.Errorf("%w: %w", ErrWatchUnsupported, err)
	}
	return err
}
