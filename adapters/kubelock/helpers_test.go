package kubelock_test

import (
	"context"
	"crypto/rand"
	"io"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/tools/leaderelection"

	"github.com/leasehold/leasehold/adapters/kubelock"
	"github.com/leasehold/leasehold/internal/testenv"
	"github.com/leasehold/leasehold/store"
	"github.com/leasehold/leasehold/store/file"
	_ "github.com/leasehold/leasehold/store/postgres"
)

// The electors' timing in the tests: client-go keeps LeaseDuration in whole seconds, and a
// leader stops at most RetryPeriod+RenewDeadline after its last renewal, within testL.
const (
	testL  = 2 * time.Second
	testRD = 1 * time.Second
	testRP = 250 * time.Millisecond
)

// openFile returns a file store in a fresh directory, closed at the end of the test.
func openFile(t *testing.T) store.Store {
	t.Helper()
	st, err := file.Open(filepath.Join(t.TempDir(), "store.json"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// openPostgres returns the PostgreSQL store of the test server, or skips the test.
func openPostgres(t *testing.T) store.Store {
	t.Helper()
	st, err := store.Open(t.Context(), postgresURL(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if c, ok := st.(io.Closer); ok {
			c.Close()
		}
	})
	return st
}

func postgresURL(t *testing.T) string {
	t.Helper()
	return testenv.Postgres.URL(t)
}

// uniqueName returns a lock name no earlier run used, and removes its document at the end of
// the test, for the stores that outlive a test.
func uniqueName(t *testing.T, st store.Store) string {
	t.Helper()
	name := strings.ToLower(strings.ReplaceAll(t.Name(), "/", "-")) + "-" + rand.Text()[:8]
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = st.Delete(ctx, kubelock.KeyPrefix+name, nil)
	})
	return name
}

func newLock(t *testing.T, st store.Store, name, id string) *kubelock.Lock {
	t.Helper()
	l, err := kubelock.New(st, name, id)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// term is one candidate's time as the leader, as its callbacks saw it: from OnStartedLeading
// to the end of the context client-go gave it.
type term struct {
	id         string
	term       int // Lock.Term in OnStartedLeading
	start, end time.Time
}

// leads records the leaderships of several electors; tests wait on it instead of sleeping.
type leads struct {
	mu      sync.Mutex
	terms   []term
	changed chan struct{} // closed and replaced at each change
}

func newLeads() *leads { return &leads{changed: make(chan struct{})} }

func (l *leads) update(f func()) {
	l.mu.Lock()
	defer l.mu.Unlock()
	f()
	close(l.changed)
	l.changed = make(chan struct{})
}

// started records a leadership, and its end when ctx ends.
func (l *leads) started(ctx context.Context, id string, lock *kubelock.Lock) {
	n, _ := lock.Term()
	var i int
	l.update(func() {
		i = len(l.terms)
		l.terms = append(l.terms, term{id: id, term: n, start: time.Now()})
	})
	<-ctx.Done()
	l.update(func() { l.terms[i].end = time.Now() })
}

// wait returns the index of the first leadership at index from or later, once it has started;
// it fails the test after timeout.
func (l *leads) wait(t *testing.T, from int, timeout time.Duration) int {
	t.Helper()
	deadline := time.After(timeout)
	for {
		l.mu.Lock()
		n, changed := len(l.terms), l.changed
		l.mu.Unlock()
		if n > from {
			return from
		}
		select {
		case <-changed:
		case <-deadline:
			t.Fatalf("no leader within %v", timeout)
		}
	}
}

// waitEnd waits until leadership i has ended.
func (l *leads) waitEnd(t *testing.T, i int, timeout time.Duration) {
	t.Helper()
	deadline := time.After(timeout)
	for {
		l.mu.Lock()
		ended, changed := !l.terms[i].end.IsZero(), l.changed
		l.mu.Unlock()
		if ended {
			return
		}
		select {
		case <-changed:
		case <-deadline:
			t.Fatalf("leadership %d did not end within %v", i, timeout)
		}
	}
}

func (l *leads) get(i int) term {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.terms[i]
}

func (l *leads) snapshot() []term {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]term(nil), l.terms...)
}

// checkExclusive fails the test if two leaderships overlap, or if a new holder's term is not
// above the one before it.
func (l *leads) checkExclusive(t *testing.T) {
	t.Helper()
	ts := l.snapshot()
	for i := 1; i < len(ts); i++ {
		prev, cur := ts[i-1], ts[i]
		if prev.end.IsZero() || cur.start.Before(prev.end) {
			t.Errorf("%s led from %v while %s led until %v", cur.id, cur.start.Format(time.StampMicro), prev.id, prev.end.Format(time.StampMicro))
		}
		if cur.id != prev.id && cur.term <= prev.term {
			t.Errorf("%s leads with term %d after %s with term %d: want a higher term", cur.id, cur.term, prev.id, prev.term)
		}
	}
}

// elector runs client-go's LeaderElector over lock until the returned stop is called; stop
// waits for Run to return. The elector is stopped at the end of the test.
func elector(t *testing.T, lock *kubelock.Lock, ls *leads, release bool) (stop func()) {
	t.Helper()
	le, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock:            lock,
		LeaseDuration:   testL,
		RenewDeadline:   testRD,
		RetryPeriod:     testRP,
		ReleaseOnCancel: release,
		Name:            lock.Identity(),
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(ctx context.Context) { ls.started(ctx, lock.Identity(), lock) },
			OnStoppedLeading: func() {},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		le.Run(ctx)
	}()
	stop = sync.OnceFunc(func() {
		cancel()
		<-done
	})
	t.Cleanup(stop)
	return stop
}
