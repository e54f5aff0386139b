package kubernetes

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"time"

	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/apimachinery/pkg/util/validation"
	k8s "k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/cluster"
)

// ServiceType is the name configurations use for [ClusterService].
const ServiceType = "Webda/KubernetesClusterService"

func init() {
	leasehold.RegisterServiceType(ServiceType, func() leasehold.Service { return new(ClusterService) })
}

// ClusterService is the service type Webda/KubernetesClusterService: leader election on the
// coordination.k8s.io/v1 Lease named leaseName (K1), visible with `kubectl get lease`:
//
//	{"services": {"cluster": {"type": "Webda/KubernetesClusterService", "leaseName": "my-app"}}}
//
// Parameters, beside the election's leaseDuration, renewInterval, instanceId and leaseName
// (a DNS-1123 subdomain, as every Kubernetes object name):
//   - namespace: the Lease's namespace; default POD_NAMESPACE, else the pod's service account
//     namespace, else "default".
//   - config: a kubeconfig path; default in-cluster configuration in a pod, else KUBECONFIG or
//     ~/.kube/config.
//   - context: the kubeconfig context; default its current context.
//   - timeout: bounds each request to the API server; default and maximum
//     leaseDuration - renewInterval (an attempt taking longer is a failure anyway, E3).
//
// It needs get, create and update on leases.coordination.k8s.io in that namespace, nothing
// else (see examples/kubernetes for a Role).
type ClusterService struct {
	leasehold.ElectionService

	Namespace string             `json:"namespace"`
	Config    string             `json:"config"`
	Context   string             `json:"context"`
	Timeout   leasehold.Duration `json:"timeout"`

	// Observer, when set before Start, receives the election's events (see cluster.Event).
	Observer func(cluster.Event) `json:"-"`
	// RESTConfig, when set before Start, is the client configuration to use instead of
	// config and context (for programs that already have one).
	RESTConfig *rest.Config `json:"-"`

	// saNamespaceFile replaces ServiceAccountNamespaceFile in tests.
	saNamespaceFile string
	namespace       string
	httpClient      *http.Client
}

var (
	_ leasehold.LockOpener = (*ClusterService)(nil)
	_ leasehold.Service    = (*ClusterService)(nil)
	_ leasehold.Stopper    = (*ClusterService)(nil)
	_ cluster.Cluster      = (*ClusterService)(nil)
)

// Init validates the parameters, builds the client and starts the election on the Lease.
// It makes no request before the first attempt: an unreachable API server or a missing
// permission shows in the attempts' errors (logged, and in AttemptFailed events).
func (s *ClusterService) Init(ctx context.Context, app *leasehold.Application) error {
	lock, err := s.OpenLock(ctx, app)
	if err != nil {
		return err
	}
	return s.StartElection(ctx, lock, app.Logger(), s.Observer)
}

// OpenLock builds the client and returns the Lock over the Lease, without starting an
// election: Init uses it, and so do tools that only read the Lease (leasehold status). It
// implements leasehold.LockOpener.
func (s *ClusterService) OpenLock(ctx context.Context, app *leasehold.Application) (cluster.Lock, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	name := s.Lease()
	if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
		return nil, fmt.Errorf("parameter \"leaseName\": %q is not a valid Lease name (a Kubernetes object name must be a DNS-1123 subdomain): %s", name, strings.Join(errs, "; "))
	}
	s.LeaseName = name
	timeout, err := s.requestTimeout()
	if err != nil {
		return nil, err
	}
	saFile := s.saNamespaceFile
	if saFile == "" {
		saFile = ServiceAccountNamespaceFile
	}
	ns, nsSource, err := resolveNamespace(s.Namespace, os.Getenv, saFile)
	if err != nil {
		return nil, fmt.Errorf("namespace: %w", err)
	}
	cfg, cfgSource := s.RESTConfig, "RESTConfig"
	if cfg == nil {
		if cfg, cfgSource, err = restConfig(s.Config, s.Context); err != nil {
			return nil, err
		}
	}
	cfg = rest.CopyConfig(cfg)
	if cfg.QPS == 0 && cfg.RateLimiter == nil {
		// client-go's default limit, 5 requests a second (burst 10), is below what N holders or
		// K partitions need at a short renew interval (one attempt per Lease per R, and a
		// partitioned election's roster): its waits would fail attempts (E3). Each Elector
		// bounds its own requests, so the limit is only a guard against a runaway client.
		cfg.QPS, cfg.Burst = clientQPS, clientBurst
	}
	if cfg.UserAgent == "" {
		cfg.UserAgent = "leasehold/" + name
	}
	httpClient, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("kubernetes client (%s): %w", cfgSource, err)
	}
	client, err := k8s.NewForConfigAndClient(cfg, httpClient)
	if err != nil {
		return nil, fmt.Errorf("kubernetes client (%s): %w", cfgSource, err)
	}
	s.httpClient = httpClient
	s.namespace = ns
	log := slog.Default()
	if app != nil {
		log = app.Logger()
	}
	log.Info("kubernetes cluster service", "lease", ns+"/"+name, "namespaceFrom", string(nsSource),
		"client", cfgSource, "server", cfg.Host, "instance", s.InstanceID())
	return NewLeaseLock(client.CoordinationV1(), ns, timeout), nil
}

// requestTimeout is the timeout parameter, bounded by L - R (E3).
func (s *ClusterService) requestTimeout() (time.Duration, error) {
	l, r, err := s.Timing()
	if err != nil {
		return 0, err
	}
	t := s.Timeout.D()
	if t < 0 {
		return 0, fmt.Errorf("parameter \"timeout\" (%v) must not be negative", t)
	}
	if t == 0 || t > l-r {
		t = l - r
	}
	return t, nil
}

// Stop ends the election (E7: leadership ends, deregistered callbacks run, the Lease is
// released), then closes the client's idle connections, so that none of their goroutines
// outlives the service.
func (s *ClusterService) Stop(ctx context.Context) error {
	err := s.ElectionService.Stop(ctx)
	if s.httpClient != nil {
		// client-go wraps its transport (authentication, user agent): this reaches the
		// http.Transport under the wrappers, which http.Client.CloseIdleConnections does not.
		utilnet.CloseIdleConnectionsFor(s.httpClient.Transport)
	}
	return err
}

// LeaseNamespace returns the namespace of the Lease, resolved by Init ("" before).
func (s *ClusterService) LeaseNamespace() string { return s.namespace }

// String names the Lease, for logs.
func (s *ClusterService) String() string {
	return fmt.Sprintf("%s %s/%s", ServiceType, s.namespace, s.LeaseName)
}

// The client-side rate limit of the cluster service's client when its configuration sets none.
const (
	clientQPS   = 100
	clientBurst = 200
)
