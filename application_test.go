package leasehold

import (
	"context"
	"log/slog"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/leasehold/leasehold/cluster"
	"github.com/leasehold/leasehold/store/memory"
)

// A3: a failed start stops what started, in reverse order, and names the failing service.
func TestA3FailedStartStopsInReverse(t *testing.T) {
	j := resetJournal(t)
	app := newApp(t, `{"services": {
		"one": {"type": "test/Recorder", "name": "one"},
		"two": {"type": "test/Recorder", "name": "two"},
		"bad": {"type": "test/Recorder", "name": "bad", "failInit": true},
		"never": {"type": "test/Recorder", "name": "never"}}}`)
	err := app.Start(t.Context())
	if err == nil || !strings.Contains(err.Error(), `start service "bad" (Webda/test/Recorder): boom`) {
		t.Fatalf("Start: %v; want an error naming the service bad", err)
	}
	want := []string{"init one", "init two", "init bad", "stop two", "stop one"}
	if got := j.get(); !reflect.DeepEqual(got, want) {
		t.Fatalf("journal %v; want %v", got, want)
	}
	if _, ok := app.Service("one"); ok {
		t.Fatal("a stopped service is still returned by Service")
	}
	if err := app.Start(t.Context()); err == nil {
		t.Fatal("Start after a failed Start: no error")
	}
}

// A3: Stop is best effort: every service is stopped, errors are joined; a second Stop stops
// nothing again and returns the first's result.
func TestA3StopJoinsErrors(t *testing.T) {
	j := resetJournal(t)
	app := newApp(t, `{"services": {
		"one": {"type": "test/Recorder", "name": "one", "stopErr": "one failed"},
		"two": {"type": "test/Recorder", "name": "two", "stopErr": "two failed"},
		"three": {"type": "test/Recorder", "name": "three"}}}`)
	if err := app.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	err := app.Stop(t.Context())
	if err == nil || !strings.Contains(err.Error(), `stop service "one"`) || !strings.Contains(err.Error(), "one failed") ||
		!strings.Contains(err.Error(), `stop service "two"`) || !strings.Contains(err.Error(), "two failed") {
		t.Fatalf("Stop: %v; want both errors, naming their services", err)
	}
	want := []string{"init one", "init two", "init three", "stop three", "stop two", "stop one"}
	if got := j.get(); !reflect.DeepEqual(got, want) {
		t.Fatalf("journal %v; want %v", got, want)
	}
	if err2 := app.Stop(t.Context()); err2 == nil || err2.Error() != err.Error() {
		t.Fatalf("second Stop: %v; want the first's result", err2)
	}
	if got := j.get(); len(got) != len(want) {
		t.Fatalf("journal %v after a second Stop; want nothing stopped twice", got)
	}
}

// A3: Stop ends leadership first: every deregistered callback has run and the lease is
// released while all other services, the Registry included, still run.
func TestA3StopEndsLeadershipFirst(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		j := resetJournal(t)
		app := newApp(t, `{"services": {
			"worker": {"type": "test/Recorder", "name": "worker"},
			"cluster": {"type": "Webda/StoreClusterService"},
			"after": {"type": "test/Recorder", "name": "after"},
			"Registry": {"type": "test/JournaledStore"}}}`)
		app.SetLogger(discardLogger())
		app.WhenLeader(func(context.Context) error { j.add("fn"); return nil }, func() { j.add("deregistered") })
		if err := app.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if err := app.Stop(context.Background()); err != nil {
			t.Fatal(err)
		}
		// fn runs on a goroutine of its own once the cluster service has started, while Start
		// goes on: its place among the later Inits is not fixed.
		got := j.get()
		if i := slices.Index(got, "fn"); i < slices.Index(got, "init worker") {
			t.Fatalf("journal %v; want fn once the cluster service has started", got)
		} else {
			got = slices.Delete(got, i, i+1)
		}
		// The Registry starts first, wherever it is configured (A4), and stops last.
		want := []string{"init Registry", "init worker", "init after", "deregistered", "release cluster:leader",
			"stop after", "stop worker", "stop Registry"}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("journal %v without fn; want %v", got, want)
		}
	})
}

func discardLogger() *slog.Logger { return newDiscardLogger() }

// A4: without a Registry service, the Registry is a memory store; a StoreClusterService over
// it is a start error saying what to configure, since every process would elect itself.
func TestA4ImplicitRegistryIsAStartError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		app := newApp(t, `{"services": {"cluster": {"type": "Webda/StoreClusterService"}}}`)
		app.SetLogger(discardLogger())
		if app.Registry() != nil {
			t.Fatal("Registry before Start is not nil")
		}
		err := app.Start(context.Background())
		for _, want := range []string{`service "cluster" (Webda/StoreClusterService): no Registry is configured`, `"Registry"`, "Webda/MemoryStore"} {
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Fatalf("Start: %v; want an error holding %s", err, want)
			}
		}
		if app.Cluster().IsLeader() {
			t.Fatal("leading after a failed Start")
		}
		if _, ok := app.Service(RegistryName); ok {
			t.Fatal("the Registry is still started after a failed Start")
		}
	})
}

// A4: an explicitly configured memory Registry is allowed under a StoreClusterService (one
// process, tests), with a warning.
func TestA4ExplicitMemoryRegistryWarns(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		app := newApp(t, `{"services": {"Registry": {"type": "Webda/MemoryStore"}, "cluster": {"type": "Webda/StoreClusterService"}}}`)
		logs := &logBuffer{}
		app.SetLogger(logs.logger())
		if err := app.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		defer app.Stop(context.Background())
		reg, ok := app.Service(RegistryName)
		if !ok {
			t.Fatal("no Registry service")
		}
		if _, ok := reg.(*MemoryStore); !ok {
			t.Fatalf("Registry is %T; want *MemoryStore", reg)
		}
		if app.Registry() == nil {
			t.Fatal("Registry() is nil after Start")
		}
		if !strings.Contains(logs.String(), "level=WARN") || !strings.Contains(logs.String(), "process-local") {
			t.Fatalf("log %q; want a warning about the process-local Registry", logs.String())
		}
		synctest.Wait()
		if !app.Cluster().IsLeader() {
			t.Fatal("not leading over a memory Registry")
		}
	})
}

// A4: without a Registry service or a cluster service, the Registry is a memory store.
func TestA4DefaultRegistry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		resetJournal(t)
		app := newApp(t, `{"services": {"r": {"type": "test/Recorder"}}}`)
		if err := app.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		defer app.Stop(context.Background())
		if reg, ok := app.Service(RegistryName); !ok || app.Registry() == nil {
			t.Fatalf("default Registry: %T, Registry() %v; want a *MemoryStore", reg, app.Registry())
		}
	})
}

// A4: a shared Registry gives no warning, nor does a memory Registry without a cluster service.
func TestA4NoWarningOtherwise(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		for _, config := range []string{
			`{"services": {"Registry": {"type": "test/JournaledStore"}, "cluster": {"type": "StoreClusterService"}}}`,
			`{"services": {"r": {"type": "test/Recorder"}}}`,
		} {
			resetJournal(t)
			app := newApp(t, config)
			logs := &logBuffer{}
			app.SetLogger(logs.logger())
			if err := app.Start(context.Background()); err != nil {
				t.Fatal(err)
			}
			if err := app.Stop(context.Background()); err != nil {
				t.Fatal(err)
			}
			if strings.Contains(logs.String(), "process-local") {
				t.Fatalf("config %s: unexpected warning %q", config, logs.String())
			}
		}
	})
}

// A5: Cluster returns the first configured cluster service; without one, a local cluster that
// always leads.
func TestA5UseCluster(t *testing.T) {
	app := newApp(t, `{"services": {
		"r": {"type": "test/Recorder"},
		"first": {"type": "StoreClusterService", "instanceId": "first"},
		"second": {"type": "StoreClusterService", "instanceId": "second"}}}`)
	if c := app.Cluster(); c.InstanceID() != "first" {
		t.Fatalf("Cluster() is %q; want the first configured cluster service", c.InstanceID())
	}
	local := newApp(t, `{"services": {"r": {"type": "test/Recorder"}}}`)
	if _, ok := local.Cluster().(*cluster.Local); !ok || !local.Cluster().IsLeader() {
		t.Fatalf("without a cluster service, Cluster() is %T (leader %v); want a leading *cluster.Local", local.Cluster(), local.Cluster().IsLeader())
	}
	if err := local.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := local.Stop(t.Context()); err != nil {
		t.Fatal(err)
	}
	if local.Cluster().IsLeader() {
		t.Fatal("the local cluster still leads after Stop")
	}
}

// A6: a WhenLeader from a service configured before the cluster service waits for it and
// attaches when it starts.
func TestA6RegistrationWaitsForClusterService(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		j := resetJournal(t)
		var remove func()
		testHooks["early"] = func(_ context.Context, app *Application) {
			if app.Cluster().IsLeader() {
				j.add("leader before the cluster service started")
			}
			remove = WhenLeader(func(ctx context.Context) error {
				term, _ := cluster.TermOf(ctx)
				j.add("fn term " + string(rune('0'+term)))
				return nil
			}, func() { j.add("deregistered") })
		}
		defer delete(testHooks, "early")
		app := newApp(t, `{"services": {
			"early": {"type": "test/Recorder", "name": "early"},
			"cluster": {"type": "StoreClusterService", "instanceId": "me"},
			"Registry": {"type": "MemoryStore"}}}`)
		app.SetLogger(discardLogger())
		if err := app.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if !app.Cluster().IsLeader() {
			t.Fatal("not leading after Start")
		}
		remove()
		if err := app.Stop(context.Background()); err != nil {
			t.Fatal(err)
		}
		want := []string{"init early", "fn term 1", "deregistered", "stop early"}
		if got := j.get(); !reflect.DeepEqual(got, want) {
			t.Fatalf("journal %v; want %v", got, want)
		}
	})
}

// A6: without a cluster service, fn runs at once, even before Start.
func TestA6NoClusterRunsAtOnce(t *testing.T) {
	app := newApp(t, `{"services": {"r": {"type": "test/Recorder"}}}`)
	ran := make(chan uint64, 1)
	app.WhenLeader(func(ctx context.Context) error {
		term, _ := cluster.TermOf(ctx)
		ran <- term
		return nil
	}, nil)
	if term := <-ran; term != 1 {
		t.Fatalf("term %d; want 1", term)
	}
}

// A7: package-level UseCluster and WhenLeader act on the application started last, and on a
// local cluster when there is none.
func TestA7PackageLevel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		if c := UseCluster(); c == nil || !c.IsLeader() {
			t.Fatalf("UseCluster() with no application: %v; want a leading local cluster", c)
		}
		a := newApp(t, `{"services": {"Registry": {"type": "MemoryStore"}, "cluster": {"type": "StoreClusterService", "instanceId": "a"}}}`)
		b := newApp(t, `{"services": {"Registry": {"type": "MemoryStore"}, "cluster": {"type": "StoreClusterService", "instanceId": "b"}}}`)
		for _, app := range []*Application{a, b} {
			app.SetLogger(discardLogger())
			if err := app.Start(context.Background()); err != nil {
				t.Fatal(err)
			}
		}
		if id := UseCluster().InstanceID(); id != "b" {
			t.Fatalf("UseCluster() is %q; want b, started last", id)
		}
		var mu sync.Mutex
		var got []uint64
		WhenLeader(func(ctx context.Context) error {
			term, _ := cluster.TermOf(ctx)
			mu.Lock()
			got = append(got, term)
			mu.Unlock()
			return nil
		}, nil)
		synctest.Wait()
		if !b.Cluster().IsLeader() {
			t.Fatal("b does not lead")
		}
		mu.Lock()
		if len(got) != 1 {
			t.Fatalf("fn ran %d times on b's cluster; want 1", len(got))
		}
		mu.Unlock()
		if err := b.Stop(context.Background()); err != nil {
			t.Fatal(err)
		}
		if id := UseCluster().InstanceID(); id != "a" {
			t.Fatalf("UseCluster() after b stopped is %q; want a, still running", id)
		}
		if err := a.Stop(context.Background()); err != nil {
			t.Fatal(err)
		}
		if _, ok := UseCluster().(*cluster.Local); !ok {
			t.Fatalf("UseCluster() after every application stopped is %T; want the local cluster", UseCluster())
		}
	})
}

// S1: StoreClusterService keeps the record in the Registry entry cluster:<leaseName>.
func TestS1RecordInRegistry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		app := newApp(t, `{"services": {"Registry": {"type": "test/JournaledStore"}, "cluster": {"type": "StoreClusterService", "leaseName": "cron", "instanceId": "me", "leaseDuration": 3000, "renewInterval": 1000}}}`)
		resetJournal(t)
		app.SetLogger(discardLogger())
		if err := app.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		doc, err := app.Registry().Get(context.Background(), "cluster:cron")
		if err != nil {
			t.Fatal(err)
		}
		if doc["holder"] != "me" || doc["term"] != 1.0 || doc["leaseDuration"] != 3000.0 || doc["revision"] == "" {
			t.Fatalf("record %v; want holder me, term 1, leaseDuration 3000, a revision", doc)
		}
		if err := app.Stop(context.Background()); err != nil {
			t.Fatal(err)
		}
	})
}

// E0 through the service: renewInterval >= leaseDuration names both parameters.
func TestStoreClusterServiceValidation(t *testing.T) {
	app := newApp(t, `{"services": {"cluster": {"type": "StoreClusterService", "leaseDuration": 1000, "renewInterval": 1000}}}`)
	app.SetLogger(discardLogger())
	err := app.Start(t.Context())
	if err == nil || !strings.Contains(err.Error(), `service "cluster"`) || !strings.Contains(err.Error(), `parameter "renewInterval" 1s must be positive and less than parameter "leaseDuration" 1s`) {
		t.Fatalf("Start: %v; want an error naming the service and both parameters", err)
	}
}

// Two applications over one shared store: one leader; stopping it hands over.
func TestTwoApplicationsOneLeader(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		shared := memory.New()
		sharedStores["two-apps"] = shared
		defer delete(sharedStores, "two-apps")
		mk := func(id string) *Application {
			app := newApp(t, `{"services": {"Registry": {"type": "test/SharedStore", "name": "two-apps"}, "cluster": {"type": "StoreClusterService", "instanceId": "`+id+`"}}}`)
			app.SetLogger(discardLogger())
			if err := app.Start(context.Background()); err != nil {
				t.Fatal(err)
			}
			return app
		}
		a := mk("a")
		synctest.Wait()
		b := mk("b")
		time.Sleep(time.Second)
		synctest.Wait()
		if !a.Cluster().IsLeader() || b.Cluster().IsLeader() {
			t.Fatalf("a leader %v, b leader %v; want a only", a.Cluster().IsLeader(), b.Cluster().IsLeader())
		}
		start := time.Now()
		if err := a.Stop(context.Background()); err != nil {
			t.Fatal(err)
		}
		for !b.Cluster().IsLeader() {
			time.Sleep(100 * time.Millisecond)
		}
		if d := time.Since(start); d > 5*time.Second {
			t.Fatalf("b took over %v after a's Stop; want within R = 5s", d)
		}
		if err := b.Stop(context.Background()); err != nil {
			t.Fatal(err)
		}
	})
}

// Tools reach any cluster service's parameters and events through Application.ElectionService
// and AddObserver, before Start.
func TestElectionAccessAndObservers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		app := newApp(t, `{"services": {"Registry": {"type": "MemoryStore"}, "cluster": {"type": "StoreClusterService", "instanceId": "me"}}}`)
		app.SetLogger(discardLogger())
		es, ok := app.ElectionService()
		if !ok {
			t.Fatalf("ElectionService of %T: not found", app.Cluster())
		}
		es.LeaseName = "changed"
		var mu sync.Mutex
		var kinds []cluster.EventKind
		es.AddObserver(func(ev cluster.Event) {
			mu.Lock()
			kinds = append(kinds, ev.Kind)
			mu.Unlock()
		})
		fieldSeen := false
		app.Cluster().(*StoreClusterService).Observer = func(cluster.Event) { fieldSeen = true }
		if err := app.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if _, err := app.Registry().Get(context.Background(), "cluster:changed"); err != nil {
			t.Fatalf("the lease name set through ElectionService() was not used: %v", err)
		}
		if err := app.Stop(context.Background()); err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		defer mu.Unlock()
		if len(kinds) == 0 || !slices.Contains(kinds, cluster.BecameLeader) || !slices.Contains(kinds, cluster.StoppedLeading) {
			t.Fatalf("observed %v; want became_leader and stopped_leading", kinds)
		}
		if !fieldSeen {
			t.Fatal("the Observer field got no event")
		}
	})
}

// Without a cluster service there is no election to reach: ElectionService says so.
func TestElectionServiceOfALocalCluster(t *testing.T) {
	app := newApp(t, `{"services": {}}`)
	if es, ok := app.ElectionService(); ok || es != nil {
		t.Fatalf("ElectionService() = %v, %v on an application without a cluster service", es, ok)
	}
}

// A service the program made (Made) is taken as it is: a store opened in code is the Registry
// a configured StoreClusterService elects over, and errors name it by the type given.
func TestMadeService(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		reg := &MemoryStore{Store: memory.New()}
		cfg, err := ParseConfig([]byte(`{"services": {"cluster": {"type": "StoreClusterService", "leaseName": "cron", "instanceId": "me"}}}`))
		if err != nil {
			t.Fatal(err)
		}
		made := Made(RegistryName, "test/Opened", reg)
		if !made.Registered() {
			t.Fatal("a made service is not Registered: Only(Registered) would drop it")
		}
		cfg.Services = append([]ServiceConfig{made}, cfg.Services...)
		app, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		app.SetLogger(discardLogger())
		if err := app.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		// MemoryStore.Init made a new memory store: look in the one Init left in the service.
		if doc, err := reg.Get(context.Background(), "cluster:cron"); err != nil || doc["holder"] != "me" {
			t.Fatalf("the made Registry holds %v, %v; want the record of holder me", doc, err)
		}
		if err := app.Stop(context.Background()); err != nil {
			t.Fatal(err)
		}
	})
	_, err := New(&Config{Services: []ServiceConfig{Made(RegistryName, "test/NotAStore", &StoreClusterService{})}})
	if err == nil || !strings.Contains(err.Error(), `service "Registry" (test/NotAStore) is not a store`) {
		t.Fatalf("New with a made Registry that is no store: %v; want an error naming it by its type", err)
	}
}
