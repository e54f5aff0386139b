package cluster

import (
	"strings"
	"testing"
	"time"
)

// S1: a record encoded for a store decodes back to itself; a malformed document is an error
// naming the field, by the rule the store Lock applies.
func TestS1StoreRecordRoundTrip(t *testing.T) {
	at := time.Date(2026, 11, 30, 9, 17, 13, 382846842, time.UTC)
	r := Record{Holder: "web-1", Term: 41, AcquiredAt: at, RenewedAt: at.Add(time.Second), Duration: 15 * time.Second, Revision: newRevision(), Session: "4f1c9a0b7e2d3c58", Value: "http://10.0.0.7:8080/x?y=1", ValueTerm: 41}
	got, err := decodeRecord("cluster:jobs", encodeRecord(r))
	if err != nil || got != r {
		t.Fatalf("decodeRecord(encodeRecord(%+v)) = %+v, %v", r, got, err)
	}
	// A record written before sessions existed has none (E12).
	old := encodeRecord(r)
	delete(old, "session")
	if got, err := decodeRecord("cluster:jobs", old); err != nil || got.Session != "" || got.Holder != "web-1" {
		t.Fatalf("decodeRecord of a record without a session = %+v, %v; want its holder and an empty session", got, err)
	}
	// Nor the published value (V1).
	delete(old, "value")
	delete(old, "valueTerm")
	if got, err := decodeRecord("cluster:jobs", old); err != nil || got.Value != "" || got.ValueTerm != 0 || got.Term != 41 {
		t.Fatalf("decodeRecord of a record without a value = %+v, %v; want no value", got, err)
	}
	old["valueTerm"] = -1.0
	if _, err := decodeRecord("cluster:jobs", old); err == nil || !strings.Contains(err.Error(), `"cluster:jobs": field "valueTerm"`) {
		t.Fatalf("decodeRecord of a record with a negative valueTerm: %v; want an error naming the key and the field", err)
	}
	delete(old, "valueTerm")
	old["session"] = 7.0
	if _, err := decodeRecord("cluster:jobs", old); err == nil || !strings.Contains(err.Error(), `field "session"`) {
		t.Fatalf("decodeRecord of a record with a numeric session: %v; want an error naming the field", err)
	}
	if newRevision() == newRevision() {
		t.Fatal("newRevision repeats")
	}
	doc := encodeRecord(r)
	doc["term"] = "garbage"
	if _, err := decodeRecord("cluster:jobs", doc); err == nil || !strings.Contains(err.Error(), `"cluster:jobs": field "term"`) {
		t.Fatalf("decodeRecord of a record with a garbage term: %v; want an error naming the key and the field", err)
	}
}
