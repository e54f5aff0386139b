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
// # Callbacks
//
// Each registration's calls run in order on a goroutine of its own and never overlap: fn runs
// each time the instance becomes the leader, with a context cancelled when that leadership
// ends, and deregistered runs after fn has returned, each time leadership ends and on Stop.
package cluster

import (
	"context"
	"errors"
	"time"
)

// LeaderFunc runs each time the instance becomes the leader. ctx is cancelled when that
// leadership ends, and carries the lease's term ([TermOf]). A returned error (or a panic) is
// logged; the election goes on.
type LeaderFunc func(ctx context.Context) error

// Cluster is what an application asks of its cluster service.
type Cluster interface {
	// IsLeader reports whether this instance leads now.
	IsLeader() bool
	// InstanceID is this instance's identity in the election.
	InstanceID() string
	// WhenLeader registers fn and deregistered (which may be nil). The returned function
	// removes the registration.
	WhenLeader(fn LeaderFunc, deregistered func()) (remove func())
}

// Record is a lease as a Lock stores it.
type Record struct {
	Holder     string        // instance ID, "" when released
	Term       uint64        // grows each time the lease changes holder
	AcquiredAt time.Time     // when the holder took it
	RenewedAt  time.Time     // last renewal, by the holder's clock (informative)
	Duration   time.Duration // the holder's lease duration: followers wait at least this long
	Revision   string        // opaque compare-and-swap token, set by the Lock, never empty
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

type termKey struct{}

// WithTerm returns ctx carrying the lease term. Elector uses it for the contexts it gives to
// LeaderFuncs; other Cluster implementations may too.
func WithTerm(ctx context.Context, term uint64) context.Context {
	return context.WithValue(ctx, termKey{}, term)
}

// TermOf returns the lease term carried by a LeaderFunc's context: a fencing token that grows
// every time the lease changes holder. Work that writes elsewhere can pass it on and let the
// target refuse writes from older terms.
func TermOf(ctx context.Context) (uint64, bool) {
	t, ok := ctx.Value(termKey{}).(uint64)
	return t, ok
}
