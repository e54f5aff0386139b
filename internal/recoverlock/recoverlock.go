// Package recoverlock turns a panic of a lease Lock into an error, so that a faulty backend
// never takes the process down (E8). The engine's Elector, Observe, Leader and Resign and the
// partitions all wrap their Lock in it. It is generic over the record type because it sits
// below package cluster, which defines the record and imports it.
package recoverlock

import (
	"context"
	"fmt"
)

// Store is a Lock's methods over its record type R: cluster.Lock is a Store[cluster.Record].
type Store[R any] interface {
	Get(ctx context.Context, name string) (R, error)
	Create(ctx context.Context, name string, r R) (R, error)
	Update(ctx context.Context, name string, r R) (R, error)
}

// Lock calls Store and returns a panic of its calls as an error naming Pkg and the lease.
type Lock[R any] struct {
	Store Store[R]
	// Pkg is the package the error comes out of, the first word of its message, as of every
	// other error that package returns.
	Pkg string
}

func (l Lock[R]) Get(ctx context.Context, name string) (r R, err error) {
	defer l.recoverInto(&err, name)
	return l.Store.Get(ctx, name)
}

func (l Lock[R]) Create(ctx context.Context, name string, rec R) (r R, err error) {
	defer l.recoverInto(&err, name)
	return l.Store.Create(ctx, name, rec)
}

func (l Lock[R]) Update(ctx context.Context, name string, rec R) (r R, err error) {
	defer l.recoverInto(&err, name)
	return l.Store.Update(ctx, name, rec)
}

func (l Lock[R]) recoverInto(err *error, name string) {
	if p := recover(); p != nil {
		*err = fmt.Errorf("%s: lease %q: lock panicked: %v", l.Pkg, name, p)
	}
}
