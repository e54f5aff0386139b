// Package cluster elects one leader among the replicas of an application, on a lease.
//
// # The API
//
// A [Cluster] says whether this instance leads ([Cluster.IsLeader]), who it is
// ([Cluster.InstanceID]), and runs callbacks when leadership starts and ends
// ([Cluster.WhenLeader]). [Elector] implements it over any [Lock]: a lease record that can be
// read, created and updated with compare-and-swap. [NewStoreLock] makes a Lock from a
// store.Store; the kubernetes module makes one from a coordination.k8s.io Lease.
//
// Products built on the engine are packages of their own: cluster/locker is a per-key lock
// (every key a Locker holds rides on one session lease of its own, renewed by one write per
// R, as etcd's concurrency sessions do), cluster/holders elects
// up to N holders of a lease at once (an Elector per slot, of which a [Gate] lets one at a
// time hold in an instance), and cluster/partition spreads K partitions over the live
// instances (each holding its partitions through one lease of its own).
//
// # Timing
//
// With lease duration L and renew interval R, an Elector attempts to acquire or renew the lease
// at start and then every R. A leader stops leading when no attempt succeeded within (L+R)/2 of
// the start of its last successful one, so it never leads on a lease that may have expired for
// the others; a follower takes over a lease whose revision has not changed, on its own
// monotonic clock, for the longer of its own L and the duration the holder declared in the
// record ([Record.Duration]), so that instances configured apart never lead together. A crashed
// leader is replaced within that duration plus the follower's R of its last renewal (L+R when
// all agree); a leader that stops cleanly releases the lease and is replaced within R.
//
// A leader renews with one compare-and-swap on the revision it holds, without reading first
// (E10 in docs/design.md). When the Lock is also a [Watcher], the Elector keeps a watch of the
// lease open (E9): followers learn of a release at once and take the lease over on the
// released revision without reading it, learn of each renewal without polling, and, while the
// watch proves it is alive (a change or a heartbeat, which the Elector asks for every R/2)
// at least every R, send no periodic read at all. A watch that is down, silent or unsupported
// costs time, never safety: the follower polls every R again.
//
// # Callbacks
//
// Each registration's calls run in order on a goroutine of its own and never overlap: fn runs
// each time the instance becomes the leader, with a context cancelled when that leadership
// ends, and deregistered runs after fn has returned, each time leadership ends and on Stop.
// See [Cluster.WhenLeader] for the guarantees and for what a callback may call.
package cluster

import (
	"context"
	"errors"
	"time"

	"github.com/leasehold/leasehold/internal/termctx"
)

// LeaderFunc runs each time the instance becomes the leader. ctx is cancelled when that
// leadership ends, and carries the lease's term ([TermOf]). A returned error (or a panic) is
// logged; the election goes on.
//
// fn may return at once and leave work running on goroutines of its own until ctx ends, or
// do the work itself until ctx ends: the registration's deregistered waits for fn to return
// either way. Work that goes on after ctx ends may overlap the next leader's.
type LeaderFunc func(ctx context.Context) error

// Cluster is what an application asks of its cluster service.
type Cluster interface {
	// IsLeader reports whether this instance leads now. It is safe to call from anywhere,
	// callbacks included.
	IsLeader() bool
	// InstanceID is this instance's identity in the election.
	InstanceID() string
	// WhenLeader registers fn and deregistered (which may be nil). The returned function
	// removes the registration.
	//
	// Guarantees, for each registration:
	//   - fn starts only while IsLeader is true, each time the instance becomes the leader,
	//     and at once if it already leads when WhenLeader is called (W2). Its context is
	//     cancelled when that leadership ends, or by remove.
	//   - deregistered runs once for each fn that ran, after that fn has returned: when the
	//     leadership ends, when the cluster stops, or on remove. It does not run for a fn that
	//     never ran.
	//   - The calls run on a goroutine of the registration's own, one at a time, in order
	//     (W4); a slow callback delays only its own registration. Stop waits for them all.
	//   - An error or a panic from fn or deregistered is logged and ends nothing (W5).
	//
	// From inside fn or deregistered, a callback may call IsLeader, InstanceID and WhenLeader
	// (the new registration's fn runs on its own goroutine). What waits for callbacks must not
	// be called from one, nor from a goroutine a callback waits for: remove waits for its
	// registration's callbacks (from its own, it would wait for itself; two registrations
	// removing each other deadlock), and the cluster's Stop waits for every callback, so from a
	// callback it would wait for itself until its context ends, then return an error without
	// releasing the lease. From a callback, call them on a new goroutine and return: go
	// remove() ends the registration once the callback has returned (run once: do the work,
	// then go remove()), and go app.Stop(ctx) cancels fn's context and goes on once fn has
	// returned. fn must stop waiting for such a goroutine once its context ends.
	//
	// remove may be called any number of times, from any goroutine but the registration's
	// callbacks: each call returns once the registration has ended (fn's context cancelled,
	// fn returned, deregistered run if owed, W6): after that no callback of the registration
	// runs, or is running.
	WhenLeader(fn LeaderFunc, deregistered func()) (remove func())
}

// Record is a lease as a Lock stores it.
type Record struct {
	Holder     string        // instance ID, "" when released
	Term       uint64        // grows with each leadership, never repeats (E11)
	AcquiredAt time.Time     // when the holder took it
	RenewedAt  time.Time     // last renewal, by the holder's clock (informative)
	Duration   time.Duration // the holder's lease duration: followers wait at least this long
	Revision   string        // opaque compare-and-swap token, set by the Lock, never empty

	// ResignRequested is when [Resign] asked the holder to step down, by the asker's clock
	// (informative); zero when no request is pending. It means something only while Holder
	// is not empty (R1).
	ResignRequested time.Time
	// NextHolder is the instance a resign named to lead next, "" for none. In a held record
	// with a pending request it is the instance asked for; in a released record, the only
	// instance that may take it until the record expires as E6 judges it (R3).
	NextHolder string

	// Session is the token of the process that wrote Holder: each Elector draws one at
	// construction, so that two processes given one instance ID never take each other's
	// record for their own (E12). "" in a released record, and in a record written before
	// sessions existed: such a record is nobody's own.
	Session string

	// Value is what the holder publishes, its address for instance (V1); ValueTerm is the
	// term it was written for. A value whose term is not Term is stale, left by a writer that
	// does not know the field (V2): read it through CurrentValue.
	Value     string
	ValueTerm uint64

	// Priority is the holder's priority and Unhealthy whether its health check is failing
	// (Q1, U2); PriorityTerm is the term they were written for. Read them through
	// CurrentPriority: like Value, they are the holder's only for the term they name.
	Priority     int
	Unhealthy    bool
	PriorityTerm uint64

	// Preempt marks a resign request (and the release that answers it) written by a candidate
	// that outranks the holder, NextHolder, whose priority is NextPriority (Q2, Q4).
	Preempt      bool
	NextPriority int
}

// Lock stores lease records. Implementations are safe for concurrent use.
type Lock interface {
	// Get returns the record named name, or an error wrapping ErrNotFound.
	Get(ctx context.Context, name string) (Record, error)
	// Create stores r as a new record named name and returns it with its Revision set. It
	// returns an error wrapping ErrConflict when a record of that name exists.
	Create(ctx context.Context, name string, r Record) (Record, error)
	// Update replaces the record named name by r if its revision is still r.Revision, and
	// returns it with its new Revision. It returns an error wrapping ErrConflict when the
	// revision changed (a lost race), and ErrNotFound when the record is gone.
	Update(ctx context.Context, name string, r Record) (Record, error)
}

var (
	// ErrNotFound means the lease record does not exist.
	ErrNotFound = errors.New("cluster: lease not found")
	// ErrConflict means a compare-and-swap write lost a race.
	ErrConflict = errors.New("cluster: lease changed concurrently")
)

// TermOf returns the lease term carried by a LeaderFunc's context: a fencing token larger
// than that of every earlier leadership of the lease, by this instance or another (E11).
// Work that writes elsewhere can pass it on and let the target refuse writes from older
// terms.
func TermOf(ctx context.Context) (uint64, bool) {
	return termctx.Of(ctx)
}
