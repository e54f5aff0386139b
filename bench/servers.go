package main

import (
	"context"
	"errors"
	"fmt"
	"github.com/leasehold/leasehold/internal/storecluster"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"time"

	"go.etcd.io/etcd/server/v3/embed"

	"github.com/leasehold/leasehold/internal/cloudemu"
	"github.com/leasehold/leasehold/internal/proctest"
	"github.com/leasehold/leasehold/internal/testenv"
	"github.com/leasehold/leasehold/kubernetes/kubetest"
)

// errUnavailable marks a system whose server is not there: skipped, unless servers are
// required (LEASEHOLD_REQUIRE_SERVERS=1, or LEASEHOLD_REQUIRE_KUBE=1 for the API server).
var errUnavailable = errors.New("unavailable")

// system is one thing measured: leasehold over one backend, or an anchor.
type system struct {
	Name    string // as in the tables: "leasehold/postgres", "client-go", "etcd concurrency"
	Backend string // the name the --backends flag uses
	Kind    string // the worker kind
	Anchor  bool
	Env     []string `json:"-"` // the worker environment naming the server (it may hold a token)
}

// allBackends are the --backends names, in the order they run.
var allBackends = []string{"file", "sqlite", "postgres", "mysql", "redis", "redis-cluster", "nats", "etcd", "dynamodb", "s3", "gcs", "azblob", "zookeeper", "kubernetes", "client-go", "etcd-concurrency"}

// servers starts the servers the bench owns (an embedded etcd, a kube-apiserver) once, on
// first use, and finds the others (PostgreSQL, MariaDB, Redis, NATS) where internal/testenv
// says they are.
type servers struct {
	ctx   context.Context
	dir   string
	renew time.Duration // the bench's R: a store may take none so short (cloud.go)

	etcd     *embed.Etcd
	etcdAddr string
	etcdErr  error

	kube    *kubetest.Env
	kubeCA  string
	kubeErr error

	emulators []*cloudemu.Emulator // the cloud stores' (cloud.go)
	clouds    map[string]system    // the cloud stores' systems, by backend name

	zk    storecluster.Cluster // one ZooKeeper server (clusters.go)
	zkErr error
	rc    *storecluster.RedisShards // a Redis Cluster (clusters.go)
	rcErr error
}

func (s *servers) close() {
	if s.zk != nil {
		s.zk.Close()
	}
	if s.rc != nil {
		s.rc.Close()
	}
	for _, e := range s.emulators {
		e.Close()
	}
	if s.kube != nil {
		s.kube.Stop()
	}
	if s.etcd != nil {
		s.etcd.Close()
	}
}

// system returns the system of a --backends name, or an error wrapping errUnavailable.
func (s *servers) system(name string) (system, error) {
	lh := func(env ...string) (system, error) {
		return system{Name: "leasehold/" + name, Backend: name, Kind: kindLeasehold, Env: env}, nil
	}
	switch name {
	case "file":
		return lh(proctest.EnvURL + "=file://" + filepath.ToSlash(filepath.Join(s.dir, "registry.json")))
	case "sqlite":
		return lh(proctest.EnvURL + "=sqlite://" + filepath.ToSlash(filepath.Join(s.dir, "registry.db")))
	case "postgres", "mysql", "redis", "nats":
		srv := map[string]testenv.Server{"postgres": testenv.Postgres, "mysql": testenv.MySQL, "redis": testenv.Redis, "nats": testenv.NATS}[name]
		u, err := serverURL(srv)
		if err != nil {
			return system{}, err
		}
		return lh(proctest.EnvURL + "=" + u)
	case "etcd", "etcd-concurrency":
		if err := s.startEtcd(); err != nil {
			return system{}, err
		}
		if name == "etcd" {
			return lh(proctest.EnvURL + "=etcd://" + s.etcdAddr)
		}
		return system{Name: "etcd concurrency", Backend: name, Kind: kindEtcd, Anchor: true, Env: []string{proctest.EnvURL + "=" + s.etcdAddr}}, nil
	case "dynamodb", "s3", "gcs", "azblob":
		return s.cloud(name)
	case "zookeeper":
		return s.zookeeper()
	case "redis-cluster":
		return s.redisCluster()
	case "kubernetes", "client-go":
		if err := s.startKube(); err != nil {
			return system{}, err
		}
		env := []string{envKubeHost + "=" + s.kube.API.Host, envKubeCA + "=" + s.kubeCA, envKubeTok + "=" + s.kube.API.AdminToken, envKubeNS + "=default"}
		if name == "kubernetes" {
			return lh(env...)
		}
		return system{Name: "client-go", Backend: name, Kind: kindClientGo, Anchor: true, Env: env}, nil
	}
	return system{}, fmt.Errorf("--backends: unknown backend %q (known: %v)", name, allBackends)
}

// serverURL finds one of the project's test servers: at the URL in its environment variable,
// or at its default address, checking that it accepts connections.
func serverURL(s testenv.Server) (string, error) {
	raw := s.DefaultURL
	if v := os.Getenv(s.EnvVar); v != "" {
		raw = v
	}
	u, err := url.Parse(raw)
	if err != nil {
		// The URL may hold a password: name the variable, not the value.
		return "", fmt.Errorf("%s URL (%s or the default) does not parse", s.Name, s.EnvVar)
	}
	c, err := net.DialTimeout("tcp", u.Host, 2*time.Second)
	if err != nil {
		err = fmt.Errorf("%w: %s is not reachable at %s (%v); start it with scripts/services, or set %s", errUnavailable, s.Name, u.Host, err, s.EnvVar)
		if testenv.Required() {
			err = fmt.Errorf("%v [LEASEHOLD_REQUIRE_SERVERS=1]", err.Error())
		}
		return "", err
	}
	c.Close()
	return raw, nil
}

// startEtcd starts an embedded etcd server on loopback ports, as store/etcd's tests do, once.
// A heartbeat of 50ms (election 500ms) lowers the server's smallest lease TTL to 1s, so that
// the etcd anchor's session TTL can be L for every whole-second L.
func (s *servers) startEtcd() error {
	if s.etcd != nil || s.etcdErr != nil {
		return s.etcdErr
	}
	s.etcdErr = func() error {
		cfg := embed.NewConfig()
		cfg.Dir = filepath.Join(s.dir, "etcd")
		cfg.LogLevel = "fatal"
		cfg.LogOutputs = []string{"stderr"}
		cfg.TickMs, cfg.ElectionMs = 50, 500
		client, err := freeURL()
		if err != nil {
			return err
		}
		peer, err := freeURL()
		if err != nil {
			return err
		}
		cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{client}, []url.URL{client}
		cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{peer}, []url.URL{peer}
		cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
		e, err := embed.StartEtcd(cfg)
		if err != nil {
			return fmt.Errorf("embedded etcd: %w", err)
		}
		t := time.NewTimer(60 * time.Second)
		defer t.Stop()
		select {
		case <-e.Server.ReadyNotify():
		case err := <-e.Err():
			e.Close()
			return fmt.Errorf("embedded etcd: %w", err)
		case <-s.ctx.Done():
			e.Close()
			return s.ctx.Err()
		case <-t.C:
			e.Close()
			return errors.New("embedded etcd: not ready after 60s")
		}
		s.etcd, s.etcdAddr = e, client.Host
		return nil
	}()
	return s.etcdErr
}

func freeURL() (url.URL, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return url.URL{}, fmt.Errorf("embedded etcd: find a free port: %w", err)
	}
	defer l.Close()
	return url.URL{Scheme: "http", Host: l.Addr().String()}, nil
}

// startKube starts a kube-apiserver and its etcd from the binaries of scripts/kube-binaries
// (kubernetes/kubetest, the kubernetes module's test control plane), once.
func (s *servers) startKube() error {
	if s.kube != nil || s.kubeErr != nil {
		return s.kubeErr
	}
	s.kubeErr = func() error {
		bin, err := kubetest.FindBinaries()
		if err != nil {
			if os.Getenv(kubetest.RequireEnv) == "1" {
				return fmt.Errorf("%s=1 and %v", kubetest.RequireEnv, err)
			}
			return fmt.Errorf("%w: %v", errUnavailable, err)
		}
		dir := filepath.Join(s.dir, "kube")
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return err
		}
		env, err := kubetest.Start(dir, bin)
		if err != nil {
			return fmt.Errorf("kube-apiserver: %w", err)
		}
		s.kube = env
		s.kubeCA = filepath.Join(dir, "bench-ca.pem")
		return os.WriteFile(s.kubeCA, env.API.CAData, 0o600)
	}()
	return s.kubeErr
}
