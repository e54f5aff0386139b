package campaign

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/leasehold/leasehold/internal/storecluster"
	"github.com/leasehold/leasehold/internal/testenv"
	"github.com/leasehold/leasehold/kubernetes/kubetest"
)

// Server is a backend ready for a campaign.
type Server struct {
	// URL is the store URL the workers open. When Addr is set, each instance opens it with its
	// host replaced by the address of a proxy of its own in front of Addr.
	URL string
	// Addr is the server's host:port on loopback, or "" for a backend without a network (the
	// file and SQLite stores): the proxy faults (latency, reset, partition, outage) do not
	// apply to it.
	Addr string
	// Close stops what the backend started for the campaign; nil when it started nothing.
	Close func() error
	// Cluster, when set, is the store as a cluster of server processes (RegisterClusterBackend):
	// URL names its members, each instance reaches every member through a proxy of its own,
	// and the members' faults apply. Addr is then "".
	Cluster storecluster.Cluster
	// Direct: the instances reach the cluster's members directly, not through proxies
	// (storecluster.Direct): the proxy faults do not apply.
	Direct bool
	// Via, when set, returns the URL an instance opens to reach Addr through the proxy at
	// proxyAddr, and the environment it needs for that (a store whose URL names a bucket or
	// table, its server in a parameter or in the environment, as the cloud stores'). Nil:
	// the URL's host is replaced by proxyAddr.
	Via func(proxyAddr string) (url string, env []string)
	// Env is the environment the campaign and every instance open the store with (an
	// emulator's credentials, say), added to the campaign's own before it opens the store.
	Env []string
}

// network reports whether the backend is reached over the network, through the proxies.
func (s Server) network() bool { return s.Addr != "" || s.Cluster != nil && !s.Direct }

// Backend finds or starts a server for one campaign. dir is a temporary directory of the
// campaign's own, removed after it. An error wrapping ErrUnavailable means the server is not
// there (not installed, not running): the CI mode skips it unless servers are required.
type Backend func(ctx context.Context, dir string) (Server, error)

// ErrUnavailable marks a backend whose server cannot be reached.
var ErrUnavailable = errors.New("campaign: backend unavailable")

// Required reports whether the CI mode must fail, not skip, when the backend is unavailable:
// LEASEHOLD_REQUIRE_KUBE=1 for Kubernetes (as the kubernetes module's tests), else
// LEASEHOLD_REQUIRE_SERVERS=1.
func Required(backend string) bool {
	if backend == "kubernetes" {
		return os.Getenv(kubetest.RequireEnv) == "1"
	}
	return testenv.Required()
}

var (
	backendsMu sync.Mutex
	backends   = map[string]Backend{}
)

// RegisterBackend makes a backend available under name (the --backend flag). It panics on a
// duplicate name. The Kubernetes backend registers itself here from a file of its own, with a
// URL scheme its worker side handles through RegisterLockOpener.
func RegisterBackend(name string, b Backend) {
	backendsMu.Lock()
	defer backendsMu.Unlock()
	if _, dup := backends[name]; dup {
		panic("campaign: backend " + name + " registered twice")
	}
	backends[name] = b
}

// Backends returns the registered backends' names, sorted.
func Backends() []string {
	backendsMu.Lock()
	defer backendsMu.Unlock()
	var names []string
	for n := range backends {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

func lookupBackend(name string) Backend {
	backendsMu.Lock()
	defer backendsMu.Unlock()
	return backends[name]
}

func init() {
	RegisterBackend("file", func(_ context.Context, dir string) (Server, error) {
		return Server{URL: "file://" + filepath.ToSlash(filepath.Join(dir, "registry.json"))}, nil
	})
	RegisterBackend("sqlite", func(_ context.Context, dir string) (Server, error) {
		return Server{URL: "sqlite://" + filepath.ToSlash(filepath.Join(dir, "registry.db"))}, nil
	})
	for name, s := range map[string]testenv.Server{
		"postgres": testenv.Postgres,
		"mysql":    testenv.MySQL,
		"redis":    testenv.Redis,
		"nats":     testenv.NATS,
	} {
		RegisterBackend(name, func(context.Context, string) (Server, error) { return serverOf(s) })
	}
}

// serverOf finds one of the project's test servers where internal/testenv says it is: at the
// URL in its environment variable, or at its default address.
func serverOf(s testenv.Server) (Server, error) {
	raw := s.DefaultURL
	if v := os.Getenv(s.EnvVar); v != "" {
		raw = v
	}
	u, err := url.Parse(raw)
	if err != nil {
		// The URL may hold a password: name the variable, not the value.
		return Server{}, fmt.Errorf("campaign: %s URL (%s or the default) does not parse", s.Name, s.EnvVar)
	}
	addr := u.Host
	if _, _, err := net.SplitHostPort(addr); err != nil {
		return Server{}, fmt.Errorf("campaign: %s URL (%s): the host %q needs a single host:port for the proxies", s.Name, s.EnvVar, addr)
	}
	c, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		return Server{}, fmt.Errorf("%w: %s is not reachable at %s (%v); start it with scripts/services, or set %s",
			ErrUnavailable, s.Name, addr, err, s.EnvVar)
	}
	c.Close()
	return Server{URL: raw, Addr: addr}, nil
}

// instanceURL returns the URL an instance opens: srv.URL through the proxy at proxyAddr.
func instanceURL(srv Server, proxyAddr string) (string, error) {
	if proxyAddr == "" {
		return srv.URL, nil
	}
	if srv.Via != nil {
		u, _ := srv.Via(proxyAddr)
		return u, nil
	}
	u, err := url.Parse(srv.URL)
	if err != nil {
		return "", errors.New("campaign: the backend's URL does not parse")
	}
	u.Host = proxyAddr
	return u.String(), nil
}
