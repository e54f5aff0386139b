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
// with every store backing the Registry, which must be configured: without a service named
// Registry, the Registry is a memory store of each process, every process would elect itself,
// and Start fails saying so. A Webda/MemoryStore Registry configured explicitly is allowed,
// for a single process or tests, with a warning (A4).
//
//	{"services": {
//	  "Registry": {"type": "Webda/FileStore", "path": "/var/lib/app/registry.json"},
//	  "cluster":  {"type": "Webda/StoreClusterService", "leaseDuration": 15000, "renewInterval": 5000}
//	}}
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
	// A parameter at fault is reported before the Registry: both are to be fixed in the
	// configuration, and the parameters are the service's own.
	if err := s.Validate(); err != nil {
		return err
	}
	lock, err := s.OpenLock(ctx, app)
	if err != nil {
		return err
	}
	return s.StartElection(ctx, lock, app.Logger(), s.Observer)
}

// errNoRegistry says what to configure rather than what went wrong: the fix is in the
// configuration.
var errNoRegistry = errors.New(`no Registry is configured; the default one is a memory store of each process, over which every process would elect itself: ` +
	`configure a store shared by the instances as the service "Registry" (for example "Registry": {"type": "Webda/FileStore", "path": "/var/lib/app/registry.json"}, ` +
	`or a PostgreSQL, MySQL, SQLite, Redis, etcd or NATS store), or "Registry": {"type": "Webda/MemoryStore"} for a single process`)

// OpenLock returns the Lock over the application's Registry, without starting an election.
// It refuses the memory store that stands in for a Registry that was not configured.
func (s *StoreClusterService) OpenLock(_ context.Context, app *Application) (cluster.Lock, error) {
	if app.implicitRegistry {
		return nil, errNoRegistry
	}
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
