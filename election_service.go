package leasehold

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/leasehold/leasehold/cluster"
)

// ElectionService holds what every cluster service shares: Webda's election parameters and an
// Elector, started by the service's Init over the service's Lock. It implements
// cluster.Cluster from its creation: WhenLeader called before Init (from a service configured
// before the cluster service) is kept and attached when the election starts (A6).
// StoreClusterService and the kubernetes module's KubernetesClusterService embed it.
type ElectionService struct {
	LeaseDuration Duration `json:"leaseDuration"` // default 15000 ms
	RenewInterval Duration `json:"renewInterval"` // default 5000 ms, less than leaseDuration
	ID            string   `json:"instanceId"`    // default <HOSTNAME>-<pid>-<random>
	LeaseName     string   `json:"leaseName"`     // default "leader"
	// Advertise is the value this instance publishes while it leads, its address for
	// instance: clients read it with cluster.Leader or `leasehold leader` (V1).
	Advertise string `json:"advertise"`

	mu        sync.Mutex
	elector   *cluster.Elector
	pending   []*pendingRegistration
	observers []func(cluster.Event)
}

type pendingRegistration struct {
	fn           cluster.LeaderFunc
	deregistered func()
	remove       func() // set once attached
	removed      bool
}

var _ cluster.Cluster = (*ElectionService)(nil)

// jsonTiming names L and R as configurations write them.
var jsonTiming = cluster.TimingNames{LeaseDuration: `parameter "leaseDuration"`, RenewInterval: `parameter "renewInterval"`}

// Validate checks the parameters, naming the one at fault (E0).
func (s *ElectionService) Validate() error {
	if _, _, err := s.Timing(); err != nil {
		return err
	}
	return cluster.CheckValue(`parameter "advertise"`, s.Advertise)
}

// Timing returns L and R, the defaults applied, or an error naming the parameter at fault
// (E0): the values the election runs with.
func (s *ElectionService) Timing() (l, r time.Duration, err error) {
	return cluster.ResolveTiming(s.LeaseDuration.D(), s.RenewInterval.D(), jsonTiming)
}

// Lease returns the name of the lease, the default applied.
func (s *ElectionService) Lease() string { return cluster.ResolveLeaseName(s.LeaseName) }

// StartElection creates the Elector over lock and starts it; registrations made before are
// attached to it. ctx's values are kept; its cancellation does not stop the election (Stop
// does).
func (s *ElectionService) StartElection(ctx context.Context, lock cluster.Lock, log *slog.Logger, observer func(cluster.Event)) error {
	if err := s.Validate(); err != nil {
		return err
	}
	s.mu.Lock()
	observers := append([]func(cluster.Event){observer}, s.observers...)
	s.mu.Unlock()
	e, err := cluster.NewElector(cluster.ElectorConfig{
		Lock:          lock,
		LeaseName:     s.LeaseName,
		LeaseDuration: s.LeaseDuration.D(),
		RenewInterval: s.RenewInterval.D(),
		InstanceID:    s.InstanceID(),
		Advertise:     s.Advertise,
		Logger:        log,
		Observer:      cluster.Observers(observers...),
	})
	if err != nil {
		return err
	}
	s.mu.Lock()
	if s.elector != nil {
		s.mu.Unlock()
		return fmt.Errorf("leasehold: lease %q: election started twice", s.LeaseName)
	}
	s.elector = e
	for _, p := range s.pending {
		if !p.removed {
			p.remove = e.WhenLeader(p.fn, p.deregistered)
		}
	}
	s.pending = nil
	s.mu.Unlock()
	return e.Start(context.WithoutCancel(ctx))
}

// electionService returns s. Every cluster service type embedding ElectionService has it as
// a promoted method, which is how Application.ElectionService finds the election of any of
// them, the kubernetes module's included.
func (s *ElectionService) electionService() *ElectionService { return s }

// electionHolder is a cluster service that embeds ElectionService.
type electionHolder interface{ electionService() *ElectionService }

// ElectionService returns the election of the application's cluster service (A5): its
// parameters, observers and Elector, before Start as after. A tool that drives an
// application's election (the leasehold command) sets its parameters or adds observers here
// before Start. ok is false when the application has no cluster service, or one of a type
// that does not embed ElectionService.
func (a *Application) ElectionService() (es *ElectionService, ok bool) {
	h, ok := a.cluster.(electionHolder)
	if !ok {
		return nil, false
	}
	return h.electionService(), true
}

// AddObserver adds a receiver of the election's events (see cluster.ElectorConfig.Observer).
// Observers added after the election started get nothing.
func (s *ElectionService) AddObserver(o func(cluster.Event)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.observers = append(s.observers, o)
}

// Elector returns the running Elector, or nil before StartElection.
func (s *ElectionService) Elector() *cluster.Elector {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.elector
}

// IsLeader implements cluster.Cluster; false before the election starts.
func (s *ElectionService) IsLeader() bool {
	e := s.Elector()
	return e != nil && e.IsLeader()
}

// InstanceID implements cluster.Cluster: the instanceId parameter, or a default generated
// once.
func (s *ElectionService) InstanceID() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ID == "" {
		s.ID = cluster.DefaultInstanceID()
	}
	return s.ID
}

// WhenLeader implements cluster.Cluster (see cluster.Cluster.WhenLeader). Before the
// election starts, the registration waits for it.
func (s *ElectionService) WhenLeader(fn cluster.LeaderFunc, deregistered func()) (remove func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.elector != nil {
		return s.elector.WhenLeader(fn, deregistered)
	}
	p := &pendingRegistration{fn: fn, deregistered: deregistered}
	s.pending = append(s.pending, p)
	return func() {
		s.mu.Lock()
		p.removed = true
		remove := p.remove
		s.mu.Unlock()
		if remove != nil {
			remove()
		}
	}
}

// Stop ends the election (E7): leadership ends, deregistered callbacks run, the lease is
// released; see cluster.Elector.Stop. It implements Stopper.
func (s *ElectionService) Stop(ctx context.Context) error {
	if e := s.Elector(); e != nil {
		return e.Stop(ctx)
	}
	return nil
}
