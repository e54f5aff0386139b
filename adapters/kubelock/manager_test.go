package kubelock_test

import (
	"context"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/leasehold/leasehold/adapters/kubelock"
	"github.com/leasehold/leasehold/kubernetes/kubetest"
)

// apiServer starts a kube-apiserver for the test, or skips it (fails it under
// LEASEHOLD_REQUIRE_KUBE=1) when scripts/kube-binaries has not built one.
func apiServer(t *testing.T) *rest.Config {
	t.Helper()
	bin, err := kubetest.FindBinaries()
	if err != nil {
		if os.Getenv(kubetest.RequireEnv) == "1" {
			t.Fatalf("%s=1 and %v", kubetest.RequireEnv, err)
		}
		t.Skipf("no Kubernetes API server: %v", err)
	}
	env, err := kubetest.Start(t.TempDir(), bin)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(env.Stop)
	return env.API.Config(env.API.AdminToken)
}

// Two controller-runtime Managers elect over a leasehold store, not a Lease: the runnable that
// needs leader election runs on one only; when that one stops without releasing, the other
// runs it, and never both at once.
func TestManagersElectOverStore(t *testing.T) {
	cfg := apiServer(t)
	ctrl.SetLogger(logr.Discard())
	st := openPostgres(t)
	name := uniqueName(t, st)
	ls := newLeads()
	stops := map[string]func(){}
	for _, id := range []string{"m1", "m2"} {
		stops[id] = startManager(t, cfg, newLock(t, st, name, id), ls)
	}
	i := ls.wait(t, 0, 60*time.Second)
	leader := ls.get(i)
	stopped := time.Now()
	stops[leader.id]()
	ls.waitEnd(t, i, 10*time.Second)
	i = ls.wait(t, i+1, 60*time.Second)
	next := ls.get(i)
	if next.id == leader.id {
		t.Fatalf("%s runs the runnable again after it stopped", next.id)
	}
	t.Logf("manager %s stopped (term %d); %s runs the runnable (term %d) %v later",
		leader.id, leader.term, next.id, next.term, next.start.Sub(stopped).Round(time.Millisecond))
	if n := len(ls.snapshot()); n != 2 {
		t.Errorf("%d leaderships, want 2", n)
	}
	ls.checkExclusive(t)
}

// startManager runs a Manager whose leader election uses lock, with a runnable that needs it
// and records when it runs; stop ends the Manager without a release and waits for Start to
// return.
func startManager(t *testing.T, cfg *rest.Config, kl *kubelock.Lock, ls *leads) (stop func()) {
	t.Helper()
	leaseDuration, renewDeadline, retryPeriod := testL, testRD, testRP
	mgr, err := manager.New(rest.CopyConfig(cfg), manager.Options{
		LeaderElection:                      true,
		LeaderElectionResourceLockInterface: kl,
		LeaseDuration:                       &leaseDuration,
		RenewDeadline:                       &renewDeadline,
		RetryPeriod:                         &retryPeriod,
		Metrics:                             metricsserver.Options{BindAddress: "0"},
	})
	if err != nil {
		t.Fatal(err)
	}
	err = mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		ls.started(ctx, kl.Identity(), kl)
		return nil
	}))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	var stopped bool
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("manager %s: %v", kl.Identity(), err)
		}
	}
	t.Cleanup(stop)
	return stop
}
