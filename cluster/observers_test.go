package cluster_test

import (
	"context"
	"io"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/leasehold/leasehold/cluster"
	"github.com/leasehold/leasehold/store/memory"
)

func TestObserversFanOutInOrder(t *testing.T) {
	var got []string
	rec := func(name string) func(cluster.Event) {
		return func(ev cluster.Event) { got = append(got, name+":"+ev.Kind.String()) }
	}
	obs := cluster.Observers(rec("a"), nil, rec("b"))
	obs(cluster.Event{Kind: cluster.BecameLeader})
	obs(cluster.Event{Kind: cluster.StoppedLeading})
	want := []string{"a:became_leader", "b:became_leader", "a:stopped_leading", "b:stopped_leading"}
	if !slices.Equal(got, want) {
		t.Fatalf("events seen %v, want %v", got, want)
	}
}

func TestObserversNone(t *testing.T) {
	if cluster.Observers() != nil || cluster.Observers(nil, nil) != nil {
		t.Fatal("Observers with no observer must return nil (no observer)")
	}
	called := 0
	one := cluster.Observers(nil, func(cluster.Event) { called++ })
	one(cluster.Event{})
	if called != 1 {
		t.Fatalf("single observer called %d times, want 1", called)
	}
}

// Both observers of one Elector see its election events (E2: a lone instance creates the
// lease and leads; E7: Stop ends the leadership), in the same order.
func TestObserversOnElector(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		var a, b []cluster.EventKind
		e, err := cluster.NewElector(cluster.ElectorConfig{
			Lock: cluster.NewStoreLock(memory.New()), LeaseDuration: 3 * time.Second, RenewInterval: time.Second,
			InstanceID: "one", Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
			Observer: cluster.Observers(
				func(ev cluster.Event) { mu.Lock(); a = append(a, ev.Kind); mu.Unlock() },
				func(ev cluster.Event) { mu.Lock(); b = append(b, ev.Kind); mu.Unlock() },
			),
		})
		if err != nil {
			t.Fatal(err)
		}
		if err := e.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if err := e.Stop(context.Background()); err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		defer mu.Unlock()
		if !slices.Contains(a, cluster.BecameLeader) || !slices.Contains(a, cluster.StoppedLeading) {
			t.Fatalf("first observer saw %v, want became_leader and stopped_leading", a)
		}
		if !slices.Equal(a, b) {
			t.Fatalf("observers saw different events: %v and %v", a, b)
		}
	})
}
