package cluster

import "time"

// EventKind says what an [Event] reports.
type EventKind int

const (
	// BecameLeader: this instance leads, from now on, for Event.Term.
	BecameLeader EventKind = iota + 1
	// StoppedLeading: this instance no longer leads; Event.Reason says why.
	StoppedLeading
	// AttemptSucceeded: an attempt finished with an answer: Event.Holder holds the lease (this
	// instance, which renewed or acquired it, or another one it follows); Event.Duration is how
	// long the attempt took.
	AttemptSucceeded
	// AttemptFailed: an attempt failed (backend error, lost race, timeout); Event.Reason
	// classifies it and Event.Err holds the error.
	AttemptFailed
	// ObservedLeader: this instance saw a new holder of the lease (Event.Holder, Event.Term),
	// which may be itself.
	ObservedLeader
	// WatchedChange: the lease's watch brought a record newer than any this instance knew
	// (Event.Holder, Event.Term), without an attempt (E9). A follower whose watch is healthy
	// sends no attempts, so this, like AttemptSucceeded, says the instance is in touch with
	// the backend.
	WatchedChange
	// ObservedRevision: as a follower, this instance counts a new revision of another
	// holder's record (Event.Holder, Event.Term) as first seen now, read by an attempt or
	// brought by the watch (E6, E9): from now, that revision expires once it has stayed the
	// same for the holder's declared duration (at least this instance's L). The first one is
	// the first sight of the record; each later one says the record changed meanwhile, by a
	// renewal or another write: its holder is alive. A try-acquire that must not wait for an
	// expiry but must not give up on a dead holder either (`leasehold run --try`, C5) gives up
	// on the second.
	ObservedRevision
)

func (k EventKind) String() string {
	switch k {
	case BecameLeader:
		return "became_leader"
	case StoppedLeading:
		return "stopped_leading"
	case AttemptSucceeded:
		return "attempt_succeeded"
	case AttemptFailed:
		return "attempt_failed"
	case ObservedLeader:
		return "observed_leader"
	case WatchedChange:
		return "watched_change"
	case ObservedRevision:
		return "observed_revision"
	}
	return "unknown"
}

// Reasons given in Event.Reason.
const (
	ReasonError    = "error"    // the backend returned an error
	ReasonConflict = "conflict" // a compare-and-swap write lost a race
	ReasonTimeout  = "timeout"  // no answer within LeaseDuration - RenewInterval (E3)
	ReasonDeadline = "deadline" // no successful attempt within (L+R)/2 of the last one (E5)
	ReasonTakenBy  = "taken"    // the record is held by another instance
	ReasonLate     = "late"     // an attempt succeeded after its own deadline
	ReasonStop     = "stop"     // the elector is stopping
)

// Event is something that happened in an election. Observers get them in order, from the
// election's goroutine.
type Event struct {
	Kind     EventKind
	Time     time.Time     // when it happened, on this instance's clock (StoppedLeading: when IsLeader turned false, W7)
	Lease    string        // the lease name
	Instance string        // this instance's ID
	Term     uint64        // the lease term, when known
	Holder   string        // the holder seen, for ObservedLeader, ObservedRevision and AttemptSucceeded
	Reason   string        // for StoppedLeading and AttemptFailed
	Err      error         // for AttemptFailed, and StoppedLeading caused by an error
	Duration time.Duration // for AttemptSucceeded and AttemptFailed: the attempt's duration
}
