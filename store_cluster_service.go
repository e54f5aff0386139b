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
)

// Init starts the election over the Registry.
func (s *StoreClusterService) Init(ctx context.Context, app *Application) error {
	reg := app.Registry()
	if reg == nil {
		return errors.New("the application has no Registry")
	}
	return s.StartElection(ctx, cluster.NewStoreLock(reg), app.Logger(), s.Observer)
}
