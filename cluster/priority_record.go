package cluster

import (
	"fmt"
	"math"
)

// CurrentPriority returns the priority of r's holder and whether it reported itself unhealthy,
// for its current term (Q1, U2): 0 and false when the record is released, and when they were
// written for another term (a writer that does not know the fields, a client-go LeaderElector
// taking a Lease over, keeps them).
func (r Record) CurrentPriority() (priority int, unhealthy bool) {
	if r.Holder == "" || r.PriorityTerm != r.Term {
		return 0, false
	}
	return r.Priority, r.Unhealthy
}

// encodePriority writes the holder's priority and health and a pending preemption, always,
// zero when unset: a Patch leaves the fields it does not name, and a renewal must clear a
// request and a release the holder's rank.
func encodePriority(doc map[string]any, r Record) {
	doc["priority"], doc["unhealthy"], doc["priorityTerm"] = float64(r.Priority), r.Unhealthy, float64(r.PriorityTerm)
	doc["preempt"], doc["nextPriority"] = r.Preempt, float64(r.NextPriority)
}

// decodePriority reads the fields encodePriority writes; a record written before them has a
// holder of priority 0, healthy, and no preemption pending.
func decodePriority(doc map[string]any, r *Record) error {
	for _, f := range []struct {
		name    string
		signed  *int
		counter *uint64
	}{{"priority", &r.Priority, nil}, {"nextPriority", &r.NextPriority, nil}, {"priorityTerm", nil, &r.PriorityTerm}} {
		v, ok := doc[f.name]
		if !ok || v == nil {
			continue
		}
		n, ok := v.(float64)
		switch {
		case !ok || n != math.Trunc(n) || (f.signed != nil && math.Abs(n) > math.MaxInt32):
			return fmt.Errorf("field %q is %v, want an integer", f.name, v)
		case f.counter != nil && n < 0:
			return fmt.Errorf("field %q is %v, want a non-negative integer", f.name, v)
		case f.counter != nil:
			*f.counter = uint64(n)
		default:
			*f.signed = int(n)
		}
	}
	for _, f := range []struct {
		name string
		b    *bool
	}{{"unhealthy", &r.Unhealthy}, {"preempt", &r.Preempt}} {
		v, ok := doc[f.name]
		if !ok || v == nil {
			continue
		}
		if *f.b, ok = v.(bool); !ok {
			return fmt.Errorf("field %q is %v, want true or false", f.name, v)
		}
	}
	return nil
}
