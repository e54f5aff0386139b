package cluster

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/leasehold/leasehold/store"
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
		if !written.NewerThan(before) {
			t.Fatalf("request written at %v on one pending since %v: not newer, a watch drops it", written.ResignRequested, before.ResignRequested)
		}
	})
	t.Run("preemption", func(t *testing.T) {
		lock, before := held(t)
		e, err := NewElector(ElectorConfig{Lock: lock, InstanceID: "b", Priority: 2, Logger: quietLogger()})
		if err != nil {
			t.Fatal(err)
		}
		written, _, _ := e.ask(ctx, before, time.Now())
		if written.NextHolder != "b" {
			t.Fatalf("preemption request not written: %+v", written)
		}
		if !written.NewerThan(before) {
			t.Fatalf("request written at %v on one pending since %v: not newer, a watch drops it", written.ResignRequested, before.ResignRequested)
		}
	})
}

// wallScenario runs three instances through a preemption, a crash of the leader and a stop of
// the next, each instance's wall clock moved by jumps (instance, when, by how much), and
// returns what every instance decided and when: its leaderships and failed attempts, with
// fake time, term and reason.
func wallScenario(t *testing.T, jumps []wallJump) []string {
	var out []string
	synctest.Test(t, func(t *testing.T) {
		mem := memory.New()
		begin := time.Now()
		var mu sync.Mutex
		var log []string
		electors := map[string]*Elector{}
		for _, id := range []string{"a", "b", "c"} {
			var st store.Store = mem
			if id == "b" {
				st = struct{ store.Store }{mem} // no watch: b reads every R (E1), so judges every R
			}
			cfg := ElectorConfig{
				Lock: NewStoreLock(st), LeaseName: "leader", InstanceID: id, Logger: quietLogger(),
				Observer: func(ev Event) {
					if ev.Kind != BecameLeader && ev.Kind != StoppedLeading && ev.Kind != AttemptFailed {
						// What the others saw, and when, may differ between two runs: at the
						// instant of a handover, a watch may deliver the release before the
						// takeover, or only the takeover.
						return
					}
					mu.Lock()
					defer mu.Unlock()
					log = append(log, fmt.Sprintf("%v %s %v holder=%q term=%d reason=%q", time.Since(begin), id, ev.Kind, ev.Holder, ev.Term, ev.Reason))
				},
			}
			if id == "b" {
				// Waits a second more than a for a crashed leader's record (E6): a takes it
				// over alone, rather than in a race with b decided by the scheduler.
				cfg.LeaseDuration = testL + time.Second
			}
			if id == "c" {
				// c outranks the others: once its window has passed it asks the holder to
				// hand over, a request that carries c's wall time (Q2).
				cfg.Priority, cfg.StabilityWindow = 1, testL
			}
			e, err := NewElector(cfg)
			if err != nil {
				t.Fatal(err)
			}
			electors[id] = e
		}
		type step struct {
			at time.Duration
			do func()
		}
		steps := []step{
			{0, func() { _ = electors["a"].Start(context.Background()) }},
			{1130 * time.Millisecond, func() { _ = electors["b"].Start(context.Background()) }},
			{2370 * time.Millisecond, func() { _ = electors["c"].Start(context.Background()) }},
			{61770 * time.Millisecond, func() { (&node{t: t, e: electors["c"]}).crash() }},
			{107430 * time.Millisecond, func() {
				for _, id := range []string{"a", "b"} {
					if electors[id].IsLeader() {
						_ = electors[id].Stop(context.Background()) // the other takes over at once (E7)
						return
					}
				}
			}},
		}
		for _, j := range jumps {
			steps = append(steps, step{j.at, func() { electors[j.id].wallSkew.Add(int64(j.by)) }})
		}
		slices.SortStableFunc(steps, func(x, y step) int { return int(x.at - y.at) })
		for _, st := range steps {
			time.Sleep(st.at - time.Since(begin))
			st.do()
			synctest.Wait()
		}
		time.Sleep(150*time.Second - time.Since(begin))
		synctest.Wait()
		for _, e := range electors {
			_ = e.Stop(context.Background())
		}
		mu.Lock()
		out = slices.Clone(log)
		mu.Unlock()
	})
	slices.Sort(out) // instances acting at one instant may log in either order
	return out
}

type wallJump struct {
	id string
	at time.Duration
	by time.Duration
}

// M2: a wall clock that jumps an hour forward or back changes no decision. The same scenario
// (c preempts a, then crashes while leading; the next leader stops) runs with every wall clock
// right, then with jumps on the holder, the asker and the followers before and while each
// step happens: every instance does the same thing at the same fake instant.
func TestM2WallClockJumpChangesNoDecision(t *testing.T) {
	want := wallScenario(t, nil)
	if len(want) < 6 {
		t.Fatalf("the scenario did too little:\n%s", lines(want))
	}
	if again := wallScenario(t, nil); !slices.Equal(again, want) {
		t.Fatalf("the scenario is not deterministic: a second run without jumps did\n%s\nand not\n%s", lines(minus(again, want)), lines(minus(want, again)))
	}
	for name, jumps := range map[string][]wallJump{
		"forward": {{"a", 500 * time.Millisecond, time.Hour}, {"c", 9 * time.Second, time.Hour}, {"b", 40 * time.Second, time.Hour}, {"a", 70 * time.Second, time.Hour}},
		"back":    {{"a", 500 * time.Millisecond, -time.Hour}, {"c", 9 * time.Second, -time.Hour}, {"b", 40 * time.Second, -time.Hour}, {"a", 70 * time.Second, -time.Hour}},
		"apart":   {{"c", 10 * time.Second, -time.Hour}, {"a", 12 * time.Second, time.Hour}, {"b", 50 * time.Second, -time.Hour}, {"c", 55 * time.Second, 2 * time.Hour}, {"a", 90 * time.Second, -2 * time.Hour}},
	} {
		t.Run(name, func(t *testing.T) {
			got := wallScenario(t, jumps)
			if !slices.Equal(got, want) {
				t.Errorf("with wall clock jumps %v the instances did\n%s\nand not, as without them,\n%s", jumps, lines(minus(got, want)), lines(minus(want, got)))
			}
		})
	}
}

// minus returns the lines of a not in b, as many times as a has more of them.
func minus(a, b []string) []string {
	n := map[string]int{}
	for _, s := range b {
		n[s]++
	}
	var out []string
	for _, s := range a {
		if n[s] > 0 {
			n[s]--
			continue
		}
		out = append(out, s)
	}
	return out
}

func lines(ss []string) string {
	var b []byte
	for _, s := range ss {
		b = append(b, "  "...)
		b = append(b, s...)
		b = append(b, '\n')
	}
	return string(b)
}
