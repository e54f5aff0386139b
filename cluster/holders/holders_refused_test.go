package holders

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/leasehold/leasehold/cluster"
	"github.com/leasehold/leasehold/store/memory"
)

// strictLock is a Lock that knows its revisions as a Kubernetes API server knows its
// resourceVersions: a write on a revision it never wrote (one holding a NUL) is refused as
// invalid, an error that is not a conflict. Its reads of the records in failGet fail.
type strictLock struct {
	cluster.Lock

	mu      sync.Mutex
	failGet map[string]bool
	refused []string // the revisions of the writes it refused
}

func newStrictLock(mem *memory.Store) *strictLock {
	return &strictLock{Lock: cluster.NewStoreLock(mem), failGet: map[string]bool{}}
}

var errInvalidRevision = errors.New("test: invalid revision")

func (l *strictLock) Get(ctx context.Context, name string) (cluster.Record, error) {
	l.mu.Lock()
	fail := l.failGet[name]
	l.mu.Unlock()
	if fail {
		return cluster.Record{}, fmt.Errorf("%w: get %s", errInjected, name)
	}
	return l.Lock.Get(ctx, name)
}

func (l *strictLock) Update(ctx context.Context, name string, r cluster.Record) (cluster.Record, error) {
	l.mu.Lock()
	var err error
	if strings.Contains(r.Revision, "\x00") {
		l.refused = append(l.refused, r.Revision)
		err = fmt.Errorf("%w %q: not an integer", errInvalidRevision, r.Revision)
	}
	l.mu.Unlock()
	if err != nil {
		return cluster.Record{}, err
	}
	return l.Lock.Update(ctx, name, r)
}

func (l *strictLock) set(fn func(l *strictLock)) {
	l.mu.Lock()
	defer l.mu.Unlock()
	fn(l)
}

func (l *strictLock) refusedCount() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.refused)
}

// H2, E10: a slot refused while the instance holds another follows the record under a
// revision of its own, which must never reach the Lock. a and b hold the two slots of jobs;
// b stops, releasing its slot q, which a, holding p, is refused; x (one holder of the record
// jobs/p) waits for p. At 27s p is resigned to x: a releases p at its next attempt (30s),
// x takes it, and a holds nothing while q is free. a's reads of q fail from 26s until 45s, past
// the expiry of what a follows on q (its reads cannot replace it), then succeed: a takes q at
// its next attempt, within R. Before, a wrote on the made-up revision without reading, the Lock
// refused it as invalid (not a conflict), every attempt repeated that write, and a held no
// slot for good while q stayed free.
func TestH2RefusedSlotNeverWritesMadeUpRevision(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t)
		locks := map[string]*strictLock{}
		hs := map[string]*Holders{}
		start := func(id string) {
			locks[id] = newStrictLock(w.Mem)
			h, err := New(cluster.ElectorConfig{
				Lock: locks[id], LeaseName: "jobs", LeaseDuration: testL, RenewInterval: testR,
				InstanceID: id, Logger: quietLogger(),
			}, 2)
			if err != nil {
				t.Fatal(err)
			}
			if err := h.Start(context.Background()); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = h.Stop(context.Background()) })
			hs[id] = h
		}
		slotOf := func(id string) int {
			if s, _, ok := hs[id].Slot(); ok {
				return s
			}
			return -1
		}
		start("a")
		w.At(sec(1))
		start("b")
		w.At(sec(1.5))
		p, q := slotOf("a"), slotOf("b")
		if p < 0 || q < 0 || p == q {
			t.Fatalf("slots at 1.5s: a %d, b %d; want one each", p, q)
		}
		pName, qName := fmt.Sprintf("jobs/%d", p), fmt.Sprintf("jobs/%d", q)
		x, err := cluster.NewElector(cluster.ElectorConfig{
			Lock: cluster.NewStoreLock(w.Mem), LeaseName: pName, LeaseDuration: testL, RenewInterval: testR,
			InstanceID: "x", Logger: quietLogger(),
		})
		if err != nil {
			t.Fatal(err)
		}
		if err := x.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = x.Stop(context.Background()) })
		w.At(sec(2))
		if err := hs["b"].Stop(context.Background()); err != nil {
			t.Fatal(err)
		}
		w.At(sec(26))
		if got := slotOf("a"); got != p {
			t.Fatalf("a holds slot %d at 26s, want %d", got, p)
		}
		locks["a"].set(func(l *strictLock) { l.failGet[qName] = true })
		w.At(sec(27))
		if _, err := cluster.Resign(context.Background(), cluster.NewStoreLock(w.Mem), pName, "x"); err != nil {
			t.Fatal(err)
		}
		w.At(sec(40))
		if got := slotOf("a"); got != -1 {
			t.Fatalf("a holds slot %d at 40s, want none (p resigned to x, its reads of q fail)", got)
		}
		if !x.IsLeader() {
			t.Fatal("x does not lead p at 40s")
		}
		w.At(sec(45))
		locks["a"].set(func(l *strictLock) { l.failGet[qName] = false })
		w.At(sec(50))
		if got := slotOf("a"); got != q {
			t.Errorf("a holds slot %d at 50s, R after its reads of q succeed again; want q (%d)", got, q)
		}
		w.At(sec(180))
		if got := slotOf("a"); got != q {
			t.Errorf("a holds slot %d at 180s; want q (%d)", got, q)
		}
		if n := locks["a"].refusedCount(); n > 0 {
			t.Errorf("a wrote %d times on a revision no Lock wrote (%q): a made-up revision reached the Lock", n, locks["a"].refused[0])
		}
	})
}
