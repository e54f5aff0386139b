package cluster

// Gate decides whether an Elector may write to hold its record: for a product that runs
// several Electors in one instance, of which only some may hold at once, or that takes a lease
// over only once it has expired (the fences of cluster/partition, D10). Set it in
// ElectorConfig.Gate; the Elector calls it from its attempts, which never overlap, but the
// Electors that share a Gate call it concurrently.
//
// A Gate may also have a method FollowsExpiry() bool: when it returns true, a record another
// holds that the gate refuses is followed as it is, so that the Elector judges its expiry (E6)
// while the gate is closed and Admit sees expired turn true.
type Gate interface {
	// Admit is called by an attempt that is about to write to hold rec: nil when the record
	// is missing; expired says whether it is another holder's record that has expired (E6).
	// false makes the attempt follow instead. rec is a copy, for the gate to read.
	Admit(rec *Record, expired bool) bool
	// Drop records that an attempt follows the record instead of writing to hold it: another
	// holder's record, or one Admit refused.
	Drop()
}

// gateClaimer is ElectorConfig.Gate as the engine calls it.
type gateClaimer struct{ g Gate }

var _ claimer = gateClaimer{}

func (c gateClaimer) acquire(_ int, rec *Record, expired bool) bool {
	if rec != nil {
		r := *rec // the attempt goes on with rec: the gate reads a copy
		rec = &r
	}
	return c.g.Admit(rec, expired)
}
func (c gateClaimer) drop(int)            { c.g.Drop() }
func (c gateClaimer) watchesExpiry() bool { return followsExpiry(c.g) }

// followsExpiry reports whether g follows a refused record as it is, to judge its expiry: its
// FollowsExpiry method says so, false without one.
func followsExpiry(g Gate) bool {
	f, ok := g.(interface{ FollowsExpiry() bool })
	return ok && f.FollowsExpiry()
}
