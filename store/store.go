// Package store defines the small key-document storage interface that backs an application's
// Registry, and the URL opener registry through which stores are opened.
//
// # Documents
//
// A document is a JSON object: map[string]any whose values are what encoding/json decodes into
// (string, float64, bool, nil, []any, map[string]any). Stores accept any value that encodes to
// JSON and return documents in that decoded form, so a document reads back the same from every
// store.
//
// # Conditions
//
// Patch and Delete take an optional [Condition]: the write happens only when the document's
// field equals the condition's value, compared as JSON values (1 == 1.0, "1" != 1), atomically
// with the write. A condition is always applied when given, whatever its value.
//
// # Errors
//
// Operations return the package's sentinel errors ([ErrNotFound], [ErrExists],
// [ErrConditionFailed], [ErrInvalid]) wrapped with the key in a [KeyError]; test them with
// errors.Is. A backend's native error stays reachable with errors.As.
//
// # Watches
//
// A store that implements [Watcher] tells when a document changes (T8 of docs/design.md). A
// watch is a hint: its caller reads when it must know. Asked with [WithHeartbeat], a watch also
// proves that it is alive: it delivers a [Change] with Heartbeat set at least every interval
// while its connection answers, and none while the connection is silent. A heartbeat is the
// server's answer on the connection the notifications come on, after the notifications it sent
// before it, so a heartbeat at t means that every write made before t, less the connection's
// delay, has been delivered; a caller that has heard nothing for longer than the interval
// knows not to trust the watch. Memory, file and SQLite send them by a ticker (an in-process
// or inotify watch cannot go half-open); Redis by PINGs on its Pub/Sub connection; PostgreSQL
// by round trips on its LISTEN connection; NATS by flushes (PING/PONG) of its connection; etcd
// by progress notifications on the watch's stream.
//
// # Backends
//
// A backend implements the seam of package store/driver, whose portable store checks every
// call, normalizes documents and wraps errors with the key, and registers itself with
// [Register].
package store

import (
	"context"
	"errors"
	"fmt"
)

// Store is a key-document store. Implementations are safe for concurrent use.
type Store interface {
	// Get returns the document stored under key, or ErrNotFound.
	Get(ctx context.Context, key string) (map[string]any, error)
	// Create stores doc under key if no document exists there, atomically; otherwise it
	// returns ErrExists and changes nothing. Of N concurrent creators, exactly one wins.
	Create(ctx context.Context, key string, doc map[string]any) error
	// Patch sets the given top-level fields of the document under key, leaving the others as
	// they are. With a non-nil cond, it writes only if the document's cond.Field equals
	// cond.Value, atomically, and returns ErrConditionFailed otherwise. It returns ErrNotFound
	// when no document exists under key.
	Patch(ctx context.Context, key string, fields map[string]any, cond *Condition) error
	// Delete removes the document under key, under the same condition rule as Patch. It returns
	// ErrNotFound when no document exists under key.
	Delete(ctx context.Context, key string, cond *Condition) error
}

// Condition guards a write: the document's top-level Field must equal Value, compared as JSON
// values.
type Condition struct {
	Field string
	Value any
}

// String describes the condition for error messages.
func (c *Condition) String() string {
	if c == nil {
		return "<none>"
	}
	return fmt.Sprintf("%s == %v", c.Field, c.Value)
}

var (
	// ErrNotFound means no document exists under the key.
	ErrNotFound = errors.New("store: not found")
	// ErrExists means Create found a document already stored under the key.
	ErrExists = errors.New("store: already exists")
	// ErrConditionFailed means the document did not meet the write's Condition.
	ErrConditionFailed = errors.New("store: condition failed")
	// ErrInvalid means the call's arguments are invalid (an empty key, a nil document, a value
	// that does not encode to JSON, a condition without a field).
	ErrInvalid = errors.New("store: invalid argument")
)

// KeyError wraps an operation's error with the key it concerns. errors.Is and errors.As see
// through it to the sentinel and to a backend's native error.
type KeyError struct {
	Op  string // "get", "create", "patch", "delete" or "watch"
	Key string
	Err error
}

func (e *KeyError) Error() string { return fmt.Sprintf("store: %s %q: %v", e.Op, e.Key, e.Err) }
func (e *KeyError) Unwrap() error { return e.Err }
