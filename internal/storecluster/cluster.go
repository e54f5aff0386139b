//go:build unix

package storecluster

import (
	"context"
	"errors"
)

// ErrUnavailable marks a cluster that cannot be started here: a server binary is missing or
// refuses to run. Tests skip on it unless servers are required (testenv.Required).
var ErrUnavailable = errors.New("storecluster: unavailable")

// ErrNoFailover is returned by Cluster.Failover for a cluster that has no way to fail over on
// request (its members elect their own leader; kill or pause the leader instead).
var ErrNoFailover = errors.New("storecluster: this cluster does not fail over on request")

// Direct is implemented by a Cluster whose clients find its servers by themselves (Redis
// clients ask the Sentinels, which name the servers' own addresses): its URL takes no addrs,
// and nothing can be put between a client and a member.
type Direct interface {
	Direct() bool
}

// Rejoiner is implemented by a Cluster whose killed member must not simply start again on its
// data (a former primary would come back as a second primary): Rejoin starts m as a member of
// the cluster as it is now.
type Rejoiner interface {
	Rejoin(ctx context.Context, m *Member) error
}

// Settler is implemented by a Cluster whose leader may still change after Leader first names
// one (Sentinels that have not agreed yet, a failover under way): Settle returns once the
// cluster is back for its clients and will stay so without a further fault.
type Settler interface {
	Settle(ctx context.Context) error
}

// Prober is implemented by a Cluster that can tell whether it answers its clients at this
// moment: Probe writes through every running member and returns once each has answered, or
// with the first error. A cluster that had a leader again may still stall afterwards (a raft
// leader whose loop stops for a second), and the time it does is the store's, not its
// clients'.
type Prober interface {
	Probe(ctx context.Context) error
}

// Manual is implemented by a Cluster that never fails over by itself (PostgreSQL's streaming
// replication): ManualFailover reports true, and a Leader lost with its primary returns only
// when that member runs again or Failover promotes another.
type Manual interface {
	ManualFailover() bool
}

// Cluster is a store running as several server processes on loopback.
//
// Its methods may be called from any goroutine, but a test drives one fault at a time.
type Cluster interface {
	// Backend is the store's URL scheme: "etcd", "nats", "redis", "postgres", "zk".
	Backend() string

	// Members are the server processes, in a fixed order. For Redis these are the data
	// servers (primary and replicas); the Sentinels are part of the cluster's own machinery
	// and are not faulted.
	Members() []*Member

	// URL is the store URL a client opens to reach the cluster, naming the members by
	// addrs instead of their own client addresses when addrs is not nil (same order and
	// length as Members): a test puts a proxy in front of each member and passes the
	// proxies' addresses. Extra query parameters the tests need are in params (may be nil).
	URL(addrs []string, params map[string]string) string

	// Leader returns the member the cluster now treats as its leader (etcd's raft leader, the
	// NATS stream leader of the bucket, the Redis primary, the PostgreSQL primary, the
	// ZooKeeper ensemble's leader). It waits,
	// until ctx ends, while the cluster has none.
	Leader(ctx context.Context) (*Member, error)

	// Failover makes another member the leader or primary, as an operator or an automatic
	// failover would. With loseWrites, the old primary is stopped first and the writes it
	// acknowledged but had not replicated are lost (a promoted asynchronous replica); without
	// it, the hand-over waits for the new primary to catch up. It returns once the cluster
	// answers writes through its new leader. ErrNoFailover when the cluster cannot.
	Failover(ctx context.Context, loseWrites bool) error

	// Restart stops every member and starts them all again on their data, and returns once
	// the cluster answers again.
	Restart(ctx context.Context) error

	// Close stops every process and removes nothing (the directory is the caller's).
	Close() error
}
