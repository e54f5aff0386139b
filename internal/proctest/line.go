package proctest

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// Kind says what a Line reports.
type Kind string

// Kinds of lines. The log file holds lead, renew and unlead lines; a worker's stdout has
// every kind.
const (
	KindReady   Kind = "ready"   // the worker has started its Elector
	KindLead    Kind = "lead"    // it became the leader (cluster.BecameLeader)
	KindRenew   Kind = "renew"   // it renewed the lease while leading (cluster.AttemptSucceeded)
	KindUnlead  Kind = "unlead"  // it stopped leading (cluster.StoppedLeading)
	KindStopped Kind = "stopped" // Elector.Stop returned after SIGTERM; Reason is "ok" or the error
)

// Line is one event of one worker: a line of the shared log and of the worker's stdout.
type Line struct {
	Instance string
	Kind     Kind
	Term     uint64
	// T is when it happened, on the shared clock (Now), in nanoseconds. For lead it is when
	// the winning write returned, the earliest instant the instance could lead; for renew,
	// when the renewal's answer was handled, at which point the write had landed.
	T int64
	// Deadline, for lead and renew, is when this leadership ends unless renewed again: the
	// start of the successful attempt plus (L+R)/2 (E5). The worker estimates the start as
	// the event's time minus the attempt's duration, which can only be later than the true
	// start, so the deadline is never earlier than the Elector's own. 0 for other kinds.
	Deadline int64
	Reason   string // unlead: the cluster.Reason*; stopped: "ok" or Stop's error
}

// String formats the line as written: "instance kind term t deadline reason", the reason
// last so that it may hold spaces.
func (l Line) String() string {
	reason := l.Reason
	if reason == "" {
		reason = "-"
	}
	reason = strings.ReplaceAll(reason, "\n", " ")
	return fmt.Sprintf("%s %s %d %d %d %s", l.Instance, l.Kind, l.Term, l.T, l.Deadline, reason)
}

// ParseLine parses a line written by String.
func ParseLine(s string) (Line, error) {
	f := strings.SplitN(strings.TrimSuffix(s, "\n"), " ", 6)
	if len(f) != 6 {
		return Line{}, fmt.Errorf("proctest: line %q: want 6 fields", s)
	}
	l := Line{Instance: f[0], Kind: Kind(f[1]), Reason: f[5]}
	if l.Reason == "-" {
		l.Reason = ""
	}
	var err error
	if l.Term, err = strconv.ParseUint(f[2], 10, 64); err != nil {
		return Line{}, fmt.Errorf("proctest: line %q: term: %w", s, err)
	}
	if l.T, err = strconv.ParseInt(f[3], 10, 64); err != nil {
		return Line{}, fmt.Errorf("proctest: line %q: time: %w", s, err)
	}
	if l.Deadline, err = strconv.ParseInt(f[4], 10, 64); err != nil {
		return Line{}, fmt.Errorf("proctest: line %q: deadline: %w", s, err)
	}
	switch l.Kind {
	case KindReady, KindLead, KindRenew, KindUnlead, KindStopped:
	default:
		return Line{}, fmt.Errorf("proctest: line %q: unknown kind %q", s, l.Kind)
	}
	return l, nil
}

// ReadLog reads a shared log file.
func ReadLog(path string) ([]Line, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var lines []Line
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		l, err := ParseLine(sc.Text())
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %w", path, n, err)
		}
		lines = append(lines, l)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return lines, nil
}
