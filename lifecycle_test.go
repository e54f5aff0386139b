package leasehold

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

// A3: Stop before Start still ends the local cluster's leadership: it led from New, so fn
// ran and its deregistered is owed.
func TestA3StopBeforeStartEndsLocalLeadership(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		resetJournal(t)
		app := newApp(t, `{"services": {"r": {"type": "test/Recorder", "name": "r"}}}`)
		var j journal
		app.WhenLeader(func(context.Context) error { j.add("fn"); return nil }, func() { j.add("deregistered") })
		synctest.Wait()
		if err := app.Stop(context.Background()); err != nil {
			t.Fatal(err)
		}
		if got, want := j.get(), []string{"fn", "deregistered"}; !reflect.DeepEqual(got, want) {
			t.Fatalf("calls %v; want %v (Stop must end the leadership)", got, want)
		}
		if app.Cluster().IsLeader() {
			t.Fatal("IsLeader is true after Stop")
		}
		if err := app.Start(context.Background()); err == nil {
			t.Fatal("Start after Stop: no error")
		}
	})
}

// A3: a second Stop while the first is still ending leadership (a signal handler and a
// deferred Stop) waits for the first and returns its result.
func TestA3SecondStopWaitsForTheFirst(t *testing.T) {
	for name, config := range map[string]string{
		"local cluster": `{"services": {"r": {"type": "test/Recorder", "name": "r", "stopErr": "r failed"}}}`,
		"cluster service": `{"services": {"Registry": {"type": "test/JournaledStore"}, "r": {"type": "test/Recorder", "name": "r", "stopErr": "r failed"},
			"cluster": {"type": "StoreClusterService"}}}`,
	} {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				resetJournal(t)
				app := newApp(t, config)
				app.SetLogger(discardLogger())
				release := make(chan struct{})
				deregistering := make(chan struct{})
				app.WhenLeader(func(context.Context) error { return nil }, func() {
					close(deregistering)
					<-release
				})
				if err := app.Start(context.Background()); err != nil {
					t.Fatal(err)
				}
				synctest.Wait()
				first := make(chan error, 1)
				go func() { first <- app.Stop(context.Background()) }()
				<-deregistering
				second := make(chan error, 1)
				go func() { second <- app.Stop(context.Background()) }()
				synctest.Wait()
				select {
				case err := <-second:
					t.Errorf("the second Stop returned %v while the first was still ending leadership", err)
					second <- err
				default:
				}
				close(release)
				err1, err2 := <-first, <-second
				if err1 == nil || !strings.Contains(err1.Error(), "r failed") {
					t.Fatalf("first Stop: %v; want r's error", err1)
				}
				if err2 == nil || err2.Error() != err1.Error() {
					t.Fatalf("second Stop: %v; want the first's result %v", err2, err1)
				}
				if err3 := app.Stop(context.Background()); err3 == nil || err3.Error() != err1.Error() {
					t.Fatalf("a Stop after both: %v; want the first's result", err3)
				}
			})
		})
	}
}

// A3: Stop during Start makes Start fail and leaves nothing started: the services already
// started are stopped (Stop returns after that), those after are never initialized, the
// Init under way sees its context cancelled.
func TestA3StopDuringStart(t *testing.T) {
	for _, tc := range []struct {
		name       string
		ignoresCtx bool // Stop must then wait for the Init to return
		hook       func(ctx context.Context, entered, release chan struct{})
	}{
		{"Init ignoring its context", true, func(_ context.Context, entered, release chan struct{}) {
			close(entered)
			<-release
		}},
		{"Init ending with its context", false, func(ctx context.Context, entered, _ chan struct{}) {
			close(entered)
			<-ctx.Done()
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				j := resetJournal(t)
				entered, release := make(chan struct{}), make(chan struct{})
				testHooks["slow"] = func(ctx context.Context, _ *Application) { tc.hook(ctx, entered, release) }
				defer delete(testHooks, "slow")
				app := newApp(t, `{"services": {
					"Registry": {"type": "test/JournaledStore"},
					"slow": {"type": "test/Recorder", "name": "slow"},
					"cluster": {"type": "StoreClusterService", "instanceId": "me"},
					"after": {"type": "test/Recorder", "name": "after"}}}`)
				app.SetLogger(discardLogger())
				var fnRan journal
				app.WhenLeader(func(context.Context) error { fnRan.add("fn"); return nil }, nil)
				started := make(chan error, 1)
				go func() { started <- app.Start(context.Background()) }()
				<-entered
				stopped := make(chan error, 1)
				go func() { stopped <- app.Stop(context.Background()) }()
				synctest.Wait()
				if tc.ignoresCtx {
					select {
					case err := <-stopped:
						t.Errorf("Stop returned %v while Start was still initializing a service", err)
						stopped <- err
					default:
					}
				}
				close(release)
				err := <-started
				if err == nil || !errors.Is(err, ErrStopped) || !strings.Contains(err.Error(), `"slow"`) {
					t.Errorf("Start: %v; want ErrStopped, naming the service under way", err)
				}
				if err := <-stopped; err != nil {
					t.Errorf("Stop: %v", err)
				}
				synctest.Wait()
				if app.Cluster().IsLeader() || len(fnRan.get()) != 0 {
					t.Errorf("after Stop during Start: leader %v, fn ran %v; want nothing started", app.Cluster().IsLeader(), fnRan.get())
				}
				want := []string{"init Registry", "init slow", "stop slow", "stop Registry"}
				if got := j.get(); !reflect.DeepEqual(got, want) {
					t.Errorf("journal %v; want %v", got, want)
				}
				time.Sleep(time.Minute) // an election left running would lead by now
				synctest.Wait()
				if app.Cluster().IsLeader() {
					t.Error("leading a minute after Stop")
				}
			})
		})
	}
}

// A3, W6: a callback that wants the application stopped calls Stop on a new goroutine and
// returns: Stop cancels fn's context, and goes on once fn has returned.
func TestA3StopFromACallbackOnANewGoroutine(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		resetJournal(t)
		app := newApp(t, `{"services": {"Registry": {"type": "MemoryStore"}, "cluster": {"type": "StoreClusterService"}}}`)
		app.SetLogger(discardLogger())
		var j journal
		stopped := make(chan error, 1)
		// fn may run before Start has returned (it runs on its own goroutine): the Stop waits
		// for Start, so that it is a Stop after Start rather than one during it (that one makes
		// Start fail, TestA3StopDuringStart).
		started := make(chan struct{})
		app.WhenLeader(func(ctx context.Context) error {
			j.add("fn")
			go func() {
				<-started
				stopped <- app.Stop(context.Background())
			}()
			<-ctx.Done()
			return nil
		}, func() { j.add("deregistered") })
		if err := app.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		close(started)
		if err := <-stopped; err != nil {
			t.Fatal(err)
		}
		if got, want := j.get(), []string{"fn", "deregistered"}; !reflect.DeepEqual(got, want) {
			t.Fatalf("calls %v; want %v", got, want)
		}
		if rec, err := app.Registry().Get(context.Background(), "cluster:leader"); err != nil || rec["holder"] != "" {
			t.Fatalf("record %v, %v; want released", rec, err)
		}
	})
}
