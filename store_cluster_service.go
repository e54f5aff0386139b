package leasehold

import (
	"context"
	"errors"

	"github.com/leasehold/leasehold/cluster"
)

func init() {
	RegisterServiceType("Webda/StoreClusterService", func() Service { return &StoreClusterService{} })
}

// StoreClusterService is the service type Webda/StoreClusterService: leader election on a
// lease kept in the application's Registry, in the entry "cluster:<leaseName>" (S1). It works
// with every store backing the Registry.
//
//	{"services": {"cluster": {"type": "Webda/StoreClusterService", "leaseDuration": 15000, "renewInterval": 5000}}}
type StoreClusterService struct {
	ElectionService

	// Observer, when set before Start, receives the election's events (see cluster.Event).
	Observer func(cluster.Event) `json:"-"`
}

var (
	_ Service         = (*StoreClusterService)(nil)
	_ Stopper         = (*StoreClusterService)(nil)
	_ cluster.Cluster = (*StoreClusterService)(nil)
	_ LockOpener      = (*StoreClusterService)(nil)
)

// Init starts the election over the Registry.
func (s *StoreClusterService) Init(ctx context.Context, app *Application) error {
	lock, err := s.OpenLock(ctx, app)
	if err != nil {
		return err
	}
	return s.StartElection(ctx, lock, app.Logger(), s.Observer)
}

// OpenLock returns the Lock over the application's Registry, without starting an election.
func (s *StoreClusterService) OpenLock(_ context.Context, app *Application) (cluster.Lock, error) {
	reg := app.Registry()
	if reg == nil {
		return nil, errors.New("the application has no Registry")
	}
	return cluster.NewStoreLock(reg), nil
}

// LockOpener is implemented by cluster services that can give the Lock of their lease without
// starting an election, for tools that only read the lease (leasehold status). app must be
// started, as the Lock may use its services (the Registry).
type LockOpener interface {
	OpenLock(ctx context.Context, app *Application) (cluster.Lock, error)
}
