package cluster

import (
	"testing"
	"testing/synctest"
	"time"
)

// E1, E2: the first instance creates the record and leads at once; the second follows.
func TestE2FirstLeadsOthersFollow(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t)
		a := w.node("a", 0, 0).start()
		synctest.Wait()
		if !a.e.IsLeader() {
			t.Fatal("a: not leading after its first attempt on an absent record")
		}
		b := w.node("b", 0, 0).start()
		synctest.Wait()
		if b.e.IsLeader() {
			t.Fatal("b leads while a holds the lease")
		}
		if term, ok := a.e.Term(); !ok || term != 1 {
			t.Fatalf("a: term %d, %v; want 1, true", term, ok)
		}
		time.Sleep(time.Minute)
		if !a.e.IsLeader() || b.e.IsLeader() {
			t.Fatalf("after a minute: a leader %v, b leader %v; want a only", a.e.IsLeader(), b.e.IsLeader())
		}
	})
}
