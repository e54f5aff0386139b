package cluster

import (
	"context"
	"testing"
	"time"

	"github.com/leasehold/leasehold/store/memory"
)

// M2, E9: a resign request carries the asker's wall time, the last key of the order by which a
// watch drops a change not newer than the newest record known. A request written on a record
// whose pending request came from a clock an hour ahead (or written by an asker whose clock
// jumped back an hour) must still order after it: else every follower's watch dropped it as
// stale, and counted the revision as first seen only at its next read (E6), later than it was
// written.
func TestM2RequestOrdersAfterAnEarlierRequestFromAClockAhead(t *testing.T) {
	ctx := context.Background()
	ahead := time.Now().Add(time.Hour).UTC()
	held := func(t *testing.T) (Lock, Record) {
		lock := NewStoreLock(memory.New())
		now := time.Now().UTC()
		rec, err := lock.Create(ctx, "leader", Record{Holder: "a", Session: "s", Term: 3, AcquiredAt: now, RenewedAt: now, Duration: 15 * time.Second,
			ResignRequested: ahead, NextHolder: "x", Preempt: true, NextPriority: 1})
		if err != nil {
			t.Fatal(err)
		}
		return lock, rec
	}
	t.Run("Resign", func(t *testing.T) {
		lock, before := held(t)
		written, err := Resign(ctx, lock, "leader", "b")
		if err != nil {
			t.Fatal(err)
		}
		if !newer(written, before) {
			t.Fatalf("request written at %v on one pending since %v: not newer, a watch drops it", written.ResignRequested, before.ResignRequested)
		}
	})
	t.Run("preemption", func(t *testing.T) {
		lock, before := held(t)
		e, err := NewElector(ElectorConfig{Lock: lock, InstanceID: "b", Priority: 2, Logger: quietLogger()})
		if err != nil {
			t.Fatal(err)
		}
		written, _ := e.ask(ctx, before, time.Now())
		if written.NextHolder != "b" {
			t.Fatalf("preemption request not written: %+v", written)
		}
		if !newer(written, before) {
			t.Fatalf("request written at %v on one pending since %v: not newer, a watch drops it", written.ResignRequested, before.ResignRequested)
		}
	})
}
