package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/cluster"
	"github.com/leasehold/leasehold/internal/leaseconf"
	"github.com/leasehold/leasehold/store"
)

// election is the election a command joins: an Elector over the store of --store, or the
// cluster service of a --config file. WhenLeader may be called before start.
type election struct {
	lease string
	id    string
	l, r  time.Duration
	where string // the store (redacted) or the configuration, for messages
	// urlEnv names the environment variable the configuration's Registry reads its URL from
	// (urlEnv), if any: CMD's environment goes without it, as without LEASEHOLD_STORE.
	urlEnv string

	cluster.Cluster                             // for WhenLeader before start
	start           func(context.Context) error // starts the election
	elector         func() *cluster.Elector     // the running Elector, after start
	stop            func(context.Context) error // ends the election (E7) and closes what it opened
}

// newElection prepares the election of the flags, not yet started; observer receives its
// events. An error about the flags or the configuration is a usage error. --store and
// --config both elect through an Application (loadRankedConfig): its Registry and its cluster
// service, whose parameters the flags given on the command line override.
func newElection(ctx context.Context, f *commonFlags, log *slog.Logger, observer func(cluster.Event), usage string) (*election, error) {
	ac, l, r, err := loadRankedConfig(ctx, f, log, usage)
	if err != nil {
		return nil, err
	}
	if err := ac.checkSlotName(usage); err != nil {
		_ = ac.release(context.WithoutCancel(ctx))
		return nil, err
	}
	ac.app.SetLogger(log)
	elog := &electionLog{log: log, id: ac.es.InstanceID()}
	ac.es.AddObserver(cluster.Observers(observer, elog.observe))
	return &election{
		lease: ac.lease(), id: ac.es.InstanceID(), l: l, r: r, where: ac.where, urlEnv: ac.urlEnv(),
		Cluster: ac.svc,
		start:   ac.app.Start,
		elector: ac.es.Elector,
		stop: elog.logStop(func(ctx context.Context) error {
			err := ac.app.Stop(ctx)
			return errors.Join(err, ac.release(ctx))
		}),
	}, nil
}

// electionLog logs what the Elector's own lines leave out and an operator wants to read: that
// attempts succeed again after failing, once, with how many failed and for how long (the
// Elector warns about each failure, never about the end of them), and, when a follower stops,
// that it did and whom it followed (the Elector logs a stop only for a leader).
type electionLog struct {
	log *slog.Logger
	id  string

	mu       sync.Mutex
	attempts bool      // an attempt has ended: the election ran
	failures int       // attempts failed since the last success
	since    time.Time // the first of them
	leading  bool
	holder   string // the last holder seen
	term     uint64
}

func (l *electionLog) observe(ev cluster.Event) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.attempts = l.attempts || ev.Kind == cluster.AttemptSucceeded || ev.Kind == cluster.AttemptFailed
	switch ev.Kind {
	case cluster.AttemptFailed:
		if ev.Reason == cluster.ReasonConflict || ev.Reason == cluster.ReasonResign {
			return // a race lost to another instance, or a step-down asked for: the store works
		}
		if l.failures == 0 {
			l.since = ev.Time
		}
		l.failures++
	case cluster.AttemptSucceeded:
		if l.failures > 0 {
			l.log.Info("leasehold: attempts succeed again", "failures", l.failures,
				"after", ev.Time.Sub(l.since).Round(time.Millisecond))
			l.failures = 0
		}
	case cluster.ObservedLeader:
		l.holder, l.term = ev.Holder, ev.Term
	case cluster.BecameLeader:
		l.leading = true
	case cluster.StoppedLeading:
		l.leading = false
	}
}

// logStop wraps the stop of an election: a follower says it stopped, and whom it followed.
func (l *electionLog) logStop(stop func(context.Context) error) func(context.Context) error {
	return func(ctx context.Context) error {
		l.mu.Lock()
		ran, leading, holder, term := l.attempts, l.leading, l.holder, l.term
		l.mu.Unlock()
		err := stop(ctx)
		switch {
		case !ran: // the election did not start (the start failed, and says so)
		case leading: // the Elector logged the end of the leadership and the release
		case holder != "" && holder != l.id:
			l.log.Info("leasehold: stopped following the leader", "holder", holder, "term", term)
		default:
			l.log.Info("leasehold: stopped, not leading and no other leader seen")
		}
		return err
	}
}

// configTiming names L and R as a configuration writes them.
var configTiming = leaseconf.Names{LeaseDuration: `parameter "leaseDuration"`, RenewInterval: `parameter "renewInterval"`}

// clusterTypes are the cluster services the command drives: the first service of one of these
// types is the configuration's cluster service. A cluster type of the application's own is
// not linked in the command, so it cannot be driven. backend_kubernetes.go adds
// Webda/KubernetesClusterService when the build has it.
var clusterTypes = []string{"Webda/StoreClusterService"}

// appConfig is what the command uses of an application's configuration: the Registry and the
// cluster service, nothing else.
type appConfig struct {
	from     string                     // "--config PATH" or "--store URL", for messages
	where    string                     // the configuration's path or the store (redacted)
	name     string                     // the cluster service's name in the configuration
	typ      string                     // and its type, as configured
	app      *leasehold.Application     // the Registry and the cluster service, not started
	svc      cluster.Cluster            // app's cluster service
	es       *leasehold.ElectionService // svc's election, the command line's flags applied
	registry *leasehold.Config          // the Registry alone, to reach the lease without electing
	// opened is the store of --store, opened before the application: closed by release
	// whether or not the application started. nil with --config.
	opened *storeService
}

// loadElection returns the application the election of the flags runs in: the one of
// --config (loadAppConfig), or the one composed for --store (storeAppConfig).
func loadElection(ctx context.Context, f *commonFlags, log *slog.Logger, usage string) (*appConfig, error) {
	if f.config != "" {
		return loadAppConfig(f, usage)
	}
	return storeAppConfig(ctx, f, log)
}

// storeAppConfig makes the state directory and opens the store of --store, and composes the
// application a configuration would describe for it: that store as the Registry and a
// Webda/StoreClusterService, which the flags set as they override a configuration's
// parameters (their defaults are the service's). The store is opened here, as every command
// opens one (a store not ready yet is waited for, C7), so that its errors are said as before
// the election is built, and name the store as the flags gave it.
func storeAppConfig(ctx context.Context, f *commonFlags, log *slog.Logger) (*appConfig, error) {
	if err := f.makeStateDir(); err != nil {
		return nil, err
	}
	// The first attempt has the bound of an attempt.
	st, err := openStoreWaiting(ctx, f.store, f.leaseDuration-f.renewInterval, f.renewInterval, log)
	if err != nil {
		return nil, err
	}
	opened := &storeService{Store: st}
	where := store.RedactString(f.store)
	registry := &leasehold.Config{Services: []leasehold.ServiceConfig{leasehold.Made(leasehold.RegistryName, f.storeFrom, opened)}}
	const name, typ = "cluster", "Webda/StoreClusterService"
	app, err := leasehold.New(&leasehold.Config{Services: append(slices.Clone(registry.Services),
		leasehold.ServiceConfig{Name: name, Type: typ, Params: json.RawMessage(`{"type": "` + typ + `"}`)})})
	if err != nil {
		_ = opened.Stop(ctx)
		return nil, err // the command's own composition: no input of the user's is at fault
	}
	es, _ := app.ElectionService() // a StoreClusterService embeds it
	applyFlags(es, f)
	return &appConfig{
		from: f.storeFrom + " " + where, where: where, name: name, typ: typ, app: app, svc: app.Cluster(), es: es,
		registry: registry, opened: opened,
	}, nil
}

// release closes the store of --store once its election has stopped, or when none was made of
// it; nothing with --config, whose Application stops what it started.
func (ac *appConfig) release(ctx context.Context) error {
	if ac.opened == nil {
		return nil
	}
	return ac.opened.Stop(ctx)
}

// storeService is the Registry of the application composed for --store: the store the
// command opened from the URL. Stop closes it, once.
type storeService struct {
	store.Store
	once sync.Once
	err  error
}

// Init has nothing to do: the store was opened before the application was built.
func (s *storeService) Init(context.Context, *leasehold.Application) error { return nil }

// Stop closes the store; a later call returns the first one's result.
func (s *storeService) Stop(context.Context) error {
	s.once.Do(func() { s.err = store.Close(s.Store) })
	return s.err
}

// Watch passes the store's watch on: the election over this Registry watches its lease (E9)
// as it would over the store itself.
func (s *storeService) Watch(ctx context.Context, key string, fn func(store.Change)) error {
	return store.Watch(ctx, s.Store, key, fn)
}

// loadAppConfig reads --config once and builds an application of its Registry and cluster
// service only: the configuration is the application's own, so its other services may be of
// types the command does not link (MyApp/Poller), and they are left aside. Those of types the
// command links are still checked, though not used: a mistake in them (an unknown parameter)
// is an error here as it is in the application.
func loadAppConfig(f *commonFlags, usage string) (*appConfig, error) {
	cfg, err := leasehold.LoadConfig(f.config)
	if err != nil {
		return nil, badInput(usage, "--config: %v", err)
	}
	// A service of a backend the build left out would be taken for one of the application's
	// own types, and left aside: say what it is instead.
	for _, sc := range cfg.Services {
		if b, typ, ok := missingServiceType(sc); ok {
			return nil, badInput(usage, "--config %s: service %q is a %s: %s", f.config, sc.Name, typ, b.missingText())
		}
	}
	if err := checkRegistryURL(cfg, f.config); err != nil {
		return nil, badInput(usage, "%v", err)
	}
	if _, err := leasehold.New(cfg.Only(leasehold.ServiceConfig.Registered)); err != nil {
		return nil, badInput(usage, "--config %s: %v", f.config, err)
	}
	var name, typ string
	for _, sc := range cfg.Services {
		if sc.Name != leasehold.RegistryName && slices.ContainsFunc(clusterTypes, sc.HasType) {
			name, typ = sc.Name, sc.Type // A5: the first cluster service is the application's
			break
		}
	}
	if name == "" {
		return nil, badInput(usage, "--config %s has no cluster service (%s): nothing to elect with",
			f.config, strings.Join(clusterTypes, " or "))
	}
	app, err := leasehold.New(cfg.Only(func(sc leasehold.ServiceConfig) bool {
		return sc.Name == leasehold.RegistryName || sc.Name == name
	}))
	if err != nil {
		return nil, badInput(usage, "--config %s: %v", f.config, err)
	}
	svc := app.Cluster()
	es, ok := app.ElectionService()
	if !ok {
		return nil, badInput(usage, "--config %s: cluster service %q (%T) does not embed leasehold.ElectionService; leasehold cannot drive it", f.config, name, svc)
	}
	applyFlags(es, f)
	return &appConfig{
		from: "--config " + f.config, where: f.config, name: name, typ: typ, app: app, svc: svc, es: es,
		registry: cfg.Only(func(sc leasehold.ServiceConfig) bool { return sc.Name == leasehold.RegistryName }),
	}, nil
}

// checkRegistryURL refuses a Registry whose store is given empty: a "url", "urlFile" or "path"
// parameter that is blank, a "urlFile" naming a blank file, a "urlEnv" naming a variable that
// is unset or blank. Left to the Registry's start, that would be a failure at run time (exit
// 1) on every host, when it is a mistake in the configuration, as an empty --store is.
func checkRegistryURL(cfg *leasehold.Config, path string) error {
	for _, sc := range cfg.Services {
		if sc.Name != leasehold.RegistryName {
			continue
		}
		var params map[string]json.RawMessage
		if json.Unmarshal(sc.Params, &params) != nil {
			return nil // the Registry's own decoding says what is wrong
		}
		str := func(name string) (string, bool) {
			var v *string
			if raw, ok := params[name]; ok && json.Unmarshal(raw, &v) == nil && v != nil {
				return *v, true
			}
			return "", false
		}
		where := fmt.Sprintf("--config %s: service %q (%s)", path, sc.Name, sc.Type)
		for _, name := range []string{"url", "urlFile", "path"} {
			if v, ok := str(name); ok {
				if strings.TrimSpace(v) == "" {
					return fmt.Errorf("%s: parameter %q is empty: want the store's %s", where, name, map[string]string{"url": "URL", "urlFile": "URL file", "path": "file"}[name])
				}
			}
		}
		if v, ok := str("urlEnv"); ok {
			env, set := os.LookupEnv(v)
			switch {
			case strings.TrimSpace(v) == "":
				return fmt.Errorf(`%s: parameter "urlEnv" is empty: want the name of a variable holding the store's URL`, where)
			case !set:
				return fmt.Errorf(`%s: parameter "urlEnv": the variable %s is not set: want the store's URL`, where, v)
			case strings.TrimSpace(env) == "":
				return fmt.Errorf(`%s: parameter "urlEnv": the variable %s is empty: want the store's URL`, where, v)
			}
		}
		if v, ok := str("urlFile"); ok {
			if data, err := os.ReadFile(v); err == nil && strings.TrimSpace(string(data)) == "" {
				return fmt.Errorf(`%s: parameter "urlFile": the file %s is empty: want the store's URL`, where, v)
			}
		}
	}
	return nil
}

// checkSlotName refuses a configured lease name of a slot's form, as validate does --lease (H1).
func (ac *appConfig) checkSlotName(usage string) error {
	if lease := ac.lease(); isSlotName(lease) {
		return badInput(usage, `%s: cluster service %q: parameter "leaseName" %q ends in /<digits>, the form of the record of a slot of a lease of N holders: a lease of its own by that name would share the slot's record; choose another name`,
			ac.from, ac.name, lease)
	}
	return nil
}

// lease is the cluster service's lease name, the default applied as the Elector does.
func (ac *appConfig) lease() string { return ac.es.Lease() }

// timing returns the cluster service's L and R, the flags applied, or a usage error naming the
// parameter at fault.
func (ac *appConfig) timing(usage string) (l, r time.Duration, err error) {
	l, r, err = ac.es.Timing()
	if err == nil {
		err = checkFloors(l, r, configTiming)
	}
	if err != nil {
		return 0, 0, badInput(usage, "%s: cluster service %q: %v", ac.from, ac.name, err)
	}
	return l, r, nil
}

// urlEnv is the environment variable the Registry reads its URL from, if any. The Registry's
// parameters were checked by loadAppConfig: a urlEnv among them is that of a store service
// type (leasehold.URLStore).
func (ac *appConfig) urlEnv() string {
	var urlEnv string
	for _, sc := range ac.registry.Services {
		var p struct {
			URLEnv string `json:"urlEnv"`
		}
		if json.Unmarshal(sc.Params, &p) == nil {
			urlEnv = p.URLEnv
		}
	}
	return urlEnv
}

// startRegistry starts an application of the configuration's Registry alone: the lease can be
// reached through it without the cluster service joining the election.
func (ac *appConfig) startRegistry(ctx context.Context) (*leasehold.Application, error) {
	reg, err := leasehold.New(ac.registry)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", ac.from, err) // built once already
	}
	reg.SetLogger(slog.New(slog.DiscardHandler))
	if err := reg.Start(ctx); err != nil {
		return nil, fmt.Errorf("%s: %w", ac.from, err)
	}
	// A Registry whose server does not answer is waited for by run (C7), not by a one-shot
	// reader: it fails as the store's opening did.
	if svc, ok := reg.Service("Registry"); ok {
		if us, ok := svc.(*leasehold.URLStore); ok {
			if err := us.NotOpen(); err != nil {
				_ = reg.Stop(ctx)
				return nil, fmt.Errorf("%s: service %q: %w", ac.from, "Registry", err)
			}
		}
	}
	return reg, nil
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
	if f.set["advertise"] {
		es.Advertise = f.advertise
	}
	if f.set["priority"] {
		es.Priority = f.priority
	}
	if f.set["stability-window"] {
		es.StabilityWindow = leasehold.Duration(f.stabilityWindow)
	}
	// A check on the command line replaces the configuration's, whichever kind it is.
	if f.set["health-cmd"] {
		es.HealthCommand, es.HealthURL = f.healthCmd, ""
	}
	if f.set["health-url"] {
		es.HealthCommand, es.HealthURL = "", f.healthURL
	}
	if f.set["health-timeout"] {
		es.HealthTimeout = leasehold.Duration(f.healthTimeout)
	}
	if f.set["health-failures"] {
		es.HealthFailures = f.healthFailures
	}
}

// loadRankedConfig loads the cluster service of --config or --store (loadElection) and checks
// its timing and its priority and health settings, the flags applied.
func loadRankedConfig(ctx context.Context, f *commonFlags, log *slog.Logger, usage string) (ac *appConfig, l, r time.Duration, err error) {
	if ac, err = loadElection(ctx, f, log, usage); err != nil {
		return nil, 0, 0, err
	}
	if l, r, err = ac.timing(usage); err == nil {
		err = ac.checkRank(f, r, usage)
	}
	if err != nil {
		_ = ac.release(context.WithoutCancel(ctx))
		return nil, 0, 0, err
	}
	return ac, l, r, nil
}

// checkRank checks the priority and health settings of the cluster service, the flags
// applied: a flag at fault is named as the flag (--health-timeout beyond the service's R), a
// parameter as the parameter.
func (ac *appConfig) checkRank(f *commonFlags, r time.Duration, usage string) error {
	hasCheck := ac.es.HealthCommand != "" || ac.es.HealthURL != ""
	if err := f.checkRankNeeds(hasCheck, r, fmt.Sprintf("the renew interval of %s", ac.from), usage); err != nil {
		return err
	}
	if err := ac.es.Validate(); err != nil {
		return badInput(usage, "%s: cluster service %q: %v", ac.from, ac.name, err)
	}
	return nil
}

// openStore opens the store of a URL. Every error it returns is a failure (exit 1), whether a
// server refused the credentials, could not be reached, or the backend rejected a parameter
// of the URL (store.ErrConfig marks the errors waiting cannot cure: run waits for a store that
// is not ready, see openStoreWaiting), never bad input: a failure taken for bad input would
// bury its one line under the usage. What the
// command can judge without a backend (the URL's syntax and scheme) validateStore refused
// before. store.Open's errors never show a password.
func openStore(ctx context.Context, rawURL string) (store.Store, error) {
	return store.Open(ctx, rawURL)
}

// leaseReader reads a lease's record without joining its election, for status.
type leaseReader struct {
	lease string
	where string
	lock  cluster.Lock
	close func(context.Context) error
}

// storeLeaseReader reads f's lease in the store at url (f.store, or its read-only form).
func storeLeaseReader(ctx context.Context, f *commonFlags, url string) (*leaseReader, error) {
	st, err := openStore(ctx, url)
	if err != nil {
		return nil, err
	}
	return &leaseReader{
		lease: f.lease, where: store.RedactString(f.store), lock: cluster.NewStoreLock(st),
		close: func(context.Context) error { return store.Close(st) },
	}, nil
}

// newLeaseReader opens what holds the lease of the flags. With --config, the lease is read
// through the cluster service's Lock (leasehold.LockOpener) over the configuration's Registry,
// which is started; the cluster service is not.
func newLeaseReader(ctx context.Context, f *commonFlags, usage string) (*leaseReader, error) {
	if f.config == "" {
		if absentStore(f) {
			return &leaseReader{lease: f.lease, where: store.RedactString(f.store), lock: absentLock{},
				close: func(context.Context) error { return nil }}, nil
		}
		return storeLeaseReader(ctx, f, readOnlyURL(f.store))
	}
	ac, err := loadAppConfig(f, usage)
	if err != nil {
		return nil, err
	}
	if err := ac.checkSlotName(usage); err != nil {
		return nil, err
	}
	lock, closeAll, err := ac.openLock(ctx, usage)
	if err != nil {
		return nil, err
	}
	return &leaseReader{lease: ac.lease(), where: f.config, lock: lock, close: closeAll}, nil
}

// openLock opens the Lock of the cluster service's lease (leasehold.LockOpener) over the
// configuration's Registry, which it starts; the cluster service's own election is not
// started. closeAll releases both.
func (ac *appConfig) openLock(ctx context.Context, usage string) (lock cluster.Lock, closeAll func(context.Context) error, err error) {
	opener, ok := ac.svc.(leasehold.LockOpener)
	if !ok {
		return nil, nil, badInput(usage, "%s: cluster service %q (%T) cannot open its lease without joining the election",
			ac.from, ac.name, ac.svc)
	}
	reg, err := ac.startRegistry(ctx)
	if err != nil {
		return nil, nil, err
	}
	lock, err = opener.OpenLock(ctx, reg)
	if err != nil {
		_ = reg.Stop(context.WithoutCancel(ctx))
		return nil, nil, fmt.Errorf("%s: %w", ac.from, err)
	}
	return lock, func(ctx context.Context) error {
		var errs []error
		if s, ok := ac.svc.(leasehold.Stopper); ok {
			errs = append(errs, s.Stop(ctx)) // no election to end: it releases the client only
		}
		return errors.Join(append(errs, reg.Stop(ctx))...)
	}, nil
}

// urlChecks check the URL of a store that absentStore keeps from being opened, by scheme: a URL
// the opener would refuse is refused all the same (backend_*.go fill it).
var urlChecks = map[string]func(rawURL string) error{}

// absentStore reports whether --store is a file or SQLite store whose file does not exist: its
// lease is missing, and opening the store would create the file (SQLite's), or its lock file
// and, for the default store, the state directory (the file store's), which a command that
// only reads must not do.
func absentStore(f *commonFlags) bool {
	u, err := store.ParseURL(f.store)
	if err != nil {
		return false
	}
	switch {
	case strings.EqualFold(u.Scheme, "file"):
		if u.Opaque != "" || u.User != nil || (u.Host != "" && u.Host != "localhost") || u.RawQuery != "" || u.ForceQuery ||
			u.Fragment != "" || !strings.HasPrefix(u.Path, "/") || strings.HasSuffix(u.Path, "/") {
			return false // the opener says what is wrong with the URL
		}
	case strings.EqualFold(u.Scheme, "sqlite"):
		if check := urlChecks["sqlite"]; check != nil && check(f.store) != nil {
			return false // the opener says what is wrong with the URL
		}
	default:
		return false
	}
	if _, err := os.Lstat(u.Path); !errors.Is(err, fs.ErrNotExist) {
		return false
	}
	if f.defaultStore {
		return true
	}
	// A missing directory is more likely a mistyped path than a store nobody used: the
	// opener's error says so.
	dir, err := os.Stat(filepath.Dir(u.Path))
	return err == nil && dir.IsDir()
}

// readOnlyURL is the URL of a store to read only: SQLite's is opened with mode=ro, which
// neither creates the database nor its table. Other stores create nothing when read, but for
// the file store's lock file, which absentStore keeps from being created for nothing.
func readOnlyURL(rawURL string) string {
	u, err := store.ParseURL(rawURL)
	if err != nil || !strings.EqualFold(u.Scheme, "sqlite") {
		return rawURL
	}
	q := u.Query()
	q.Set("mode", "ro")
	u.RawQuery = q.Encode()
	return u.String()
}

// absentLock is the Lock of a lease in a store that does not exist yet.
type absentLock struct{}

func (absentLock) Get(context.Context, string) (cluster.Record, error) {
	return cluster.Record{}, cluster.ErrNotFound
}

func (absentLock) Create(context.Context, string, cluster.Record) (cluster.Record, error) {
	return cluster.Record{}, errors.New("leasehold: the lease is only read")
}

func (absentLock) Update(context.Context, string, cluster.Record) (cluster.Record, error) {
	return cluster.Record{}, errors.New("leasehold: the lease is only read")
}
