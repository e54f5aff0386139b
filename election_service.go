package leasehold

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"strings"
	"sync"
	"time"

	"github.com/leasehold/leasehold/cluster"
	"github.com/leasehold/leasehold/health"
	"github.com/leasehold/leasehold/internal/leaseconf"
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

	// Priority ranks this instance among the candidates, 0 by default, a 32-bit integer: a
	// candidate of a higher priority than the holder asks it to hand over once it has been a
	// candidate for StabilityWindow (default 3 × leaseDuration). See cluster.ElectorConfig.
	Priority        int      `json:"priority"`
	StabilityWindow Duration `json:"stabilityWindow"`
	// HealthCommand (a shell command, run with /bin/sh -c) or HealthURL (an http or https URL,
	// healthy on a 2xx status) is this instance's health check, run at start and then every
	// renewInterval, each run within HealthTimeout (default and at most renewInterval). A
	// leader whose last HealthFailures checks (default 3) failed hands over to a healthy
	// candidate; a failing candidate takes a free lease only as a last resort.
	HealthCommand  string   `json:"healthCommand"`
	HealthURL      string   `json:"healthUrl"`
	HealthTimeout  Duration `json:"healthTimeout"`
	HealthFailures int      `json:"healthFailures"`

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
var jsonTiming = leaseconf.Names{LeaseDuration: `parameter "leaseDuration"`, RenewInterval: `parameter "renewInterval"`}

// Validate checks the parameters, naming the one at fault (E0). A cluster service that embeds
// ElectionService calls it first thing in Init and OpenLock, so that a bad configuration fails
// before anything is opened; a tool that reads a configuration (leasehold) calls it to refuse
// one the service would refuse.
func (s *ElectionService) Validate() error {
	_, r, err := s.Timing()
	if err != nil {
		return err
	}
	if err := leaseconf.CheckValue(`parameter "advertise"`, s.Advertise); err != nil {
		return err
	}
	return s.validateRank(r)
}

// validateRank checks the priority and health parameters against R, naming the one at fault.
func (s *ElectionService) validateRank(r time.Duration) error {
	switch {
	case s.Priority < math.MinInt32 || s.Priority > math.MaxInt32:
		return fmt.Errorf(`parameter "priority" is %d, want a 32-bit integer (%d to %d)`, s.Priority, math.MinInt32, math.MaxInt32)
	case s.StabilityWindow < 0:
		return fmt.Errorf(`parameter "stabilityWindow" %v must not be negative`, s.StabilityWindow.D())
	case s.HealthFailures < 0:
		return fmt.Errorf(`parameter "healthFailures" is %d, want 1 or more (0 or none: the default, %d)`, s.HealthFailures, cluster.DefaultHealthFailures)
	case s.HealthTimeout < 0 || s.HealthTimeout.D() > r:
		return fmt.Errorf(`parameter "healthTimeout" %v exceeds the renew interval %v: a check must end before the next one starts`, s.HealthTimeout.D(), r)
	case s.HealthCommand != "" && s.HealthURL != "":
		return errors.New(`parameters "healthCommand" and "healthUrl" cannot be used together: give one health check`)
	}
	if s.HealthCommand != "" && strings.TrimSpace(s.HealthCommand) == "" {
		return errors.New(`parameter "healthCommand" is blank: want a shell command`)
	}
	if s.HealthURL != "" {
		if err := health.CheckURL(`parameter "healthUrl"`, s.HealthURL); err != nil {
			return err
		}
	}
	if s.HealthCommand == "" && s.HealthURL == "" {
		if s.HealthTimeout != 0 {
			return errors.New(`parameter "healthTimeout" is set without a health check: give "healthCommand" or "healthUrl"`)
		}
		if s.HealthFailures != 0 {
			return errors.New(`parameter "healthFailures" is set without a health check: give "healthCommand" or "healthUrl"`)
		}
	}
	return nil
}

// HealthCheck returns the health check of the parameters healthCommand or healthUrl, nil for
// none: the check RankConfig gives an election, for a program that runs it itself (to report
// it, or to check it once before it starts).
func (s *ElectionService) HealthCheck() health.Check {
	switch {
	case s.HealthCommand != "":
		return health.Shell(s.HealthCommand)
	case s.HealthURL != "":
		return health.URL(s.HealthURL)
	}
	return nil
}

// RankConfig sets the priority and health fields of cfg from the parameters, for a program that
// builds an election of its own from a configured cluster service (the leasehold command's
// run --holders builds a holders.Holders with it), so that it ranks the candidates as the
// service's own election would.
func (s *ElectionService) RankConfig(cfg *cluster.ElectorConfig) {
	cfg.Priority, cfg.StabilityWindow = s.Priority, s.StabilityWindow.D()
	cfg.HealthFailures, cfg.HealthTimeout = s.HealthFailures, s.HealthTimeout.D()
	cfg.Health = s.HealthCheck() // nil without a check
}

// Timing returns L and R, the defaults applied, or an error naming the parameter at fault
// (E0): the values the election runs with, for a cluster service that opens its Lock with them
// or a tool that reads the lease of a configuration and must judge its record by them.
func (s *ElectionService) Timing() (l, r time.Duration, err error) {
	return leaseconf.Timing(s.LeaseDuration.D(), s.RenewInterval.D(), jsonTiming)
}

// Lease returns the name of the lease, the default applied: the name a cluster service opens
// its record under, and a tool that reads the configured lease looks for.
func (s *ElectionService) Lease() string { return leaseconf.LeaseName(s.LeaseName) }

// StartElection creates the Elector over lock and starts it; registrations made before are
// attached to it. ctx's values are kept; its cancellation does not stop the election (Stop
// does). A cluster service that embeds ElectionService calls it from its Init with the Lock of
// its backend (StoreClusterService with the Registry's, the kubernetes module's with a
// Lease's): a new kind of cluster service needs no election code of its own.
func (s *ElectionService) StartElection(ctx context.Context, lock cluster.Lock, log *slog.Logger, observer func(cluster.Event)) error {
	if err := s.Validate(); err != nil {
		return err
	}
	s.mu.Lock()
	observers := append([]func(cluster.Event){observer}, s.observers...)
	s.mu.Unlock()
	cfg := cluster.ElectorConfig{
		Lock:          lock,
		LeaseName:     s.LeaseName,
		LeaseDuration: s.LeaseDuration.D(),
		RenewInterval: s.RenewInterval.D(),
		InstanceID:    s.InstanceID(),
		Advertise:     s.Advertise,
		Logger:        log,
		Observer:      cluster.Observers(observers...),
	}
	s.RankConfig(&cfg)
	e, err := cluster.NewElector(cfg)
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

// Elector returns the running Elector, or nil before StartElection: for a program that needs
// what the Elector tells beyond cluster.Cluster, such as its term (Term) or its Done channel.
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
