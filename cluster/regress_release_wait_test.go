package cluster

import (
	"context"
	"reflect"
	"testing"
	"testing/synctest"
	"time"
)

// R2, E1, E3: an instance asked to hand over waits for its callbacks within one attempt's
// L - R, and when they take longer, its next attempt finds its record still its own and waits
// again. Meanwhile another instance takes the expired record over and releases it: the waiting
// instance takes nothing before its attempt ends, R after the release would be too early.
// (TestRandomFaults/L15s-R5s-ranked saw this at +14h27m: deregistered took 25.9 s.)
func TestRegressReleaseWaitOutlastsAnotherRelease(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t)
		a := w.node("a", 0, 0)
		a.e.WhenLeader(func(ctx context.Context) error {
			<-ctx.Done()
			return nil
		}, func() { time.Sleep(23 * time.Second) })
		a.start()
		w.At(sec(1))
		b := w.node("b", 0, 0).start()
		w.At(sec(3))
		w.resign("")
		// a stops leading at its attempt at 5 s; that attempt's successor waits from 5 s to
		// 15 s (E3), the next one from 15 s to 25 s. b first saw the request's revision at
		// 6 s and takes it over at 21 s, when it has not changed for L.
		w.At(sec(21))
		if got := w.times(b, BecameLeader); !reflect.DeepEqual(got, ds(sec(21))) {
			t.Fatalf("b became leader at %v; want 21s", got)
		}
		if err := b.e.Stop(context.Background()); err != nil {
			t.Fatal(err)
		}
		if rec := w.record(); rec["holder"] != "" {
			t.Fatalf("record after b's Stop: %v; want released", rec)
		}
		w.At(sec(25) - time.Nanosecond)
		if a.e.IsLeader() {
			t.Fatal("a leads while its attempt waits for its callbacks")
		}
		w.At(sec(25))
		if got := w.times(a, BecameLeader); !reflect.DeepEqual(got, ds(0, sec(25))) {
			t.Fatalf("a became leader at %v; want 0s and 25s, when its waiting attempt ends", got)
		}
	})
}

// The randomized test's liveness bound for the instance above: it counts from the end of the
// attempt that waits for the callbacks (R2, E1), not from the release by another, and from the
