package cluster

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

// The store document's fields of the holder's priority and health (Q1, U2) and of a
// preemption (Q2, Q4): a document written before them has a holder of priority 0, healthy, and
// no preemption pending.
func init() {
	registerStoreFields(
		intField("priority", func(r *Record) *int { return &r.Priority }),
		boolField("unhealthy", func(r *Record) *bool { return &r.Unhealthy }),
		counterField("priorityTerm", func(r *Record) *uint64 { return &r.PriorityTerm }),
		boolField("preempt", func(r *Record) *bool { return &r.Preempt }),
		intField("nextPriority", func(r *Record) *int { return &r.NextPriority }),
	)
}
