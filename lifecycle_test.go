package leasehold

import (
	"context"
	"reflect"
	"testing"
	"testing/synctest"
)

// A3: Stop before Start still ends the local cluster's leadership: it led from New, so fn
// ran and its deregistered is owed.
func TestA3StopBeforeStartEndsLocalLeadership(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		resetJournal(t)
		app := newApp(t, `{"services": {"r": {"type": "test/Recorder", "name": "r"}}}`)
		var j journal
		app.WhenLeader(func(context.Context) error { j.add("fn"); return nil }, func() { j.add("deregistered") })
		synctest.Wait()
		if err := app.Stop(context.Background()); err != nil {
			t.Fatal(err)
		}
		if got, want := j.get(), []string{"fn", "deregistered"}; !reflect.DeepEqual(got, want) {
			t.Fatalf("calls %v; want %v (Stop must end the leadership)", got, want)
		}
		if app.Cluster().IsLeader() {
			t.Fatal("IsLeader is true after Stop")
		}
		if err := app.Start(context.Background()); err == nil {
			t.Fatal("Start after Stop: no error")
		}
	})
}
