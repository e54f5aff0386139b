package proctest

import (
	"fmt"
	"os"
	"time"

	"github.com/leasehold/leasehold/cluster"
)

// Observer returns the cluster.Event observer of a worker's Elector (Worker.Observer): it
// appends instance id's lead, renew and unlead lines to log, each with one O_APPEND write on
// the shared clock (Now), and writes them to stdout too. l and r are the Elector's
// LeaseDuration and RenewInterval, from which it derives each line's deadline. It exits the
// process when a line cannot be written: a log with a hole in it would prove nothing. It
// must run on the election goroutine (as an ElectorConfig.Observer does), one event at a
// time.
func Observer(id string, l, r time.Duration, log *os.File) func(cluster.Event) {
	rec := &recorder{id: id, half: (l + r) / 2, log: log, stdout: true}
	return rec.observe
}

// LogObserver is Observer without the copy on stdout: the lines of a lease the driver does not
// follow line by line (one partition of many), checked from log afterwards.
func LogObserver(id string, l, r time.Duration, log *os.File) func(cluster.Event) {
	rec := &recorder{id: id, half: (l + r) / 2, log: log}
	return rec.observe
}

// recorder turns the Elector's events into lines. observe runs on the election goroutine,
// one event at a time, so its fields need no lock.
type recorder struct {
	id     string
	half   time.Duration // (L+R)/2
	log    *os.File
	stdout bool // copy each line on stdout

	leading  bool
	term     uint64
	deadline int64 // of the last successful attempt
}

func (w *recorder) observe(ev cluster.Event) {
	switch ev.Kind {
	case cluster.AttemptSucceeded:
		// The attempt started ev.Duration before its answer; ev.Time is a little after the
		// answer, so this start (and the deadline) can only be late, never early.
		t := at(ev.Time)
		w.deadline = t - int64(ev.Duration) + int64(w.half)
		// The Elector reports a follower's attempt after it has stopped leading, and a new
		// leadership after this event: leading with the same term means a renewal.
		if w.leading && ev.Term == w.term {
			w.write(Line{Instance: w.id, Kind: KindRenew, Term: ev.Term, T: t, Deadline: w.deadline})
		}
	case cluster.BecameLeader:
		w.leading, w.term = true, ev.Term
		w.write(Line{Instance: w.id, Kind: KindLead, Term: ev.Term, T: at(ev.Time), Deadline: w.deadline})
	case cluster.StoppedLeading:
		w.leading = false
		w.write(Line{Instance: w.id, Kind: KindUnlead, Term: ev.Term, T: at(ev.Time), Reason: ev.Reason})
	}
}

// write appends l to the shared log with one O_APPEND write, so that lines of different
// processes never interleave, then reports it on stdout unless it is a LogObserver's.
func (w *recorder) write(l Line) {
	if _, err := w.log.WriteString(l.String() + "\n"); err != nil {
		fmt.Fprintf(os.Stderr, "proctest worker %s: log: %v\n", w.id, err)
		os.Exit(ExitLogWrite)
	}
	if w.stdout {
		WriteLine(l)
	}
}
