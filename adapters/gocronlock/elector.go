package gocronlock

import (
	"context"
	"errors"
	"fmt"

	"github.com/go-co-op/gocron/v2"
	"github.com/leasehold/leasehold/cluster"
)

// ErrNotLeader is returned, wrapped, by Elector.IsLeader when this instance does not lead.
var ErrNotLeader = errors.New("gocronlock: this instance does not lead")

// Elector is a gocron.Elector over a leasehold election: a job runs only on the replica that
// leads (see the package documentation for the guarantees).
type Elector struct {
	c cluster.Cluster
}

var _ gocron.Elector = (*Elector)(nil)

// NewElector returns a gocron.Elector that answers from c: a *cluster.Elector (started and
// stopped by its owner), or an application's cluster (leasehold.UseCluster()). It neither
// starts nor stops the election.
func NewElector(c cluster.Cluster) (*Elector, error) {
	if c == nil {
		return nil, errors.New("gocronlock: NewElector: the cluster is nil")
	}
	return &Elector{c: c}, nil
}

// IsLeader returns nil while this instance leads and its lease cannot have expired for the
// others (cluster.Cluster.IsLeader, checked against the leadership's deadline at the time of
// the call); otherwise an error wrapping ErrNotLeader, and gocron skips the run. When ctx
// has ended (the job was removed, the scheduler is shutting down), it returns ctx's error.
func (e *Elector) IsLeader(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("gocronlock: instance %q: %w", e.c.InstanceID(), err)
	}
	if e.c.IsLeader() {
		return nil
	}
	return fmt.Errorf("gocronlock: instance %q: %w", e.c.InstanceID(), ErrNotLeader)
}
