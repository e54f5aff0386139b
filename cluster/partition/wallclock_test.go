package partition

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/leasehold/leasehold/cluster"
	"github.com/leasehold/leasehold/internal/fencing"
	"github.com/leasehold/leasehold/internal/wallclock"
)

// M2: the partitions read the wall clock as an Elector does (wallclock.Reading), so that the
// fault campaign's clock jump, a process-wide offset, moves the partitions' records as it
// moves the member lease's. With the offset in force, every record written holds times that
// many hours ahead of the (fake) clock, and terms at least the floor of that later time (E11):
// a partition that read the machine's clock alone would write times of 2000 and term 1.
func TestM2PartitionsWallFollowsTheOffset(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t)
		// Fake time starts in 2000, where the term floor is 1: an offset into 2030 shows in
		// the terms too.
		off := time.Date(2030, time.January, 1, 0, 0, 0, 0, time.UTC).Sub(w.Start)
		wallclock.Set(off)
		t.Cleanup(func() { wallclock.Set(0) }) // after the members' Stop: cleanups run last in, first out
		const k = 2
		a := w.partitions("a", k)
		w.runPartitions(sec(20), k, a)
		if counts, free := checkOwners(t, k, a); free != 0 {
			t.Fatalf("at 20s: %v owned, %d free; want every partition owned", counts, free)
		}
		end := time.Now()
		lock := cluster.NewStoreLock(w.Mem)
		floor := fencing.Floor(w.Start.Add(off))
		for _, name := range append([]string{memberLeaseName("work", "a")}, a.p.names...) {
			rec, err := lock.Get(context.Background(), name)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			for field, at := range map[string]time.Time{"AcquiredAt": rec.AcquiredAt, "RenewedAt": rec.RenewedAt} {
				if clock := at.Add(-off); clock.Before(w.Start) || clock.After(end) {
					t.Errorf("%s: %s %v, %v less the offset; want within the run, %v to %v", name, field, at, clock, w.Start, end)
				}
			}
			if rec.Term < floor {
				t.Errorf("%s: term %d; want at least the offset time's floor %d", name, rec.Term, floor)
			}
		}
	})
}
