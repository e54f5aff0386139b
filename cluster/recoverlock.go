package cluster

import (
	"context"
	"fmt"
)

// recoverLock turns a panic of the Lock it wraps into an error, so that a faulty backend never
// takes the process down (E8).
type recoverLock struct{ Lock }

func (l recoverLock) Get(ctx context.Context, name string) (r Record, err error) {
	defer recoverInto(&err, name)
	return l.Lock.Get(ctx, name)
}

func (l recoverLock) Create(ctx context.Context, name string, rec Record) (r Record, err error) {
	defer recoverInto(&err, name)
	return l.Lock.Create(ctx, name, rec)
}

func (l recoverLock) Update(ctx context.Context, name string, rec Record) (r Record, err error) {
	defer recoverInto(&err, name)
	return l.Lock.Update(ctx, name, rec)
}

func recoverInto(err *error, name string) {
	if p := recover(); p != nil {
		*err = fmt.Errorf("cluster: lease %q: lock panicked: %v", name, p)
	}
}
