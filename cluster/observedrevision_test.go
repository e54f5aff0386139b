package cluster

import (
	"reflect"
	"testing"
	"testing/synctest"
)

// E6, E9: a follower emits ObservedRevision each time it counts a new revision of another
// holder's record as first seen: its first read, then each renewal, read by its attempts
// (polling) or brought by the watch. A crashed holder writes no more revisions, so none
// comes until the follower takes the record over: what tells a try-acquire (C5) a live holder
// from a dead one.
func TestE6ObservedRevision(t *testing.T) {
	for _, tc := range []struct {
		name     string
		watch    bool
		want     []float64 // ObservedRevision times, in seconds
		takeover float64
	}{
		// Reads at 1, 6, 11 s see the renewals of 0, 5, 10 s; the revision of 10 s, first
		// seen at 11 s, expires at 26 s.
		{"polling", false, []float64{1, 6, 11}, 26},
		// The watch brings the renewals of 5 and 10 s as they are written.
		{"watch", true, []float64{1, 5, 10}, 25},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				w := newWorld(t)
				var a, b *node
				if tc.watch {
					a, b = w.watchNode("a", nil).node, w.watchNode("b", nil).node
				} else {
					a, b = w.node("a", 0, 0), w.node("b", 0, 0)
				}
				a.start()
				w.At(sec(1))
				b.start()
				w.At(sec(12))
				a.crash()
				w.At(sec(40))
				var want []Event
				for _, s := range tc.want {
					want = append(want, Event{Kind: ObservedRevision, Time: w.Start.Add(sec(s)), Lease: "leader", Instance: "b", Term: 1, Holder: "a"})
				}
				if got := b.eventsOf(ObservedRevision); !reflect.DeepEqual(got, want) {
					t.Fatalf("b's ObservedRevision events:\n got %+v\nwant %+v", got, want)
				}
				if got := w.times(b, BecameLeader); !reflect.DeepEqual(got, ds(sec(tc.takeover))) {
					t.Fatalf("b became leader at %v; want %v", got, sec(tc.takeover))
				}
				if got := a.eventsOf(ObservedRevision); len(got) != 0 {
					t.Fatalf("a, which led, emitted %+v; want no ObservedRevision", got)
				}
			})
		})
	}
}
