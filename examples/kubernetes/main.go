// Command kubernetes-example is the program of examples/kubernetes: run as three replicas of
// a Deployment, exactly one of them does the periodic work, elected on the Lease
// "leasehold-example" (Webda/KubernetesClusterService). Its configuration is the JSON file
// named by LEASEHOLD_CONFIG (a ConfigMap in the example), or the built-in one below.
package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/cluster"
	_ "github.com/leasehold/leasehold/kubernetes" // registers Webda/KubernetesClusterService
)

// defaultConfig elects on the Lease "leasehold-example" in the pod's namespace (POD_NAMESPACE,
// from the downward API), with Webda's default timing.
const defaultConfig = `{"services": {"cluster": {
	"type": "Webda/KubernetesClusterService",
	"leaseName": "leasehold-example",
	"leaseDuration": 15000,
	"renewInterval": 5000
}}}`

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "kubernetes-example:", err)
		os.Exit(1)
	}
}

func run() error {
	log := slog.New(slog.NewJSONHandler(os.Stdout, nil))
	data := []byte(defaultConfig)
	if path := os.Getenv("LEASEHOLD_CONFIG"); path != "" {
		var err error
		if data, err = os.ReadFile(path); err != nil {
			return err
		}
	}
	cfg, err := leasehold.ParseConfig(data)
	if err != nil {
		return err
	}
	app, err := leasehold.New(cfg)
	if err != nil {
		return err
	}
	app.SetLogger(log)
	// Kubernetes stops a pod with SIGTERM: Stop then releases the Lease, so another replica
	// leads within renewInterval instead of waiting for the lease to expire.
	ctx, cancel := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer cancel()
	if err := app.Start(ctx); err != nil {
		return err
	}
	app.WhenLeader(func(ctx context.Context) error {
		term, _ := cluster.TermOf(ctx)
		log.Info("leading", "instance", app.Cluster().InstanceID(), "term", term)
		tick := time.NewTicker(10 * time.Second)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return nil
			case <-tick.C:
				log.Info("working as the leader", "term", term)
			}
		}
	}, func() { log.Info("no longer leading", "instance", app.Cluster().InstanceID()) })
	<-ctx.Done()
	stopCtx, stop := context.WithTimeout(context.Background(), 10*time.Second)
	defer stop()
	return app.Stop(stopCtx)
}
