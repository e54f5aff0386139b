package etcd

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"net/url"
	"os"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
)

// etcdAddr is the client address (host:port) of the etcd server TestMain starts for the whole
// package: a real etcd, embedded, on loopback ports, with its data in a temporary directory.
var etcdAddr string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "leasehold-etcd-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	e, err := startEtcd(dir)
	if err != nil {
		os.RemoveAll(dir)
		fmt.Fprintln(os.Stderr, "cannot start the embedded etcd:", err)
		os.Exit(1)
	}
	code := m.Run()
	e.Close()
	os.RemoveAll(dir)
	os.Exit(code)
}

func startEtcd(dir string) (*embed.Etcd, error) {
	cfg := embed.NewConfig()
	cfg.Dir = dir
	// At error level, the server logs its own shutdown ("server closed") as errors; StartEtcd
	// returns the errors that matter.
	cfg.LogLevel = "fatal"
	cfg.LogOutputs = []string{"stderr"}
	client, peer := freeURL(), freeURL()
	cfg.ListenClientUrls = []url.URL{client}
	cfg.AdvertiseClientUrls = []url.URL{client}
	cfg.ListenPeerUrls = []url.URL{peer}
	cfg.AdvertisePeerUrls = []url.URL{peer}
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		return nil, err
	}
	select {
	case <-e.Server.ReadyNotify():
	case err := <-e.Err():
		e.Close()
		return nil, err
	case <-time.After(60 * time.Second):
		e.Close()
		return nil, fmt.Errorf("not ready after 60s")
	}
	etcdAddr = client.Host
	return e, nil
}

// freeURL returns an http URL on a loopback port that was free a moment ago.
func freeURL() url.URL {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	defer l.Close()
	return url.URL{Scheme: "http", Host: l.Addr().String()}
}

// serverURL returns the embedded server's URL with a key prefix no other test uses.
func serverURL(t testing.TB) (string, string) {
	t.Helper()
	b := make([]byte, 6)
	rand.Read(b)
	prefix := "leasehold-test/" + hex.EncodeToString(b) + "/"
	return "etcd://" + etcdAddr + "?prefix=" + url.QueryEscape(prefix), prefix
}

// openTest opens a store with a fresh prefix, and removes every key under that prefix when the
// test ends.
func openTest(t testing.TB) *Store {
	t.Helper()
	raw, prefix := serverURL(t)
	return openCleaned(t, raw, prefix)
}

// openCleaned opens the store of raw, whose prefix is prefix, and when the test ends removes every key under it and
// closes the store: the one cleanup of openTest, TestFailover and TestLinearizable.
func openCleaned(t testing.TB, raw, prefix string) *Store {
	t.Helper()
	s, err := Open(t.Context(), raw)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if _, err := s.Client().Delete(ctx, prefix, clientv3.WithPrefix()); err != nil {
			t.Errorf("cleaning up %s: %v", prefix, err)
		}
		s.Close()
	})
	return s
}
