package leasehold

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/leasehold/leasehold/cluster"
	"github.com/leasehold/leasehold/store"
)

// RegistryName is the name of the service holding the application's Registry store.
const RegistryName = "Registry"

// Application is a configured set of services, started and stopped together, with one
// cluster: the first configured service implementing cluster.Cluster, or a local cluster that
// always leads.
type Application struct {
	entries []*entry // Registry first, then the configuration's order
	cluster cluster.Cluster
	local   *cluster.Local // the cluster when none is configured
	log     atomic.Pointer[slog.Logger]
	// implicitRegistry: no service is named Registry, so it is a memory store of this process
	// that no StoreClusterService may elect on (A4).
	implicitRegistry bool

	mu       sync.Mutex
	state    appState
	services map[string]Service // initialized services
	registry store.Store

	// Stop does its work once; every call returns that work's result (A3).
	stopping bool          // Stop was called
	stopDone chan struct{} // closed once the first Stop's work is over
	stopErr  error         // its result, set before stopDone is closed
	// A Stop during Start cancels the context of the Init under way with cancelInit and
	// leaves stopCtx, its own context, for Start to stop the services it started with.
	cancelInit context.CancelCauseFunc
	stopCtx    context.Context
}

// ErrStopped is wrapped by the error of a Start that Stop interrupted, or that came after
// Stop.
var ErrStopped = errors.New("leasehold: stopped")

type entry struct {
	name, typ string
	svc       Service
	started   bool
}

type appState int

const (
	created appState = iota
	starting
	running
	stopped
)

// New creates the configuration's services and decodes their parameters, without starting
// anything. An unknown type is an error listing the known ones; an unknown parameter, or one
// of the wrong type, is an error naming the service and the parameter (A2). When no service is
// named Registry, the Registry is a memory store (A4), which a StoreClusterService refuses at
// Start.
func New(cfg *Config) (*Application, error) {
	if cfg == nil {
		return nil, errors.New("leasehold: New with a nil *Config")
	}
	a := &Application{services: map[string]Service{}, stopDone: make(chan struct{})}
	var registry *entry
	var rest []*entry
	for _, sc := range cfg.Services {
		svc, err := newService(sc)
		if err != nil {
			return nil, err
		}
		e := &entry{name: sc.Name, typ: namespace + typeKey(sc.Type), svc: svc}
		if sc.made != nil {
			e.typ = sc.Type // the program's own name for it, in no namespace
		}
		if sc.Name == RegistryName {
			if _, ok := svc.(store.Store); !ok {
				return nil, fmt.Errorf("leasehold: service %q (%s) is not a store: the Registry must be one", sc.Name, e.typ)
			}
			registry = e
			continue
		}
		rest = append(rest, e)
	}
	if registry == nil {
		registry = &entry{name: RegistryName, typ: namespace + "MemoryStore", svc: &MemoryStore{}}
		a.implicitRegistry = true
	}
	// The Registry starts first, whatever its place: every other service may use it.
	a.entries = append([]*entry{registry}, rest...)
	for _, e := range a.entries {
		if c, ok := e.svc.(cluster.Cluster); ok {
			a.cluster = c // A5: the first configured cluster service
			break
		}
	}
	if a.cluster == nil {
		a.local = cluster.NewLocal("")
		a.cluster = a.local
	}
	return a, nil
}

// newService returns the service of sc: the one the program made (Made), or a new one of its
// type with its parameters decoded.
func newService(sc ServiceConfig) (Service, error) {
	if sc.made != nil {
		return sc.made, nil
	}
	factory, ok := lookupType(sc.Type)
	if !ok {
		return nil, fmt.Errorf("leasehold: service %q: unknown type %q (known types: %v)", sc.Name, sc.Type, ServiceTypes())
	}
	svc := factory()
	if svc == nil {
		return nil, fmt.Errorf("leasehold: service %q: the factory of type %q returned nil", sc.Name, sc.Type)
	}
	if err := decodeParams(svc, sc.Params); err != nil {
		return nil, fmt.Errorf("leasehold: service %q (%s): %w", sc.Name, namespace+typeKey(sc.Type), err)
	}
	return svc, nil
}

// Logger returns the application's logger: slog.Default() unless SetLogger was called.
func (a *Application) Logger() *slog.Logger {
	if l := a.log.Load(); l != nil {
		return l
	}
	return slog.Default()
}

// SetLogger sets the logger services get from Logger. Call it before Start.
func (a *Application) SetLogger(l *slog.Logger) { a.log.Store(l) }

// Start initializes the services: the Registry first, then the others in configuration order
// (A1, A4). Each service's Init may look up the services before it with Service. If one
// fails, the services already started are stopped in reverse order and the error names the
// failing service (A3). The application becomes the default one of the package-level
// UseCluster and WhenLeader as Start begins (A7), so services may call them from Init.
//
// A Stop during Start makes Start fail with an error wrapping ErrStopped: the context of the
// Init under way is cancelled, no other service is initialized, and the services already
// started are stopped, in reverse order, with Stop's context; Stop returns once they are.
// Start's context is not cancelled when Start returns: a service may keep it for its
// lifetime.
func (a *Application) Start(ctx context.Context) error {
	a.mu.Lock()
	switch {
	case a.stopping:
		a.mu.Unlock()
		return fmt.Errorf("%w: Start called after Stop", ErrStopped)
	case a.state != created:
		a.mu.Unlock()
		return errors.New("leasehold: Start called twice")
	}
	a.state = starting
	initCtx, cancel := context.WithCancelCause(ctx)
	a.cancelInit = cancel
	a.mu.Unlock()
	startedApps.push(a)

	for _, e := range a.entries {
		err := e.svc.Init(initCtx, a)
		a.mu.Lock()
		if err == nil {
			e.started = true
			a.services[e.name] = e.svc
			if e.name == RegistryName {
				a.registry = e.svc.(store.Store)
				if pl, ok := e.svc.(interface{ ProcessLocal() bool }); ok && pl.ProcessLocal() {
					if _, isStoreCluster := a.cluster.(*StoreClusterService); isStoreCluster {
						a.Logger().Warn("leasehold: the Registry is a process-local store: every process will elect itself; configure a shared store as the Registry",
							"registry", e.typ)
					}
				}
			}
		}
		stopping := a.stopping
		a.mu.Unlock()
		if stopping || err != nil {
			return a.abortStart(ctx, e, err)
		}
	}
	a.mu.Lock()
	if a.stopping {
		a.mu.Unlock()
		return a.abortStart(ctx, nil, nil)
	}
	a.state = running
	a.mu.Unlock()
	return nil
}

// abortStart stops the services Start has started, once the Init of e has failed with initErr
// or a Stop has come (e is nil when it came after the last Init).
func (a *Application) abortStart(ctx context.Context, e *entry, initErr error) error {
	a.mu.Lock()
	byStop := a.stopping
	if byStop {
		ctx = a.stopCtx
	}
	a.mu.Unlock()
	var err error
	switch {
	case byStop && e == nil:
		err = fmt.Errorf("%w during Start, once every service had started; they are stopped", ErrStopped)
	case byStop:
		err = fmt.Errorf("%w during Start, while service %q (%s) was starting; the services already started are stopped", ErrStopped, e.name, e.typ)
		if initErr != nil && !errors.Is(initErr, context.Canceled) && !errors.Is(initErr, ErrStopped) {
			err = errors.Join(err, fmt.Errorf("leasehold: start service %q (%s): %w", e.name, e.typ, initErr))
		}
	default:
		err = fmt.Errorf("leasehold: start service %q (%s): %w", e.name, e.typ, initErr)
	}
	serr := a.stopServices(ctx)
	a.mu.Lock()
	a.state = stopped
	cancel := a.cancelInit
	a.cancelInit = nil
	// A Stop that came while the services were stopping waits for this result too.
	byStop = a.stopping
	a.mu.Unlock()
	cancel(ErrStopped)
	startedApps.remove(a)
	if byStop {
		a.endStop(serr)
	}
	return errors.Join(err, serr)
}

// Stop first ends leadership: the cluster stops, every deregistered callback has run and the
// lease is released, while all other services still run. Then it stops the services in
// reverse order, best effort, and returns their errors joined (A3). Before Start, it ends the
// leadership of the local cluster, which leads from New.
//
// Stop does its work once: a second call, concurrent (a signal handler and a deferred Stop)
// or later, waits for the first and returns its result, or an error if its own ctx ends
// first. Stop must not be called from a WhenLeader callback, nor from a service's Init, which
// it would wait for (see cluster.Cluster.WhenLeader): call it on a new goroutine.
func (a *Application) Stop(ctx context.Context) error {
	a.mu.Lock()
	if a.stopping {
		a.mu.Unlock()
		return a.waitStop(ctx)
	}
	a.stopping = true
	switch a.state {
	case starting:
		// Start stops what it has started, with ctx, once the Init under way returns.
		a.stopCtx = ctx
		cancel := a.cancelInit
		a.mu.Unlock()
		cancel(ErrStopped)
		return a.waitStop(ctx)
	case stopped:
		// A failed Start has stopped what it started.
		a.mu.Unlock()
		a.endStop(nil)
		return nil
	}
	// Before Start nothing is started but the local cluster, which leads from New: fn may
	// have run, and its deregistered is owed.
	a.state = stopped
	cancel := a.cancelInit
	a.mu.Unlock()
	err := a.stopServices(ctx)
	if cancel != nil {
		cancel(ErrStopped) // the services it was given to have stopped
	}
	startedApps.remove(a)
	a.endStop(err)
	return err
}

// endStop records the result of the first Stop's work, for every Stop to return.
func (a *Application) endStop(err error) {
	a.stopErr = err
	close(a.stopDone)
}

// waitStop waits for the first Stop's work and returns its result.
func (a *Application) waitStop(ctx context.Context) error {
	select {
	case <-a.stopDone:
		return a.stopErr
	case <-ctx.Done():
		return fmt.Errorf("leasehold: Stop: the Stop under way has not finished: %w", ctx.Err())
	}
}

func (a *Application) stopServices(ctx context.Context) error {
	var errs []error
	// A3: leadership ends before any other service stops.
	cl := -1
	if a.local != nil {
		if err := a.local.Stop(ctx); err != nil {
			errs = append(errs, fmt.Errorf("leasehold: stop local cluster: %w", err))
		}
	} else {
		cl = slices.IndexFunc(a.entries, func(e *entry) bool { return any(e.svc) == any(a.cluster) })
		if cl >= 0 {
			errs = a.stopEntry(ctx, a.entries[cl], errs)
		}
	}
	for i := len(a.entries) - 1; i >= 0; i-- {
		if i != cl {
			errs = a.stopEntry(ctx, a.entries[i], errs)
		}
	}
	return errors.Join(errs...)
}

// stopEntry stops one service if it was started, and forgets it, adding its error to errs.
func (a *Application) stopEntry(ctx context.Context, e *entry, errs []error) []error {
	a.mu.Lock()
	started := e.started
	e.started = false
	delete(a.services, e.name)
	a.mu.Unlock()
	if !started {
		return errs
	}
	if s, ok := e.svc.(Stopper); ok {
		if err := s.Stop(ctx); err != nil {
			errs = append(errs, fmt.Errorf("leasehold: stop service %q (%s): %w", e.name, e.typ, err))
		}
	}
	return errs
}

// Service returns the service of that name once it has been initialized.
func (a *Application) Service(name string) (Service, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	s, ok := a.services[name]
	return s, ok
}

// Registry returns the application's Registry store: the service named Registry, or a memory
// store when none is configured. It is nil until the Registry has been initialized.
func (a *Application) Registry() store.Store {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.registry
}

// Cluster returns the application's cluster (A5): the first configured service implementing
// cluster.Cluster, even before it has started (it then reports no leadership, and queues
// WhenLeader registrations until it starts, A6), or a local cluster that always leads.
func (a *Application) Cluster() cluster.Cluster { return a.cluster }

// WhenLeader registers fn and deregistered on the application's cluster (A6, A7): see
// cluster.Cluster.WhenLeader for the guarantees and for what a callback may call. Without a
// cluster service, fn runs at once.
func (a *Application) WhenLeader(fn cluster.LeaderFunc, deregistered func()) (remove func()) {
	return a.cluster.WhenLeader(fn, deregistered)
}

var (
	startedApps  appStack
	packageLocal = sync.OnceValue(func() *cluster.Local { return cluster.NewLocal("") })
)

// appStack holds the applications started and not yet stopped, in order of Start: the last
// is the default one; when it stops, the one started before it is the default again.
type appStack struct {
	mu   sync.Mutex
	apps []*Application
}

func (s *appStack) push(a *Application) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.apps = append(s.apps, a)
}

func (s *appStack) remove(a *Application) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if i := slices.Index(s.apps, a); i >= 0 {
		s.apps = slices.Delete(s.apps, i, i+1)
	}
}

func (s *appStack) top() *Application {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.apps) == 0 {
		return nil
	}
	return s.apps[len(s.apps)-1]
}

// UseCluster returns the cluster of the default application (the one started last and not
// stopped yet, A7), or, with no application, a local cluster that always leads.
func UseCluster() cluster.Cluster {
	if a := startedApps.top(); a != nil {
		return a.Cluster()
	}
	return packageLocal()
}

// WhenLeader registers fn and deregistered on UseCluster()'s cluster (A7). Without an
// application, or without a cluster service, fn runs at once.
func WhenLeader(fn cluster.LeaderFunc, deregistered func()) (remove func()) {
	return UseCluster().WhenLeader(fn, deregistered)
}
