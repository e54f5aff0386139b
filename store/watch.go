package store

import (
	"context"
	"errors"
	"time"
)

// Watcher is implemented by a Store that can tell when a document changes (T8 of
// docs/design.md). Stores built on package store/driver implement it always; those whose
// backend cannot notify return ErrWatchUnsupported at once.
//
// Watch is a hint, never an answer: a caller that must know a document's state reads it. The
// Elector uses a watch only to act sooner and to ask less, and polls when the watch is down,
// silent or unsupported.
type Watcher interface {
	// Watch calls fn with the state of the document under key: once the watch is established
	// (the document as it is then, or Found false), then after changes to it, until ctx ends or
	// the watch fails. Every write made after the first call's state is followed by a call
	// with that write's state or a later one. Calls are made one at a time, on Watch's
	// goroutine, in the order of the store's writes: a call never delivers a state older than
	// the one before it. States may be skipped when writes follow each other closely (fn sees
	// the later one), and a call may repeat the state of the one before it.
	//
	// fn must return quickly: the watch waits for it. The Doc it is given is its own.
	//
	// Watch returns an error, never nil: one wrapping ctx's error when ctx ended, or the
	// failure that ended the watch (a lost connection, a closed store), or
	// ErrWatchUnsupported. The caller may watch again.
	Watch(ctx context.Context, key string, fn func(Change)) error
}

// Change is the state of a watched document, or a heartbeat.
type Change struct {
	Found bool           // whether a document exists under the key
	Doc   map[string]any // the document, in normalized form; nil when Found is false

	// Heartbeat, when true, carries no state (Found and Doc are zero): the watch's connection
	// answered the server just now, so a change written before this call's moment minus the
	// connection's delay has been delivered. A watch asked for heartbeats (WithHeartbeat)
	// delivers one at least every interval while its connection is alive, and none while the
	// connection is silent: a caller that has heard nothing for longer knows not to trust it.
	Heartbeat bool
}

type heartbeatKey struct{}

// WithHeartbeat asks the watches given ctx to prove they are alive at least every d, by a
// Change with Heartbeat set (or a change of the document). A watch that cannot is not wrong:
// its caller then hears only changes, and treats a silence as it would without heartbeats.
func WithHeartbeat(ctx context.Context, d time.Duration) context.Context {
	return context.WithValue(ctx, heartbeatKey{}, d)
}

// HeartbeatEvery returns the interval WithHeartbeat asked of ctx's watches, 0 for none. A
// backend's Watch reads it to know how often to prove its connection alive.
func HeartbeatEvery(ctx context.Context) time.Duration {
	d, _ := ctx.Value(heartbeatKey{}).(time.Duration)
	return d
}

// ErrWatchUnsupported means the store's backend cannot notify changes; a caller polls instead.
var ErrWatchUnsupported = errors.New("store: watch not supported")

// Watch watches key in s when s implements Watcher, and returns an error wrapping
// ErrWatchUnsupported otherwise.
func Watch(ctx context.Context, s Store, key string, fn func(Change)) error {
	if w, ok := s.(Watcher); ok {
		return w.Watch(ctx, key, fn)
	}
	return &KeyError{Op: "watch", Key: key, Err: ErrWatchUnsupported}
}
