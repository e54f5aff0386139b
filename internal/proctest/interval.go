package proctest

import (
	"cmp"
	"fmt"
	"slices"
	"time"
)

// Interval is one leadership of one instance, on the shared clock.
type Interval struct {
	Instance string
	Term     uint64
	Start    int64 // the lead line's time
	// End is the earliest of the unlead line's time and the last deadline logged (IsLeader is
	// false from either on, W7). For an interval the log leaves open (a process killed while
	// leading), it is the last deadline.
	End  int64
	Open bool // no unlead line: the process died while leading
}

func (iv Interval) String() string {
	end := "unlead"
	if iv.Open {
		end = "deadline, no unlead"
	}
	return fmt.Sprintf("%s term %d [%d, %d] (%v, ended by %s)", iv.Instance, iv.Term, iv.Start, iv.End, time.Duration(iv.End-iv.Start), end)
}

// Intervals rebuilds the leadership intervals from the lines of a shared log, in the order
// they were written. Each instance's lines must alternate lead, renew..., unlead.
func Intervals(lines []Line) ([]Interval, error) {
	open := map[string]*Interval{}
	var out []Interval
	for i, l := range lines {
		iv := open[l.Instance]
		switch l.Kind {
		case KindLead:
			if iv != nil {
				return nil, fmt.Errorf("proctest: log line %d (%v): lead while already leading since %d", i+1, l, iv.Start)
			}
			open[l.Instance] = &Interval{Instance: l.Instance, Term: l.Term, Start: l.T, End: l.Deadline, Open: true}
		case KindRenew:
			if iv == nil {
				return nil, fmt.Errorf("proctest: log line %d (%v): renew while not leading", i+1, l)
			}
			if l.Term != iv.Term {
				return nil, fmt.Errorf("proctest: log line %d (%v): renew of term %d while leading for term %d", i+1, l, l.Term, iv.Term)
			}
			iv.End = max(iv.End, l.Deadline)
		case KindUnlead:
			if iv == nil {
				return nil, fmt.Errorf("proctest: log line %d (%v): unlead while not leading", i+1, l)
			}
			iv.End = min(iv.End, l.T)
			iv.Open = false
			out = append(out, *iv)
			delete(open, l.Instance)
		default:
			return nil, fmt.Errorf("proctest: log line %d (%v): kind %q does not belong in the log", i+1, l, l.Kind)
		}
	}
	for _, iv := range open {
		out = append(out, *iv)
	}
	slices.SortFunc(out, func(a, b Interval) int { return cmp.Compare(a.Start, b.Start) })
	return out, nil
}

// CheckExclusive checks that leadership intervals of different instances never overlap (E2,
// E5, W7) and that the term grows each time the leader changes (W8: the term is a fencing
// token). ivs must be sorted by Start, as Intervals returns them.
func CheckExclusive(ivs []Interval) error {
	for i := 1; i < len(ivs); i++ {
		prev, cur := ivs[i-1], ivs[i]
		// Compare with every earlier interval that could still be running: a long one
		// followed by a short one could hide an overlap from a check of neighbours only.
		for j := i - 1; j >= 0; j-- {
			if ivs[j].Instance != cur.Instance && ivs[j].End > cur.Start {
				return fmt.Errorf("proctest: two leaders at once for %v: %v and %v", time.Duration(ivs[j].End-cur.Start), ivs[j], cur)
			}
		}
		switch {
		case cur.Term < prev.Term:
			return fmt.Errorf("proctest: the term went down: %v, then %v", prev, cur)
		case cur.Instance != prev.Instance && cur.Term == prev.Term:
			return fmt.Errorf("proctest: the leader changed but not the term: %v, then %v", prev, cur)
		}
	}
	return nil
}
