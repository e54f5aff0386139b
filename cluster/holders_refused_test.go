package cluster

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/leasehold/leasehold/store/memory"
)

// strictLock is a Lock that knows its revisions as a Kubernetes API server knows its
// resourceVersions: a write on a revision it never wrote (one holding a NUL) is refused as
// invalid, an error that is not a conflict. Its reads of the records in failGet fail.
type strictLock struct {
	Lock

	mu       sync.Mutex
	failGet  map[string]bool
	refused  []string // the revisions of the writes it refused
	gets     map[string]int
	failNext map[string]error // the next Update of a record fails with this error
}

func newStrictLock(mem *memory.Store) *strictLock {
	return &strictLock{Lock: NewStoreLock(mem), failGet: map[string]bool{}, gets: map[string]int{}, failNext: map[string]error{}}
}

var errInvalidRevision = errors.New("test: invalid revision")

func (l *strictLock) Get(ctx context.Context, name string) (Record, error) {
	l.mu.Lock()
	fail := l.failGet[name]
	l.gets[name]++
	l.mu.Unlock()
	if fail {
		return Record{}, fmt.Errorf("%w: get %s", errInjected, name)
	}
	return l.Lock.Get(ctx, name)
}

func (l *strictLock) Update(ctx context.Context, name string, r Record) (Record, error) {
	l.mu.Lock()
	err := l.failNext[name]
	delete(l.failNext, name)
	if strings.Contains(r.Revision, "\x00") {
		l.refused = append(l.refused, r.Revision)
		err = fmt.Errorf("%w %q: not an integer", errInvalidRevision, r.Revision)
	}
	l.mu.Unlock()
	if err != nil {
		return Record{}, err
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
			locks[id] = newStrictLock(w.mem)
			h, err := NewHolders(ElectorConfig{
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
		w.at(sec(1))
		start("b")
		w.at(sec(1.5))
		p, q := slotOf("a"), slotOf("b")
		if p < 0 || q < 0 || p == q {
			t.Fatalf("slots at 1.5s: a %d, b %d; want one each", p, q)
		}
		pName, qName := fmt.Sprintf("jobs/%d", p), fmt.Sprintf("jobs/%d", q)
		x, err := NewElector(ElectorConfig{
			Lock: NewStoreLock(w.mem), LeaseName: pName, LeaseDuration: testL, RenewInterval: testR,
			InstanceID: "x", Logger: quietLogger(),
		})
		if err != nil {
			t.Fatal(err)
		}
		if err := x.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = x.Stop(context.Background()) })
		w.at(sec(2))
		if err := hs["b"].Stop(context.Background()); err != nil {
			t.Fatal(err)
		}
		w.at(sec(26))
		if got := slotOf("a"); got != p {
			t.Fatalf("a holds slot %d at 26s, want %d", got, p)
		}
		locks["a"].set(func(l *strictLock) { l.failGet[qName] = true })
		w.at(sec(27))
		if _, err := Resign(context.Background(), NewStoreLock(w.mem), pName, "x"); err != nil {
			t.Fatal(err)
		}
		w.at(sec(40))
		if got := slotOf("a"); got != -1 {
			t.Fatalf("a holds slot %d at 40s, want none (p resigned to x, its reads of q fail)", got)
		}
		if !x.IsLeader() {
			t.Fatal("x does not lead p at 40s")
		}
		w.at(sec(45))
		locks["a"].set(func(l *strictLock) { l.failGet[qName] = false })
		w.at(sec(50))
		if got := slotOf("a"); got != q {
			t.Errorf("a holds slot %d at 50s, R after its reads of q succeed again; want q (%d)", got, q)
		}
		w.at(sec(180))
		if got := slotOf("a"); got != q {
			t.Errorf("a holds slot %d at 180s; want q (%d)", got, q)
		}
		if n := locks["a"].refusedCount(); n > 0 {
			t.Errorf("a wrote %d times on a revision no Lock wrote (%q): a made-up revision reached the Lock", n, locks["a"].refused[0])
		}
	})
}

// E10: an answer to a write on a known record that is neither a success nor a conflict makes
// the same attempt read and decide, within its deadline, rather than fail. The leader a renews
// at 5s without reading; that write fails with an error: it reads the record (its own) and
// renews on the revision read, in the same attempt, and leads on.
func TestE10KnownWriteErrorReads(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t)
		lock := newStrictLock(w.mem)
		var mu sync.Mutex
		var evs []Event
		e, err := NewElector(ElectorConfig{
			Lock: lock, LeaseName: "leader", LeaseDuration: testL, RenewInterval: testR,
			InstanceID: "a", Logger: quietLogger(),
			Observer: func(ev Event) { mu.Lock(); evs = append(evs, ev); mu.Unlock() },
		})
		if err != nil {
			t.Fatal(err)
		}
		if err := e.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = e.Stop(context.Background()) })
		w.at(sec(1))
		if !e.IsLeader() {
			t.Fatal("a does not lead at 1s")
		}
		lock.set(func(l *strictLock) { l.failNext["leader"] = errors.New("test: the write failed") })
		getsBefore := func() int { lock.mu.Lock(); defer lock.mu.Unlock(); return lock.gets["leader"] }()
		w.at(sec(5.5))
		mu.Lock()
		defer mu.Unlock()
		for _, ev := range evs {
			if ev.Kind == AttemptFailed || ev.Kind == StoppedLeading {
				t.Errorf("%v at %v (%v): the renewal whose write failed did not read", ev.Kind, w.rel(ev.Time), ev.Err)
			}
		}
		if !e.IsLeader() {
			t.Error("a does not lead at 5.5s")
		}
		lock.mu.Lock()
		gets := lock.gets["leader"] - getsBefore
		lock.mu.Unlock()
		if gets != 1 {
			t.Errorf("the renewal at 5s read %d times, want once", gets)
		}
	})
}
