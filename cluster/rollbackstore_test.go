package cluster

import (
	"context"
	"errors"
	"maps"
	"sync"

	"github.com/leasehold/leasehold/store"
	"github.com/leasehold/leasehold/store/memory"
)

// rollbackStore is the lease record of a store that loses acknowledged writes: an asynchronous
// replica promoted after the primary died (Redis Sentinel, a PostgreSQL async standby, NATS
// losing unsynced writes). snapshot keeps the record as it is; rollback puts it back, or
// deletes it when the snapshot had none, as the promoted replica would serve it. A reported
// rollback reaches the watches as the change it is (the new primary's state); a silent one
// reaches them not at all, and only reads see it, as a watch that resumed on the new primary
// without a notification would.
type rollbackStore struct {
	mem *memory.Store

	mu sync.Mutex
	// hidden holds the revisions of the states put back by silent rollbacks ("" for a
	// missing record): the watches never deliver them.
	hidden map[string]bool
}

// snapshot is the lease document at one moment: nil when there was none.
type snapshot map[string]any

const rollbackKey = storeKeyPrefix + "leader"

func newRollbackStore(mem *memory.Store) *rollbackStore {
	return &rollbackStore{mem: mem, hidden: map[string]bool{}}
}

func (s *rollbackStore) snapshot() snapshot {
	doc, err := s.mem.Get(context.Background(), rollbackKey)
	if err != nil {
		return nil
	}
	return maps.Clone(doc)
}

// rollback puts the record back to snap, every field of it (a Patch leaves no field of the
// later record: the store Lock writes them all), or deletes it.
func (s *rollbackStore) rollback(snap snapshot, silent bool) error {
	ctx := context.Background()
	if silent {
		s.mu.Lock()
		rev, _ := snap["revision"].(string)
		s.hidden[rev] = true
		s.mu.Unlock()
	}
	if snap == nil {
		err := s.mem.Delete(ctx, rollbackKey, nil)
		if errors.Is(err, store.ErrNotFound) {
			return nil
		}
		return err
	}
	err := s.mem.Patch(ctx, rollbackKey, maps.Clone(snap), nil)
	if errors.Is(err, store.ErrNotFound) {
		err = s.mem.Create(ctx, rollbackKey, maps.Clone(snap))
	}
	return err
}

func (s *rollbackStore) isHidden(rec Record, err error) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case errors.Is(err, ErrNotFound):
		return s.hidden[""]
	case err == nil:
		return s.hidden[rec.Revision]
	}
	return false
}

// hidingLock passes its watch's calls on, but for the states of silent rollbacks.
type hidingLock struct {
	*countLock
	rb *rollbackStore
}

func (l hidingLock) Watch(ctx context.Context, name string, fn func(Record, error)) error {
	return l.countLock.Watch(ctx, name, func(r Record, err error) {
		if !l.rb.isHidden(r, err) {
			fn(r, err)
		}
	})
}

// rollbackNode is a node over the world's store, watching it (with heartbeats) when watch
// says so, and blind to the silent rollbacks of rb.
func (w *world) rollbackNode(id string, rb *rollbackStore, watch bool) *node {
	w.T.Helper()
	n := &node{t: w.T, faults: newFaultStore(w.Mem)}
	var lock Lock = NewStoreLock(n.faults)
	if watch {
		lock = hidingLock{countLock: &countLock{inner: NewStoreLock(watchingStore{n.faults})}, rb: rb}
	}
	e, err := NewElector(ElectorConfig{
		Lock: lock, LeaseName: "leader", LeaseDuration: testL, RenewInterval: testR,
		InstanceID: id, Logger: quietLogger(),
		Observer: func(ev Event) {
			n.mu.Lock()
			n.events = append(n.events, ev)
			n.mu.Unlock()
		},
	})
	if err != nil {
		w.T.Fatal(err)
	}
	n.e = e
	return n
}
