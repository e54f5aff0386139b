//go:build unix

package main

import (
	"errors"
	"testing"

	"github.com/leasehold/leasehold/cluster"
)

// C5: what the election's events make of the wait. Each case feeds events to a candidacy,
// then gives up, as --try does once it is decided and --wait at its end.
func TestCandidacy(t *testing.T) {
	errStore := errors.New("store down")
	ev := func(kind cluster.EventKind, holder string, term uint64, reason string) cluster.Event {
		return cluster.Event{Kind: kind, Instance: "me", Holder: holder, Term: term, Reason: reason, Err: errStore}
	}
	read := func(holder string, term uint64) []cluster.Event {
		return []cluster.Event{ev(cluster.AttemptSucceeded, holder, term, ""), ev(cluster.ObservedRevision, holder, term, "")}
	}
	for _, tc := range []struct {
		name    string
		events  []cluster.Event
		decided bool // --try gives up now
		gaveUp  bool
		want    attemptAnswer
	}{
		// A record seen once may be a crashed holder's: --try waits for the election to take it
		// over when it expires (E6); --wait, ending, says who held it.
		{"held by another, seen once", read("other", 4), false, true,
			attemptAnswer{kind: heldByOther, holder: "other", term: 4}},
		{"held by another, read again unchanged", append(read("other", 4), ev(cluster.AttemptSucceeded, "other", 4, "")), false, true,
			attemptAnswer{kind: heldByOther, holder: "other", term: 4}},
		{"renewed by its holder", append(read("other", 4), ev(cluster.ObservedRevision, "other", 4, "")), true, true,
			attemptAnswer{kind: heldByOther, holder: "other", term: 4}},
		{"renewed, seen by the watch", append(read("other", 4), ev(cluster.WatchedChange, "other", 4, ""), ev(cluster.ObservedRevision, "other", 4, "")), true, true,
			attemptAnswer{kind: heldByOther, holder: "other", term: 4}},
		{"taken by a third", append(read("other", 4), ev(cluster.ObservedRevision, "third", 5, "")), true, true,
			attemptAnswer{kind: heldByOther, holder: "third", term: 5}},
		{"lost race", []cluster.Event{ev(cluster.AttemptFailed, "", 0, cluster.ReasonConflict)}, true, true,
			attemptAnswer{kind: heldByOther, err: errStore}},
		{"lost race for an expired record", append(read("other", 4), ev(cluster.AttemptFailed, "", 0, cluster.ReasonConflict)), true, true,
			attemptAnswer{kind: heldByOther, err: errStore}},
		{"store error", []cluster.Event{ev(cluster.AttemptFailed, "", 0, cluster.ReasonError)}, true, true,
			attemptAnswer{kind: noAnswer, reason: cluster.ReasonError, err: errStore}},
		{"timeout after a holder was seen", append(read("other", 4), ev(cluster.AttemptFailed, "", 0, cluster.ReasonTimeout)), true, true,
			attemptAnswer{kind: noAnswer, reason: cluster.ReasonTimeout, err: errStore}},
		{"no attempt ended", nil, false, true, attemptAnswer{}},
		{"led", []cluster.Event{ev(cluster.AttemptSucceeded, "me", 1, ""), ev(cluster.ObservedLeader, "me", 1, ""), ev(cluster.BecameLeader, "", 1, "")}, false, false, attemptAnswer{}},
		{"led after a crashed holder's record expired", append(read("other", 1), ev(cluster.AttemptSucceeded, "other", 1, ""), ev(cluster.AttemptSucceeded, "me", 2, ""), ev(cluster.BecameLeader, "", 2, "")), false, false, attemptAnswer{}},
		{"too late to lead", []cluster.Event{ev(cluster.AttemptSucceeded, "me", 1, ""), ev(cluster.AttemptFailed, "", 0, cluster.ReasonLate)}, true, true,
			attemptAnswer{kind: noAnswer, reason: cluster.ReasonLate, err: errStore}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newCandidacy()
			for _, e := range tc.events {
				c.observe(e)
			}
			decided := false
			select {
			case <-c.decided:
				decided = true
			default:
			}
			a, gaveUp := c.giveUp()
			if decided != tc.decided || gaveUp != tc.gaveUp || a != tc.want {
				t.Fatalf("decided %v, giveUp() = %+v, %v; want %v, %+v, %v", decided, a, gaveUp, tc.decided, tc.want, tc.gaveUp)
			}
			if lead := c.lead(); lead == gaveUp {
				t.Fatalf("lead() = %v after giveUp() = %v: CMD must start exactly when the wait was not given up", lead, gaveUp)
			}
		})
	}
	// The leadership that the attempt in flight as the wait ended brings starts no CMD, and a
	// later give-up changes nothing once CMD may start.
	c := newCandidacy()
	if _, ok := c.giveUp(); !ok {
		t.Fatal("giveUp before any event: want it to end the wait")
	}
	c.observe(cluster.Event{Kind: cluster.BecameLeader, Instance: "me", Term: 1})
	if c.lead() {
		t.Fatal("lead() after giving up: CMD would start")
	}
	c = newCandidacy()
	if !c.lead() {
		t.Fatal("lead() while waiting: want CMD to start")
	}
	if _, ok := c.giveUp(); ok {
		t.Fatal("giveUp after CMD started: want it refused")
	}
}
