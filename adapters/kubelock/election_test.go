package kubelock_test

import (
	"context"
	"testing"
	"time"

	"k8s.io/client-go/tools/leaderelection/resourcelock"

	"github.com/leasehold/leasehold/adapters/kubelock"
	"github.com/leasehold/leasehold/store"
)

// Three client-go electors over a store: one leads; each leader abandoned without a release
// (its context ended, as in a crash: nothing is written) is replaced by another, no sooner
// than LeaseDuration after its last renewal, and never two at once.
func TestElectorsTakeOverAbandonedLease(t *testing.T) {
	for _, c := range []struct {
		name string
		open func(*testing.T) store.Store
	}{{"file", openFile}, {"postgres", openPostgres}} {
		t.Run(c.name, func(t *testing.T) {
			st := c.open(t)
			name := uniqueName(t, st)
			ls := newLeads()
			stops := map[string]func(){}
			for _, id := range []string{"a", "b", "c"} {
				stops[id] = elector(t, newLock(t, st, name, id), ls, false)
			}
			i := ls.wait(t, 0, 30*time.Second)
			for range 2 {
				leader := ls.get(i)
				killed := time.Now()
				stops[leader.id]()
				delete(stops, leader.id)
				ls.waitEnd(t, i, 10*time.Second)
				// The abandoned leader wrote nothing since Run returned: the record holds its
				// last renewal.
				last := readRecord(t, st, name)
				if last.HolderIdentity != leader.id {
					t.Fatalf("record names %q right after %s stopped, want %s", last.HolderIdentity, leader.id, leader.id)
				}
				i = ls.wait(t, i+1, 30*time.Second)
				next := ls.get(i)
				if next.id == leader.id {
					t.Fatalf("%s leads again after it stopped", next.id)
				}
				if early := last.RenewTime.Add(testL).Sub(next.start); early > 0 {
					t.Errorf("%s took over %v before LeaseDuration had passed since %s's last renewal", next.id, early, leader.id)
				}
				t.Logf("%s abandoned (term %d); %s leads (term %d) %v later, %v after its last renewal",
					leader.id, leader.term, next.id, next.term, next.start.Sub(killed).Round(time.Millisecond),
					next.start.Sub(last.RenewTime.Time).Round(time.Millisecond))
			}
			ls.checkExclusive(t)
		})
	}
}

// A leader that releases on cancel writes an empty holder: another leads at its next retry,
// without waiting for LeaseDuration.
func TestElectorsTakeOverReleasedLease(t *testing.T) {
	st := openFile(t)
	name := uniqueName(t, st)
	ls := newLeads()
	stops := map[string]func(){}
	for _, id := range []string{"a", "b"} {
		stops[id] = elector(t, newLock(t, st, name, id), ls, true)
	}
	i := ls.wait(t, 0, 30*time.Second)
	leader := ls.get(i)
	stopped := time.Now()
	stops[leader.id]()
	if r := readRecord(t, st, name); r.HolderIdentity != "" {
		t.Fatalf("record names %q after its holder released it, want none", r.HolderIdentity)
	}
	i = ls.wait(t, i+1, 30*time.Second)
	next := ls.get(i)
	t.Logf("%s released; %s leads %v later", leader.id, next.id, next.start.Sub(stopped).Round(time.Millisecond))
	ls.checkExclusive(t)
}

// readRecord reads the lock's record through a lock of another identity.
func readRecord(t *testing.T, st store.Store, name string) *resourcelock.LeaderElectionRecord {
	t.Helper()
	l, err := kubelock.New(st, name, "reader")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	r, _, err := l.Get(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return r
}
