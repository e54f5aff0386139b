package cluster

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"testing/synctest"
	"time"
)

// createLostLock finds no record and loses every Create, as an instance does when another one
// created the record between its read and its write.
type createLostLock struct{}

func (createLostLock) Get(context.Context, string) (Record, error) { return Record{}, ErrNotFound }
func (createLostLock) Create(context.Context, string, Record) (Record, error) {
	return Record{}, fmt.Errorf("%w: already exists", ErrConflict)
}
func (createLostLock) Update(context.Context, string, Record) (Record, error) {
	return Record{}, errors.New("unused")
}

// A lost race to create the record is logged at INFO, not as a failed attempt; the event is
// still an AttemptFailed with the reason conflict, for the metrics.
func TestLostCreationRaceLoggedAtInfo(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		logs := &logCapture{}
		var events []Event
		e, err := NewElector(ElectorConfig{Lock: createLostLock{}, LeaseName: "jobs", InstanceID: "a", Logger: logs.Logger(),
			Observer: func(ev Event) { events = append(events, ev) }})
		if err != nil {
			t.Fatal(err)
		}
		if err := e.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Second)
		synctest.Wait()
		if err := e.Stop(context.Background()); err != nil {
			t.Fatal(err)
		}
		if recs := logs.Find("leasehold: attempt failed"); len(recs) != 0 {
			t.Errorf("a lost creation race logged as a failed attempt: %v", recs)
		}
		recs := logs.Find("leasehold: lost the race to create the lease")
		if len(recs) != 1 || recs[0]["level"] != "INFO" {
			t.Errorf("lost-race records %v, want one at INFO", recs)
		}
		if len(events) == 0 || events[0].Kind != AttemptFailed || events[0].Reason != ReasonConflict || !errors.Is(events[0].Err, ErrConflict) {
			t.Errorf("first event %+v, want AttemptFailed, reason conflict, an ErrConflict", events)
		}
	})
}
