package main

import (
	"context"
	"fmt"
	"os"
	"time"

	k8s "k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/leasehold/leasehold/cluster"
	"github.com/leasehold/leasehold/internal/proctest"
	"github.com/leasehold/leasehold/kubernetes"
	"github.com/leasehold/leasehold/store"
	// The store backends register their URL schemes with store.Open.
	_ "github.com/leasehold/leasehold/store/azblob"
	_ "github.com/leasehold/leasehold/store/dynamodb"
	_ "github.com/leasehold/leasehold/store/etcd"
	_ "github.com/leasehold/leasehold/store/file"
	_ "github.com/leasehold/leasehold/store/gcs"
	_ "github.com/leasehold/leasehold/store/memory"
	_ "github.com/leasehold/leasehold/store/mysql"
	_ "github.com/leasehold/leasehold/store/nats"
	_ "github.com/leasehold/leasehold/store/postgres"
	_ "github.com/leasehold/leasehold/store/redis"
	_ "github.com/leasehold/leasehold/store/s3"
	_ "github.com/leasehold/leasehold/store/sqlite"
	_ "github.com/leasehold/leasehold/store/zookeeper"
)

// openLock returns the lock a leasehold worker elects on: the Kubernetes Lease lock when the
// environment names an API server, else cluster.NewStoreLock over store.Open(url).
func openLock(ctx context.Context, w *proctest.Worker) (cluster.Lock, func(), error) {
	if host := os.Getenv(envKubeHost); host != "" {
		cfg, err := kubeConfig()
		if err != nil {
			return nil, nil, err
		}
		cs, err := k8s.NewForConfig(cfg)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", envKubeHost, err)
		}
		// Each request is bounded as the Webda/KubernetesClusterService bounds it by default:
		// by the attempt's own deadline (E3), L − R.
		return kubernetes.NewLeaseLock(cs.CoordinationV1(), os.Getenv(envKubeNS), w.LeaseDuration-w.RenewInterval), func() {}, nil
	}
	s, err := store.Open(ctx, w.URL)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", proctest.EnvURL, err)
	}
	return cluster.NewStoreLock(s), func() { _ = store.Close(s) }, nil
}

// kubeConfig is the client configuration of a Kubernetes worker (leasehold or client-go):
// the admin token of the bench's API server (the bench measures elections, not RBAC), with
// client-side rate limits high enough never to delay a lease request.
func kubeConfig() (*rest.Config, error) {
	ca, err := os.ReadFile(os.Getenv(envKubeCA))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", envKubeCA, err)
	}
	return &rest.Config{
		Host:            os.Getenv(envKubeHost),
		BearerToken:     os.Getenv(envKubeTok),
		TLSClientConfig: rest.TLSClientConfig{CAData: ca},
		QPS:             1000, Burst: 1000,
		Timeout: 30 * time.Second,
	}, nil
}
