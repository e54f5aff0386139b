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
// invalid, an error that is not a conflict. It counts the reads of each record, and the next
// Update of a record in failNext fails with the error given.
type strictLock struct {
	Lock

	mu       sync.Mutex
	gets     map[string]int
	failNext map[string]error // the next Update of a record fails with this error
}

func newStrictLock(mem *memory.Store) *strictLock {
	return &strictLock{Lock: NewStoreLock(mem), gets: map[string]int{}, failNext: map[string]error{}}
}

var errInvalidRevision = errors.New("test: invalid revision")

func (l *strictLock) Get(ctx context.Context, name string) (Record, error) {
	l.mu.Lock()
	l.gets[name]++
	l.mu.Unlock()
	return l.Lock.Get(ctx, name)
}

func (l *strictLock) Update(ctx context.Context, name string, r Record) (Record, error) {
	l.mu.Lock()
	err := l.failNext[name]
	delete(l.failNext, name)
	if strings.Contains(r.Revision, "\x00") {
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

// E10: an answer to a write on a known record that is neither a success nor a conflict makes
// the same attempt read and decide, within its deadline, rather than fail. The leader a renews
// at 5s without reading; that write fails with an error: it reads the record (its own) and
// renews on the revision read, in the same attempt, and leads on.
func TestE10KnownWriteErrorReads(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t)
		lock := newStrictLock(w.Mem)
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
		w.At(sec(1))
		if !e.IsLeader() {
			t.Fatal("a does not lead at 1s")
		}
		lock.set(func(l *strictLock) { l.failNext["leader"] = errors.New("test: the write failed") })
		getsBefore := func() int { lock.mu.Lock(); defer lock.mu.Unlock(); return lock.gets["leader"] }()
		w.At(sec(5.5))
		mu.Lock()
		defer mu.Unlock()
		for _, ev := range evs {
			if ev.Kind == AttemptFailed || ev.Kind == StoppedLeading {
				t.Errorf("%v at %v (%v): the renewal whose write failed did not read", ev.Kind, w.Rel(ev.Time), ev.Err)
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
