//go:build unix

package main

import (
	"sync"

	"github.com/leasehold/leasehold/cluster"
)

// exitBusy is the status of run --try and --wait when another instance holds the lease: 75,
// EX_TEMPFAIL of sysexits.h, "try again later", as flock -n's conflict status is commonly set.
const exitBusy = 75

// candidacy is the wait of --try and --wait (C5): until this instance first leads, the command
// may give up. What another instance holding the lease means is what the election saw, never a
// judgement on the record's timestamps (E6): the record names another holder and is not
// released, or another instance wrote it between this attempt's read and its write. --try gives
// up only on a live holder: one whose record changed after this instance first saw it (a
// renewal, or any new revision of another holder's record: cluster.ObservedRevision after the
// first), or that won a race for it. A crashed holder's record stays unchanged, and the election
// takes it over once it has stayed so for the holder's duration (E6): --try then leads.
type candidacy struct {
	// decided receives a value when --try must give up: a live holder was seen, or an attempt
	// ended without an answer from the store (an error, a timeout).
	decided chan struct{}

	mu    sync.Mutex
	state candidacyState
	last  attemptAnswer
	seen  int // the revisions of another holder's record seen while waiting
}

type candidacyState int

const (
	waiting candidacyState = iota
	leading                // it led once: the wait is over for good
	gaveUp                 // CMD must never start
)

// attemptAnswer is what the last attempt that did not make this instance lead said.
type attemptAnswer struct {
	kind   answerKind
	holder string // for heldByOther: "" after a lost race, which does not say who won
	term   uint64
	reason string // for noAnswer: the Event's reason
	err    error
}

type answerKind int

const (
	none        answerKind = iota // no attempt has ended yet
	heldByOther                   // another instance holds the lease
	noAnswer                      // the attempt failed: the store's error, or its timeout
)

func newCandidacy() *candidacy { return &candidacy{decided: make(chan struct{}, 1)} }

// observe is an election observer: it only records, on the election's goroutine.
func (c *candidacy) observe(ev cluster.Event) {
	var a attemptAnswer
	decided := true
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.state != waiting {
		return
	}
	switch ev.Kind {
	case cluster.BecameLeader:
		c.state = leading
		return
	case cluster.AttemptSucceeded:
		if ev.Holder == ev.Instance {
			return // BecameLeader follows, or an AttemptFailed if the answer came too late
		}
		// Held by another, maybe a crashed one: --wait gives up on it at its end, --try only
		// once it changes.
		a, decided = attemptAnswer{kind: heldByOther, holder: ev.Holder, term: ev.Term}, false
	case cluster.ObservedRevision:
		// The first is the first sight of the record; a later one is a change: a live holder.
		c.seen++
		a, decided = attemptAnswer{kind: heldByOther, holder: ev.Holder, term: ev.Term}, c.seen > 1
	case cluster.AttemptFailed:
		if ev.Reason == cluster.ReasonConflict {
			a = attemptAnswer{kind: heldByOther, err: ev.Err} // a lost race: the winner is alive
		} else {
			a = attemptAnswer{kind: noAnswer, reason: ev.Reason, err: ev.Err}
		}
	default:
		return
	}
	c.last = a
	if decided {
		select {
		case c.decided <- struct{}{}:
		default:
		}
	}
}

// giveUp ends the wait unless this instance leads already; it returns the last answer.
func (c *candidacy) giveUp() (attemptAnswer, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.state != waiting {
		return attemptAnswer{}, false
	}
	c.state = gaveUp
	return c.last, true
}

// lead reports whether CMD may start for a leadership that began: not once the command gave
// up, even if the attempt in flight as it did made this instance lead.
func (c *candidacy) lead() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.state == gaveUp {
		return false
	}
	c.state = leading
	return true
}
