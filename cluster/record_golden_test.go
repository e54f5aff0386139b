package cluster

import (
	"maps"
	"reflect"
	"testing"
	"time"
)

// S1: the store document of a record is the same, key for key and value for value, whatever
// the code that writes it: instances of two versions share a lease, and each reads what the
// other writes.
func TestS1StoreDocumentGolden(t *testing.T) {
	at := time.Date(2026, 12, 7, 15, 4, 5, 123456789, time.UTC)
	held := Record{
		Holder: "web-1", Term: 9, AcquiredAt: at, RenewedAt: at.Add(time.Second), Duration: 15 * time.Second,
		Revision: "REV1", ResignRequested: at.Add(2 * time.Second), NextHolder: "web-2", Session: "s-1",
		Value: "http://10.0.0.7:8080", ValueTerm: 8, Priority: -3, Unhealthy: true, PriorityTerm: 9,
		Preempt: true, NextPriority: 5,
	}
	heldDoc := map[string]any{
		"holder": "web-1", "term": 9.0, "acquiredAt": "2026-12-07T15:04:05.123456789Z",
		"renewedAt": "2026-12-07T15:04:06.123456789Z", "leaseDuration": 15000.0, "revision": "REV1",
		"resignRequestedAt": "2026-12-07T15:04:07.123456789Z", "nextHolder": "web-2", "session": "s-1",
		"value": "http://10.0.0.7:8080", "valueTerm": 8.0,
		"priority": -3.0, "unhealthy": true, "priorityTerm": 9.0, "preempt": true, "nextPriority": 5.0,
	}
	released := Record{Term: 9, Duration: 1500 * time.Millisecond, Revision: "REV2"}
	releasedDoc := map[string]any{
		"holder": "", "term": 9.0, "acquiredAt": "", "renewedAt": "", "leaseDuration": 1500.0, "revision": "REV2",
		"resignRequestedAt": "", "nextHolder": "", "session": "", "value": "", "valueTerm": 0.0,
		"priority": 0.0, "unhealthy": false, "priorityTerm": 0.0, "preempt": false, "nextPriority": 0.0,
	}
	for _, c := range []struct {
		r   Record
		doc map[string]any
	}{{held, heldDoc}, {released, releasedDoc}} {
		// Keys of fields added since are no part of the golden documents: the round trip of
		// every field (the conformance suite's LeaseRecord) covers them.
		got := map[string]any{}
		for k, v := range encodeRecord(c.r) {
			if _, ok := heldDoc[k]; ok {
				got[k] = v
			}
		}
		if !reflect.DeepEqual(got, c.doc) {
			t.Errorf("encodeRecord(%+v) =\n%v\nwant\n%v", c.r, got, c.doc)
		}
		if got, err := decodeRecord("cluster:x", maps.Clone(c.doc)); err != nil || got != c.r {
			t.Errorf("decodeRecord(%v) = %+v, %v; want %+v", c.doc, got, err, c.r)
		}
	}
}
