package cluster

import (
	"context"
	"fmt"
	"time"
)

// StopNotBefore is Stop for a leader that must keep the lease until t although its work may be
// done sooner: a job that must not run again elsewhere within its period, as ShedLock's
// lockAtLeastFor (C6). Until t the election goes on as before: the lease is renewed, IsLeader
// stays true and the fn contexts stay live, so no other instance can take the lease; at t,
// Stop, which releases it.
//
// There is nothing to hold when this instance does not lead, or stops leading before t (a
// failed renewal, the end of Start's context, another Stop): it then stops at once. If ctx
// ends before t, StopNotBefore returns ctx's error and the election goes on, leading and
// renewing: call Stop to end it. ctx bounds the Stop at t as it bounds Stop's.
//
// Like Stop, it must not be called from a WhenLeader callback: call it on a new goroutine.
func (e *Elector) StopNotBefore(ctx context.Context, t time.Time) error {
	// The leadership's context, not IsLeader polled: the election goroutine cancels it the
	// moment that leadership ends, and a renewal keeps it.
	if l := e.leading.Load(); l != nil && time.Until(l.deadline) > 0 {
		if d := time.Until(t); d > 0 {
			timer := time.NewTimer(d)
			defer timer.Stop()
			select {
			case <-timer.C:
			case <-l.ctx.Done():
			case <-ctx.Done():
				return fmt.Errorf("cluster: lease %q: stop not before %v: %w", e.name, t.Format(time.RFC3339Nano), ctx.Err())
			}
		}
	}
	return e.Stop(ctx)
}
