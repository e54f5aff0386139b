package gocronlock_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/leasehold/leasehold/adapters/gocronlock"
	"github.com/leasehold/leasehold/cluster"
	"github.com/leasehold/leasehold/store/memory"
)

// An Elector lets a run through while its election leads, and only then.
func TestElectorIsLeader(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		el, err := cluster.NewElector(cluster.ElectorConfig{
			Lock: cluster.NewStoreLock(memory.New()), InstanceID: "a",
			LeaseDuration: fleetL, RenewInterval: fleetR, Logger: quietLog,
		})
		if err != nil {
			t.Fatal(err)
		}
		ge, err := gocronlock.NewElector(el)
		if err != nil {
			t.Fatal(err)
		}
		ctx := t.Context()
		if err := ge.IsLeader(ctx); !errors.Is(err, gocronlock.ErrNotLeader) {
			t.Fatalf("before Start: IsLeader = %v, want ErrNotLeader", err)
		}
		if err := el.Start(ctx); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if err := ge.IsLeader(ctx); err != nil {
			t.Fatalf("leading: IsLeader = %v", err)
		}
		cancelled, cancel := context.WithCancel(ctx)
		cancel()
		if err := ge.IsLeader(cancelled); !errors.Is(err, context.Canceled) {
			t.Errorf("ended context: IsLeader = %v, want context.Canceled", err)
		}
		if err := el.Stop(ctx); err != nil {
			t.Fatal(err)
		}
		if err := ge.IsLeader(ctx); !errors.Is(err, gocronlock.ErrNotLeader) {
			t.Errorf("after Stop: IsLeader = %v, want ErrNotLeader", err)
		}
	})
}

// IsLeader follows leasehold's deadline rule (E5): a leader whose renewal gets no answer
// stops letting runs through (L+R)/2 after the start of its last successful attempt, before
// any other instance may take the lease over, although that renewal is still in flight.
func TestElectorIsLeaderDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cut := &cutLock{Lock: cluster.NewStoreLock(memory.New()), hang: true}
		el, err := cluster.NewElector(cluster.ElectorConfig{
			Lock: cut, InstanceID: "a", LeaseDuration: fleetL, RenewInterval: fleetR, Logger: quietLog,
		})
		if err != nil {
			t.Fatal(err)
		}
		ge, err := gocronlock.NewElector(el)
		if err != nil {
			t.Fatal(err)
		}
		ctx := t.Context()
		start := time.Now()
		if err := el.Start(ctx); err != nil {
			t.Fatal(err)
		}
		synctest.Wait() // the first attempt, at the start, has won
		cut.cut.Store(true)
		deadline := start.Add((fleetL + fleetR) / 2)
		time.Sleep(time.Until(deadline) - time.Nanosecond)
		if err := ge.IsLeader(ctx); err != nil {
			t.Fatalf("1ns before the deadline: IsLeader = %v", err)
		}
		time.Sleep(time.Nanosecond)
		if err := ge.IsLeader(ctx); !errors.Is(err, gocronlock.ErrNotLeader) {
			t.Errorf("at the deadline: IsLeader = %v, want ErrNotLeader", err)
		}
		sctx, cancel := context.WithTimeout(ctx, fleetL)
		defer cancel()
		_ = el.Stop(sctx) // the store is cut off: the release fails
	})
}
