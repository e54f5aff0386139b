package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"syscall"
	"time"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/cluster"
	"github.com/leasehold/leasehold/store"
)

// election is the election a command joins: an Elector over the store of --store, or the
// cluster service of a --config file. WhenLeader may be called before start.
type election struct {
	lease string
	id    string
	l, r  time.Duration
	where string // the store (redacted) or the configuration, for messages

	cluster.Cluster                             // for WhenLeader before start
	start           func(context.Context) error // starts the election
	elector         func() *cluster.Elector     // the running Elector, after start
	stop            func(context.Context) error // ends the election (E7) and closes what it opened
}

// newElection prepares the election of the flags, not yet started; observer receives its
// events. An error about the flags or the configuration is a usage error.
func newElection(ctx context.Context, f *commonFlags, log *slog.Logger, observer func(cluster.Event), usage string) (*election, error) {
	if f.config != "" {
		return newConfigElection(f, log, observer, usage)
	}
	st, err := openStore(ctx, f.store, usage)
	if err != nil {
		return nil, err
	}
	id := f.instanceID
	if id == "" {
		id = cluster.DefaultInstanceID()
	}
	e, err := cluster.NewElector(cluster.ElectorConfig{
		Lock: cluster.NewStoreLock(st), LeaseName: f.lease, LeaseDuration: f.leaseDuration,
		RenewInterval: f.renewInterval, InstanceID: id, Logger: log, Observer: observer,
	})
	if err != nil {
		store.Close(st)
		return nil, badInput(usage, "%v", err)
	}
	return &election{
		lease: f.lease, id: id, l: f.leaseDuration, r: f.renewInterval, where: store.RedactString(f.store),
		Cluster: e,
		start:   e.Start,
		elector: func() *cluster.Elector { return e },
		stop: func(ctx context.Context) error {
			err := e.Stop(ctx)
			return errors.Join(err, store.Close(st))
		},
	}, nil
}

// newConfigElection prepares the application of --config. Its cluster service may be of any
// registered type embedding leasehold.ElectionService (StoreClusterService, the kubernetes
// module's KubernetesClusterService, ...): the flags given on the command line override its
// parameters, and its Observer field, if it has one, receives the events.
func newConfigElection(f *commonFlags, log *slog.Logger, observer func(cluster.Event), usage string) (*election, error) {
	cfg, err := leasehold.LoadConfig(f.config)
	if err != nil {
		return nil, badInput(usage, "--config: %v", err)
	}
	app, err := leasehold.New(cfg)
	if err != nil {
		return nil, badInput(usage, "--config %s: %v", f.config, err)
	}
	app.SetLogger(log)
	svc := app.Cluster()
	if _, local := svc.(*cluster.Local); local {
		return nil, badInput(usage, "--config %s has no cluster service (such as Webda/StoreClusterService): nothing to elect with", f.config)
	}
	es := electionServiceOf(svc)
	if es == nil {
		return nil, badInput(usage, "--config %s: cluster service %T does not embed leasehold.ElectionService; leasehold cannot drive it", f.config, svc)
	}
	applyFlags(es, f)
	if err := es.Validate(); err != nil {
		return nil, badInput(usage, "--config %s: cluster service: %v", f.config, err)
	}
	if observer != nil && !setObserver(svc, observer) {
		log.Warn("leasehold: the cluster service has no Observer field: metrics and health will not see its events",
			"type", fmt.Sprintf("%T", svc))
	}
	l, r := durations(es)
	lease := es.LeaseName
	if lease == "" {
		lease = cluster.DefaultLeaseName
	}
	return &election{
		lease: lease, id: es.InstanceID(), l: l, r: r, where: f.config,
		Cluster: svc,
		start:   app.Start,
		elector: es.Elector,
		stop:    app.Stop,
	}, nil
}

// applyFlags lets the election flags given on the command line override the configuration.
func applyFlags(es *leasehold.ElectionService, f *commonFlags) {
	if f.set["lease"] {
		es.LeaseName = f.lease
	}
	if f.set["lease-duration"] {
		es.LeaseDuration = leasehold.Duration(f.leaseDuration)
	}
	if f.set["renew-interval"] {
		es.RenewInterval = leasehold.Duration(f.renewInterval)
	}
	if f.set["instance-id"] {
		es.ID = f.instanceID
	}
}

// durations returns L and R of a cluster service, defaults applied as the Elector does.
func durations(es *leasehold.ElectionService) (l, r time.Duration) {
	l, r = es.LeaseDuration.D(), es.RenewInterval.D()
	if l == 0 {
		l = cluster.DefaultLeaseDuration
	}
	if r == 0 {
		r = cluster.DefaultRenewInterval
	}
	return l, r
}

// electionServiceOf returns the leasehold.ElectionService of a cluster service, or nil: every
// cluster service of the project embeds one and so has its Election method.
func electionServiceOf(svc any) *leasehold.ElectionService {
	if es, ok := svc.(interface {
		Election() *leasehold.ElectionService
	}); ok {
		return es.Election()
	}
	return nil
}

// setObserver adds observer to the events of a cluster service's election.
func setObserver(svc any, observer func(cluster.Event)) bool {
	es := electionServiceOf(svc)
	if es == nil {
		return false
	}
	es.AddObserver(observer)
	return true
}

// openStore opens --store. An error from the network, the file system or a timeout is a
// failure (exit 1); any other error is the opener rejecting the URL or its credentials: bad
// input (exit 2). store.Open's errors never show a password.
func openStore(ctx context.Context, rawURL, usage string) (store.Store, error) {
	st, err := store.Open(ctx, rawURL)
	if err == nil {
		return st, nil
	}
	var (
		netErr  net.Error
		pathErr *fs.PathError
		errno   syscall.Errno
	)
	if errors.As(err, &netErr) || errors.As(err, &pathErr) || errors.As(err, &errno) ||
		errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) || errors.Is(err, io.EOF) {
		return nil, err
	}
	return nil, badInput(usage, "--store: %v", err)
}

// leaseReader reads a lease's record without joining its election, for status.
type leaseReader struct {
	lease string
	where string
	lock  cluster.Lock
	close func(context.Context) error
}

// newLeaseReader opens what holds the lease of the flags. With --config, the lease is read from
// the configuration's Registry, which needs a cluster service that keeps it there
// (Webda/StoreClusterService); the Registry is started, the cluster service is not.
func newLeaseReader(ctx context.Context, f *commonFlags, usage string) (*leaseReader, error) {
	if f.config == "" {
		st, err := openStore(ctx, f.store, usage)
		if err != nil {
			return nil, err
		}
		return &leaseReader{
			lease: f.lease, where: store.RedactString(f.store), lock: cluster.NewStoreLock(st),
			close: func(context.Context) error { return store.Close(st) },
		}, nil
	}
	cfg, err := leasehold.LoadConfig(f.config)
	if err != nil {
		return nil, badInput(usage, "--config: %v", err)
	}
	// Find the cluster service, and keep every other service: starting them does not join an
	// election. The cluster service only opens its Lock (leasehold.LockOpener).
	var rest leasehold.Config
	var svc cluster.Cluster
	for _, sc := range cfg.Services {
		one, err := leasehold.New(&leasehold.Config{Services: []leasehold.ServiceConfig{sc}})
		if err != nil {
			return nil, badInput(usage, "--config %s: %v", f.config, err)
		}
		c := one.Cluster()
		if _, local := c.(*cluster.Local); local {
			rest.Services = append(rest.Services, sc)
			continue
		}
		if svc != nil {
			continue // A5: the first cluster service is the application's
		}
		if _, ok := c.(leasehold.LockOpener); !ok || electionServiceOf(c) == nil {
			return nil, badInput(usage, "--config %s: service %q (%s) cannot open its lease without joining the election",
				f.config, sc.Name, sc.Type)
		}
		svc = c
	}
	if svc == nil {
		return nil, badInput(usage, "--config %s has no cluster service (such as Webda/StoreClusterService)", f.config)
	}
	es := electionServiceOf(svc)
	applyFlags(es, f)
	app, err := leasehold.New(&rest)
	if err != nil {
		return nil, badInput(usage, "--config %s: %v", f.config, err)
	}
	app.SetLogger(slog.New(slog.DiscardHandler))
	if err := app.Start(ctx); err != nil {
		return nil, err
	}
	lock, err := svc.(leasehold.LockOpener).OpenLock(ctx, app)
	if err != nil {
		_ = app.Stop(context.WithoutCancel(ctx))
		return nil, fmt.Errorf("--config %s: %w", f.config, err)
	}
	lease := es.LeaseName
	if lease == "" {
		lease = cluster.DefaultLeaseName
	}
	closeAll := func(ctx context.Context) error {
		var errs []error
		if s, ok := svc.(leasehold.Stopper); ok {
			errs = append(errs, s.Stop(ctx)) // no election to end: it releases the client only
		}
		return errors.Join(append(errs, app.Stop(ctx))...)
	}
	return &leaseReader{lease: lease, where: f.config, lock: lock, close: closeAll}, nil
}
