package storetest

import (
	"testing"
	"time"

	"github.com/leasehold/leasehold/cluster"
	"github.com/leasehold/leasehold/internal/storerecord"
	"github.com/leasehold/leasehold/store"
)

// leaseRecord checks that a lease record, as the store Lock encodes it, reads back as itself
// through Create and through Patch: the published value (V1), the holder's priority and health
// (Q1, U2) and a preemption request (Q2) included, and a release's cleared fields replacing a
// held one's.
// docs is the store Lock's document codec: the suite writes and reads lease records as the
// elections do.
var docs = cluster.NewStoreLock(nil).(storerecord.Codec[cluster.Record])

func (s *suite) leaseRecord(t *testing.T) {
	at := time.Date(2026, 12, 4, 19, 40, 1, 123456789, time.UTC)
	held := cluster.Record{
		Holder: "web-1", Term: 7, AcquiredAt: at, RenewedAt: at.Add(time.Second), Duration: 15 * time.Second,
		Revision: docs.NewRevision(), Session: "4f1c9a0b7e2d3c58",
		Value: "http://10.0.0.7:8080/a?b=c&d=é", ValueTerm: 7,
		Priority: -3, Unhealthy: true, PriorityTerm: 7,
		ResignRequested: at.Add(2 * time.Second), NextHolder: "web-2", Preempt: true, NextPriority: 5,
	}
	released := held
	released.Holder, released.Session, released.Value, released.ValueTerm = "", "", "", 0
	released.Priority, released.Unhealthy, released.PriorityTerm, released.ResignRequested = 0, false, 0, time.Time{}
	released.Revision = docs.NewRevision()
	read := func(t *testing.T, st store.Store, key string, want cluster.Record) {
		t.Helper()
		got, err := docs.Decode(key, mustGet(t, st, key))
		if err != nil || got != want {
			t.Fatalf("lease record %q read back as %+v, %v; want %+v", key, got, err, want)
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
