package cluster

import (
	"context"
	"testing"
	"testing/synctest"
)

// E7, found by TestRandomFaults: an instance whose first write (the create) landed but whose
// answer was lost holds the lease without knowing it. When the read Stop makes to release it
// then fails, Stop must not report success: it returned nil and left the lease held, so the
// others waited for it to expire while the caller was told the lease was handed back.
func TestRegressStopAfterLostCreateAnswerAndFailedRead(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t)
		a := w.node("a", 0, 0)
		a.faults.Set(func(f *faultStore) { f.WriteThenHang = true })
		a.start()
		w.At(sec(1)) // the create is applied; its answer never comes (E3 ends the attempt at 10 s)
		if doc := w.record(); doc == nil || doc["holder"] != "a" {
			t.Fatalf("record after the create: %v; want holder a", doc)
		}
		a.faults.Set(func(f *faultStore) { f.Err = errInjected })
		w.At(sec(11)) // the attempt at 10 s fails on the error: a never learns it holds the lease
		if a.e.IsLeader() {
			t.Fatal("a leads without an answer from the store")
		}
		err := a.e.Stop(context.Background())
		if doc := w.record(); err == nil && doc["holder"] == "a" {
			t.Fatalf("Stop returned nil, but the lease is still held by a (%v): it was neither released nor reported", doc)
		}
	})
}
