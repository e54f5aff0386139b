package cluster

// NewerThan says whether r was written after b, by the lease's own order: its term, then its
// renewal time (which every writer makes strictly increase across its writes, E9), then the
// time of a resign request, which is written on the holder's record as it is (R1), renewal
// time included. Revisions are opaque and do not order; a watch that may deliver a record
// late, or after a read that saw a later one, drops what is not newer than the newest it
// knows.
func (r Record) NewerThan(b Record) bool {
	if r.Term != b.Term {
		return r.Term > b.Term
	}
	if !r.RenewedAt.Equal(b.RenewedAt) {
		return r.RenewedAt.After(b.RenewedAt)
	}
	return r.ResignRequested.After(b.ResignRequested)
}
