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
// may give up. What another instance holding the lease means is what an attempt answers (E2),
// never a judgement on the record's timestamps (E6): the record names another holder and is
// not released, or another instance wrote it between this attempt's read and its write.
type candidacy struct {
	// answered receives a value after each attempt that ended without making this instance
	// lead: --try gives up at the first.
	answered chan struct{}

	mu    sync.Mutex
	state candidacyState
	last  attemptAnswer
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

func newCandidacy() *candidacy { return &candidacy{answered: make(chan struct{}, 1)} }

// observe is an election observer: it only records, on the election's goroutine.
func (c *candidacy) observe(ev cluster.Event) {
	var a attemptAnswer
	switch ev.Kind {
	case cluster.BecameLeader:
		c.mu.Lock()
		if c.state == waiting {
			c.state = leading
		}
		c.mu.Unlock()
		return
	case cluster.AttemptSucceeded:
		if ev.Holder == ev.Instance {
			return // BecameLeader follows, or an AttemptFailed if the answer came too late
		}
		a = attemptAnswer{kind: heldByOther, holder: ev.Holder, term: ev.Term}
	case cluster.AttemptFailed:
		if ev.Reason == cluster.ReasonConflict {
			a = attemptAnswer{kind: heldByOther, err: ev.Err}
		} else {
			a = attemptAnswer{kind: noAnswer, reason: ev.Reason, err: ev.Err}
		}
	default:
		return
	}
	c.mu.Lock()
	if c.state == waiting {
		c.last = a
	}
	c.mu.Unlock()
	select {
	case c.answered <- struct{}{}:
	default:
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
