package storetest

import (
	"testing"
	"time"

	"github.com/leasehold/leasehold/cluster"
	"github.com/leasehold/leasehold/internal/recordtest"
	"github.com/leasehold/leasehold/internal/storerecord"
	"github.com/leasehold/leasehold/store"
)

// docs is the store Lock's document codec: the suite writes and reads lease records as the
// elections do.
var docs = cluster.NewStoreLock(nil).(storerecord.Codec[cluster.Record])

// leaseRecord checks that a lease record, as the store Lock encodes it, reads back as itself
// through Create and through Patch: a record with every field of cluster.Record set (the
// published value, V1, the holder's priority and health, Q1 and U2, a preemption request, Q2,
// and any field added since), and a release, every field but the term and the duration zero,
// replacing it.
func (s *suite) leaseRecord(t *testing.T) {
	held := recordtest.Held(t, 7, time.Date(2026, 12, 4, 19, 40, 1, 123456789, time.UTC))
	held.Revision = docs.NewRevision()
	released := recordtest.Released(held)
	released.Revision = docs.NewRevision()
	read := func(t *testing.T, st store.Store, key string, want cluster.Record) {
		t.Helper()
		got, err := docs.Decode(key, mustGet(t, st, key))
		if err != nil {
			t.Fatalf("lease record %q: %v", key, err)
		}
		if diff := recordtest.Diff(got, want); diff != "" {
			t.Fatalf("lease record %q read back with other fields:%s", key, diff)
		}
	}
	t.Run("Create", s.run(func(t *testing.T, st store.Store, key string) {
		mustCreate(t, st, key, docs.Encode(held))
		read(t, st, key, held)
	}))
	t.Run("Patch", s.run(func(t *testing.T, st store.Store, key string) {
		mustCreate(t, st, key, docs.Encode(held))
		if err := st.Patch(t.Context(), key, docs.Encode(released), nil); err != nil {
			t.Fatalf("Patch(%q): %v", key, err)
		}
		read(t, st, key, released)
	}))
}
