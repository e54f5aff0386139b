// Package driver is the seam a store backend implements, and the helpers its authors share.
//
// A backend implements [Driver] and hands it to [New], which returns the [store.Store] users
// get. The store checks every call before the driver sees it (a context already ended, an
// empty key, a nil document, a condition without a field or with a value that does not encode
// to JSON), normalizes documents and condition values into the form encoding/json decodes into,
// and wraps the driver's errors with the operation and the key (T3 of docs/design.md). A
// driver therefore checks nothing of that, and returns the store package's sentinels (or its
// own errors) unwrapped.
//
// The store also holds every driver to T7, an answer either definite or unknown: a driver
// error that holds both a sentinel and the context's error (context.Canceled or
// DeadlineExceeded) is reported as an unknown outcome, the sentinel no longer reachable with
// errors.Is. The store cannot tell whether such a sentinel is the server's answer or a guess
// the interruption made (nats.go's KV Create answers "key exists" when its deadline cuts the
// read it makes after a failed first write), and an unknown outcome is never false.
//
// A backend registers itself with [store.Register], once, from init; see docs/design.md,
// "Adding a store backend".
package driver

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/leasehold/leasehold/store"
)

// Driver is a key-document store as a backend implements it, under the guarantees of the
// [Portable] store over it: ctx has not ended when a call starts, key is not empty, doc and
// fields are normalized (see [Normalize]) copies the driver may keep or change, and cond is
// nil or has a field and a normalized value. The answers follow the rules of store.Store
// (T1, T2, T7); errors are returned without the key, which the Portable store adds.
//
// A Driver that holds resources implements io.Closer; the Portable store's Close calls it.
type Driver interface {
	Get(ctx context.Context, key string) (map[string]any, error)
	Create(ctx context.Context, key string, doc map[string]any) error
	Patch(ctx context.Context, key string, fields map[string]any, cond *Condition) error
	Delete(ctx context.Context, key string, cond *Condition) error
}

// Condition is a store.Condition as a driver receives it: Field is not empty, and Value is in
// normalized form, so that it compares with reflect.DeepEqual to a decoded document's field.
type Condition struct {
	Field string
	Value any
}

// Portable is the store.Store over a Driver: the one place where calls are checked, documents
// normalized and errors wrapped with the key, so that every backend answers alike. Backends
// return it, or a type embedding it, from their constructors.
type Portable struct{ d Driver }

var _ store.Store = (*Portable)(nil)

// New returns the store.Store over d.
func New(d Driver) *Portable { return &Portable{d: d} }

// Get implements store.Store.
func (p *Portable) Get(ctx context.Context, key string) (map[string]any, error) {
	if err := checkCall(ctx, key); err != nil {
		return nil, WrapKey("get", key, err)
	}
	doc, err := p.d.Get(ctx, key)
	if err != nil {
		return nil, WrapKey("get", key, definiteOrUnknown(err))
	}
	return doc, nil
}

// Create implements store.Store.
func (p *Portable) Create(ctx context.Context, key string, doc map[string]any) error {
	n, err := checkDoc(ctx, key, doc)
	if err != nil {
		return WrapKey("create", key, err)
	}
	return WrapKey("create", key, definiteOrUnknown(p.d.Create(ctx, key, n)))
}

// Patch implements store.Store.
func (p *Portable) Patch(ctx context.Context, key string, fields map[string]any, cond *store.Condition) error {
	n, err := checkDoc(ctx, key, fields)
	if err != nil {
		return WrapKey("patch", key, err)
	}
	c, err := condition(cond)
	if err != nil {
		return WrapKey("patch", key, err)
	}
	return WrapKey("patch", key, definiteOrUnknown(p.d.Patch(ctx, key, n, c)))
}

// Delete implements store.Store.
func (p *Portable) Delete(ctx context.Context, key string, cond *store.Condition) error {
	if err := checkCall(ctx, key); err != nil {
		return WrapKey("delete", key, err)
	}
	c, err := condition(cond)
	if err != nil {
		return WrapKey("delete", key, err)
	}
	return WrapKey("delete", key, definiteOrUnknown(p.d.Delete(ctx, key, c)))
}

// Close closes the driver when it holds resources.
func (p *Portable) Close() error {
	if c, ok := p.d.(io.Closer); ok {
		return c.Close()
	}
	return nil
}

// checkCall returns the error an operation on key fails with before it starts: the context's
// when it has ended, so that an ended context changes nothing whatever the client library
// would do with it; ErrInvalid for an empty key.
func checkCall(ctx context.Context, key string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if key == "" {
		return fmt.Errorf("%w: empty key", store.ErrInvalid)
	}
	return nil
}

// checkDoc is checkCall, then the normalized copy of doc the driver is given.
func checkDoc(ctx context.Context, key string, doc map[string]any) (map[string]any, error) {
	if err := checkCall(ctx, key); err != nil {
		return nil, err
	}
	return NormalizeDoc(doc)
}

// condition returns cond as a driver receives it, or ErrInvalid for a condition without a
// field or whose value does not encode to JSON.
func condition(cond *store.Condition) (*Condition, error) {
	if cond == nil {
		return nil, nil
	}
	if cond.Field == "" {
		return nil, fmt.Errorf("%w: condition without a field", store.ErrInvalid)
	}
	v, err := Normalize(cond.Value)
	if err != nil {
		return nil, fmt.Errorf("condition on %q: %w", cond.Field, err)
	}
	return &Condition{Field: cond.Field, Value: v}, nil
}

// WrapKey returns err wrapped with the operation and the key, or nil when err is nil. Errors
// already wrapped with a key are returned as they are. Stores written without a Driver (test
// doubles, wrappers) use it to meet T3.
func WrapKey(op, key string, err error) error {
	if err == nil {
		return nil
	}
	var ke *store.KeyError
	if errors.As(err, &ke) {
		return err
	}
	return &store.KeyError{Op: op, Key: key, Err: err}
}

// Wrap joins a sentinel with a backend's native error so that both errors.Is(err, sentinel)
// and errors.As(err, &native) hold.
func Wrap(sentinel, native error) error {
	if native == nil {
		return sentinel
	}
	return &wrapped{sentinel: sentinel, native: native}
}

type wrapped struct{ sentinel, native error }

func (w *wrapped) Error() string   { return w.sentinel.Error() + ": " + w.native.Error() }
func (w *wrapped) Unwrap() []error { return []error{w.sentinel, w.native} }

// ContextError returns err with the context's error joined to it when ctx has ended, so that
// errors.Is finds context.Canceled or DeadlineExceeded whatever the client library reported
// for an operation its context interrupted. A definite answer (an error holding one of the
// store's sentinels) is returned as it is: the server gave it before the context ended, or the
// driver could not have told it, and joined with the context's error it would be both definite
// and unknown, which T7 forbids.
func ContextError(ctx context.Context, err error) error {
	if cerr := ctx.Err(); err != nil && cerr != nil && !errors.Is(err, cerr) && !isDefinite(err) {
		return fmt.Errorf("%w: %w", cerr, err)
	}
	return err
}

// isDefinite reports whether err holds one of the store's sentinels.
func isDefinite(err error) bool {
	return errors.Is(err, store.ErrNotFound) || errors.Is(err, store.ErrExists) ||
		errors.Is(err, store.ErrConditionFailed) || errors.Is(err, store.ErrInvalid)
}

// definiteOrUnknown returns a driver's error as the store answers it (T7): an error holding a
// sentinel and the context's error is an unknown outcome, in which the sentinel is no longer
// found by errors.Is; every other error is returned as it is.
func definiteOrUnknown(err error) error {
	if err == nil || !isDefinite(err) {
		return err
	}
	switch {
	case errors.Is(err, context.Canceled):
		return &unknownOutcome{ctx: context.Canceled, err: err}
	case errors.Is(err, context.DeadlineExceeded):
		return &unknownOutcome{ctx: context.DeadlineExceeded, err: err}
	}
	return err
}

// unknownOutcome is a driver's answer that held both a sentinel and the context's error. It
// unwraps to the context's error only; errors.As still finds the driver's own errors in it.
type unknownOutcome struct {
	ctx error // context.Canceled or context.DeadlineExceeded
	err error // the driver's answer
}

func (u *unknownOutcome) Error() string      { return "outcome unknown: " + u.err.Error() }
func (u *unknownOutcome) Unwrap() error      { return u.ctx }
func (u *unknownOutcome) As(target any) bool { return errors.As(u.err, target) }
