package cluster

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/leasehold/leasehold/store"
	"github.com/leasehold/leasehold/store/memory"
)

// writeLog sits between every faultStore and the memory store: it sees each write in the order
// the store applied it, and checks the record's invariants (E2, E7, W8) as they happen.
type writeLog struct {
	mem *memory.Store
	gen *atomic.Int64

	mu     sync.Mutex
	cur    leaseState
	hist   []leaseWrite // recent writes
	errs   []string
	writes int
	zombie int          // writes by instances already crashed (an attempt that was in flight)
	subs   []*streamSub // the instances' simulated watches (E9)
}

type leaseState struct {
	exists bool
	rev    string
	holder string
	term   uint64
	at     time.Time
	by     *rnode
	// A preemption pending (held) or answered (released), and by whom (Q2, Q4).
	preempt bool
	next    string
}

type leaseWrite struct {
	at, prevAt time.Time
	holder     string
	by         *rnode
}

func (w *writeLog) wrote(n *rnode, op string, fields map[string]any) {
	now := time.Now()
	holder, _ := fields["holder"].(string)
	term64, _ := fields["term"].(float64)
	term := uint64(term64)
	preempt, _ := fields["preempt"].(bool)
	next, _ := fields["nextHolder"].(string)
	asked, _ := fields["resignRequestedAt"].(string)
	prev := w.cur
	bad := func(format string, args ...any) {
		w.errs = append(w.errs, fmt.Sprintf("%s by %s (holder %q term %d; was holder %q term %d): ", op, n.id, holder, term, prev.holder, prev.term)+fmt.Sprintf(format, args...))
	}
	switch {
	case op == "create":
		if prev.exists || holder != n.id || term != 1 {
			bad("E2: a created record is held by its creator with term 1")
		}
	case holder == "" && preempt && prev.preempt && next == prev.next && prev.holder == n.id && term == prev.term:
		// Q3, R2: the holder answers a preemption with a release reserved for the asker,
		// once its callbacks have returned; or a Stop releases a record with a preemption
		// pending (E7), which stays reserved for the asker.
		n.mu.Lock()
		fa, da := n.fnActive, n.deActive
		if n.stopping.Load() {
			n.released = append(n.released, now)
		}
		n.mu.Unlock()
		if fa != 0 || da != 0 {
			bad("R2: released for a preemption while %d fn and %d deregistered calls still ran", fa, da)
		}
	case holder == "":
		if prev.holder != n.id || term != prev.term {
			bad("E7: only the holder releases, keeping the term")
		}
		if !n.stopping.Load() {
			bad("E7: released by an instance that is not stopping")
		}
		n.mu.Lock()
		fa, da := n.fnActive, n.deActive
		n.released = append(n.released, now)
		n.mu.Unlock()
		if fa != 0 || da != 0 {
			bad("E7: released while %d fn and %d deregistered calls still ran", fa, da)
		}
	case holder == prev.holder && holder != n.id && preempt && next == n.id && asked != "":
		// Q2: a follower asks the holder to hand over to it: the holder and the term stay.
		if term != prev.term {
			bad("Q2: a preemption request keeps the term")
		}
	case holder == prev.holder:
		if holder != n.id || (term != prev.term && term != prev.term+1) {
			bad("E2/E11: the holder's write keeps the term (a renewal) or takes the next (a new leadership)")
		}
	default:
		if holder != n.id || term != prev.term+1 {
			bad("E2/W8: a takeover is written by the new holder with term+1")
		}
		// E6: a revision expires L after the taker first saw it, which is no earlier than
		// when it was written (the taker's L, on its own clock: M1).
		if prev.holder != "" && now.Sub(prev.at) < n.l {
			bad("E6: taken over %v after its last write, before it could expire (L = %v)", now.Sub(prev.at), n.l)
		}
	}
	if n.crashed.Load() {
		w.zombie++
	}

	w.writes++
	w.gen.Add(1)
	rev, _ := fields["revision"].(string)
	w.cur = leaseState{exists: true, rev: rev, holder: holder, term: term, at: now, by: n, preempt: preempt, next: next}
	if len(w.hist) >= 16 {
		w.hist = slices.Delete(w.hist, 0, 1)
	}
	w.hist = append(w.hist, leaseWrite{at: now, prevAt: prev.at, holder: holder, by: n})
	w.publish()
}

// recStore is an instance's view of the shared memory store, below its faultStore: writes that
// reach it are applied, so it logs them.
type recStore struct {
	n *rnode
	w *writeLog
}

func (s recStore) Get(ctx context.Context, key string) (map[string]any, error) {
	return s.w.mem.Get(ctx, key)
}

func (s recStore) Create(ctx context.Context, key string, doc map[string]any) error {
	s.w.mu.Lock()
	defer s.w.mu.Unlock()
	err := s.w.mem.Create(ctx, key, doc)
	if err == nil {
		s.w.wrote(s.n, "create", doc)
	}
	return err
}

func (s recStore) Patch(ctx context.Context, key string, fields map[string]any, cond *store.Condition) error {
	s.w.mu.Lock()
	defer s.w.mu.Unlock()
	err := s.w.mem.Patch(ctx, key, fields, cond)
	if err == nil {
		s.w.wrote(s.n, "patch", fields)
	}
	return err
}

func (s recStore) Delete(ctx context.Context, key string, cond *store.Condition) error {
	s.w.mu.Lock()
	s.w.errs = append(s.w.errs, fmt.Sprintf("%s deleted the lease record: the elector never deletes", s.n.id))
	s.w.mu.Unlock()
	return s.w.mem.Delete(ctx, key, cond)
}

// trackStore is what an instance's Lock calls: it counts the calls that start while the
// instance's faultStore has a fault, so that "clean since" covers a slow call that started
// before a heal and still runs after it.
type trackStore struct{ n *rnode }

func faultsClear(f *faultStore) bool { return f.Clear() }

func (s trackStore) begin() bool {
	if faultsClear(s.n.f) {
		return false
	}
	s.n.mu.Lock()
	s.n.inflight++
	s.n.mu.Unlock()
	return true
}

func (s trackStore) end(faulty bool) {
	if !faulty {
		return
	}
	s.n.mu.Lock()
	s.n.inflight--
	s.n.maybeCleanLocked()
	s.n.mu.Unlock()
	s.n.gen.Add(1)
}

func (s trackStore) Get(ctx context.Context, key string) (map[string]any, error) {
	faulty := s.begin()
	defer s.end(faulty)
	doc, err := s.n.f.Get(ctx, key)
	doc = s.n.storeDoc(doc, false)
	s.n.trace("get (faulty %v): holder %v term %v revision %v, %v", faulty, doc["holder"], doc["term"], doc["revision"], err)
	if rev, ok := doc["revision"].(string); ok && err == nil && !faulty {
		// A clean read answers at once, so the elector's first sight of this revision (E6)
		// is no later than this.
		s.n.mu.Lock()
		if rev != s.n.seenRev {
			s.n.seenRev, s.n.seenAt = rev, time.Now()
		}
		s.n.mu.Unlock()
	}
	return doc, err
}

func (s trackStore) Create(ctx context.Context, key string, doc map[string]any) error {
	faulty := s.begin()
	defer s.end(faulty)
	doc = s.n.storeDoc(doc, true)
	err := s.n.f.Create(ctx, key, doc)
	s.n.trace("create (faulty %v): term %v, %v", faulty, doc["term"], err)
	return err
}

func (s trackStore) Patch(ctx context.Context, key string, fields map[string]any, cond *store.Condition) error {
	if h, ok := fields["holder"].(string); ok && h == "" {
		if p, _ := fields["preempt"].(bool); p && !s.n.stopping.Load() {
			s.handOver()
		} else {
			s.release()
		}
	}
	faulty := s.begin()
	defer s.end(faulty)
	fields = s.n.storeDoc(fields, true)
	err := s.n.f.Patch(ctx, key, fields, cond)
	s.n.trace("patch (faulty %v): holder %v term %v, %v", faulty, fields["holder"], fields["term"], err)
	return err
}

func (s trackStore) Delete(ctx context.Context, key string, cond *store.Condition) error {
	faulty := s.begin()
	defer s.end(faulty)
	return s.n.f.Delete(ctx, key, cond)
}

// handOver checks the release that answers a preemption as it is tried (R2): only once every
// callback has returned.
func (s trackStore) handOver() {
	n := s.n
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.fnActive != 0 || n.deActive != 0 {
		n.errs = append(n.errs, fmt.Sprintf("R2: %s tried to hand the lease over while %d fn and %d deregistered calls still ran", n.id, n.fnActive, n.deActive))
	}
}

// release checks a release write as it is tried (E7): only while Stop runs, and only once every
// callback has returned. (Whether the store applies it, and whether its answer comes back, is up
// to the faults.)
func (s trackStore) release() {
	n := s.n
	n.mu.Lock()
	defer n.mu.Unlock()
	if !n.stopping.Load() || n.stopReturns.Load() {
		n.errs = append(n.errs, fmt.Sprintf("E7: %s tried to release the lease while its Stop was not running", n.id))
	}
	if n.fnActive != 0 || n.deActive != 0 {
		n.errs = append(n.errs, fmt.Sprintf("E7: %s tried to release the lease while %d fn and %d deregistered calls still ran", n.id, n.fnActive, n.deActive))
	}
	n.gen.Add(1)
}
