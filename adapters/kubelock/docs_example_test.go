package kubelock_test

import (
	"context"

	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/leasehold/leasehold/adapters/kubelock"
	"github.com/leasehold/leasehold/store"
	_ "github.com/leasehold/leasehold/store/postgres" // registers postgres://
)

// The Go block of docs/integrations.md about controller-runtime is an excerpt of runManager,
// word for word (cmd/leasehold's TestDocsBlocks checks it): it compiles with this package's
// tests.

// runManager runs a controller-runtime Manager whose leader is elected over PostgreSQL.
func runManager(ctx context.Context, cfg *rest.Config, hostname string) error {
	st, err := store.Open(ctx, "postgres://app@db:5432/app")
	if err != nil {
		return err
	}
	defer store.Close(st)
	lock, err := kubelock.New(st, "my-controller", hostname)
	if err != nil {
		return err
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		LeaderElection: true, LeaderElectionResourceLockInterface: lock,
	})
	if err != nil {
		return err
	}
	return mgr.Start(ctx) // runs the leader-only Runnables while this process leads
}

// ExampleNew is compiled, not run: it needs an API server and a PostgreSQL server.
func ExampleNew() {
	_ = runManager(context.Background(), &rest.Config{Host: "https://127.0.0.1:6443"}, "host-1")
}
