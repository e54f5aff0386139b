package partition

import (
	"context"
	"fmt"

	"github.com/leasehold/leasehold/cluster"
)

// recoverLock turns a panic of the Lock it wraps into an error, so that a faulty backend never
// takes the process down (E8), as an Elector's own Lock does.
type recoverLock struct{ cluster.Lock }

func (l recoverLock) Get(ctx context.Context, name string) (r cluster.Record, err error) {
	defer recoverInto(&err, name)
	return l.Lock.Get(ctx, name)
}

func (l recoverLock) Create(ctx context.Context, name string, rec cluster.Record) (r cluster.Record, err error) {
	defer recoverInto(&err, name)
	return l.Lock.Create(ctx, name, rec)
}

func (l recoverLock) Update(ctx context.Context, name string, rec cluster.Record) (r cluster.Record, err error) {
	defer recoverInto(&err, name)
	return l.Lock.Update(ctx, name, rec)
}

func recoverInto(err *error, name string) {
	if p := recover(); p != nil {
		*err = fmt.Errorf("partition: lease %q: lock panicked: %v", name, p)
	}
}

// newer says whether a was written after b, by the lease's own order, as the engine orders
// them: its term, then its renewal time (which every writer makes strictly increase across its
// writes, E9), then the time of a resign request (R1).
func newer(a, b cluster.Record) bool {
	if a.Term != b.Term {
		return a.Term > b.Term
	}
	if !a.RenewedAt.Equal(b.RenewedAt) {
		return a.RenewedAt.After(b.RenewedAt)
	}
	return a.ResignRequested.After(b.ResignRequested)
}
