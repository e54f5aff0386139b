package campaign

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"path/filepath"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
)

// The etcd backend is a real etcd server embedded in the runner, on loopback ports, with its
// data in the campaign's temporary directory: nothing to install.
func init() {
	RegisterBackend("etcd", startEtcd)
}

func startEtcd(ctx context.Context, dir string) (Server, error) {
	cfg := embed.NewConfig()
	cfg.Dir = filepath.Join(dir, "etcd")
	cfg.LogLevel = "fatal" // it logs its own shutdown as errors; StartEtcd returns what matters
	cfg.LogOutputs = []string{"stderr"}
	client, err := freeURL()
	if err != nil {
		return Server{}, err
	}
	peer, err := freeURL()
	if err != nil {
		return Server{}, err
	}
	cfg.ListenClientUrls = []url.URL{client}
	cfg.AdvertiseClientUrls = []url.URL{client}
	cfg.ListenPeerUrls = []url.URL{peer}
	cfg.AdvertisePeerUrls = []url.URL{peer}
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		return Server{}, fmt.Errorf("campaign: embedded etcd: %w", err)
	}
	t := time.NewTimer(60 * time.Second)
	defer t.Stop()
	select {
	case <-e.Server.ReadyNotify():
	case err := <-e.Err():
		e.Close()
		return Server{}, fmt.Errorf("campaign: embedded etcd: %w", err)
	case <-ctx.Done():
		e.Close()
		return Server{}, ctx.Err()
	case <-t.C:
		e.Close()
		return Server{}, fmt.Errorf("campaign: embedded etcd: not ready after 60s")
	}
	return Server{
		URL:   "etcd://" + client.Host,
		Addr:  client.Host,
		Close: func() error { e.Close(); return nil },
	}, nil
}

// freeURL returns an http URL on a loopback port that was free a moment ago.
func freeURL() (url.URL, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return url.URL{}, fmt.Errorf("campaign: embedded etcd: find a free port: %w", err)
	}
	defer l.Close()
	return url.URL{Scheme: "http", Host: l.Addr().String()}, nil
}
