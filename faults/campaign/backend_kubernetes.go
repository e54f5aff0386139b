package campaign

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	utilnet "k8s.io/apimachinery/pkg/util/net"
	k8s "k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/leasehold/leasehold/cluster"
	"github.com/leasehold/leasehold/kubernetes"
	"github.com/leasehold/leasehold/kubernetes/kubetest"
)

// The Kubernetes backend is a real kube-apiserver (and its etcd), started for the campaign
// from the binaries of scripts/kube-binaries as the kubernetes module's tests start theirs.
// The workers elect on a coordination.k8s.io/v1 Lease (kubernetes.NewLeaseLock) as the
// restricted user, whose Role in the campaign's namespace allows get, create, update and
// watch on leases; each reaches the API server through its slot's proxy, so that the network
// faults apply.
//
// Without the binaries it is unavailable (ErrUnavailable); Required says whether that fails
// the CI mode (LEASEHOLD_REQUIRE_KUBE=1).
func init() {
	RegisterBackend("kubernetes", startKubernetes)
	RegisterLockOpener(kubeScheme, openKubernetesLock)
}

// kubeScheme is the scheme of the workers' URLs:
//
//	kubernetes://127.0.0.1:PORT/NAMESPACE?ca=CA_FILE&token=TOKEN_FILE
//
// The token is in a file, never in the URL.
const kubeScheme = "kubernetes"

// kubeNamespace is the namespace of the campaign's Leases.
const kubeNamespace = "leasehold-faults"

func startKubernetes(ctx context.Context, dir string) (Server, error) {
	bin, err := kubetest.FindBinaries()
	if err != nil {
		return Server{}, fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	kdir := filepath.Join(dir, "kube")
	if err := os.Mkdir(kdir, 0o700); err != nil {
		return Server{}, err
	}
	env, err := kubetest.Start(kdir, bin)
	if err != nil {
		return Server{}, fmt.Errorf("campaign: kube-apiserver: %w", err)
	}
	srv, err := kubeServer(ctx, dir, env)
	if err != nil {
		env.Stop()
		return Server{}, err
	}
	return srv, nil
}

func kubeServer(ctx context.Context, dir string, env *kubetest.Env) (Server, error) {
	api := env.API
	if err := api.Grant(ctx, kubeNamespace, "get", "create", "update", "watch"); err != nil {
		return Server{}, fmt.Errorf("campaign: kube-apiserver: %w", err)
	}
	ca, token := filepath.Join(dir, "kube-ca.pem"), filepath.Join(dir, "kube-token")
	if err := os.WriteFile(ca, api.CAData, 0o600); err != nil {
		return Server{}, err
	}
	if err := os.WriteFile(token, []byte(api.UserToken), 0o600); err != nil {
		return Server{}, err
	}
	u, err := url.Parse(api.Host)
	if err != nil {
		return Server{}, fmt.Errorf("campaign: kube-apiserver URL: %w", err)
	}
	q := url.Values{"ca": {ca}, "token": {token}}
	return Server{
		URL:   (&url.URL{Scheme: kubeScheme, Host: u.Host, Path: "/" + kubeNamespace, RawQuery: q.Encode()}).String(),
		Addr:  u.Host,
		Close: func() error { env.Stop(); return nil },
	}, nil
}

// openKubernetesLock is the workers' side: a Lease lock in the URL's namespace, over HTTPS to
// the URL's host (a proxy of the API server), as the user of the token file. The Elector bounds
// each attempt (E3), so the lock sets no timeout of its own.
func openKubernetesLock(_ context.Context, rawURL string) (cluster.Lock, io.Closer, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, nil, errors.New("campaign: the kubernetes URL does not parse")
	}
	ns := strings.Trim(u.Path, "/")
	q := u.Query()
	if ns == "" || q.Get("ca") == "" || q.Get("token") == "" {
		return nil, nil, fmt.Errorf("campaign: kubernetes URL: want %s://HOST:PORT/NAMESPACE?ca=FILE&token=FILE", kubeScheme)
	}
	ca, err := os.ReadFile(q.Get("ca"))
	if err != nil {
		return nil, nil, fmt.Errorf("campaign: kubernetes CA: %w", err)
	}
	token, err := os.ReadFile(q.Get("token"))
	if err != nil {
		return nil, nil, fmt.Errorf("campaign: kubernetes token: %w", err)
	}
	cfg := &rest.Config{
		Host:            "https://" + u.Host,
		BearerToken:     strings.TrimSpace(string(token)),
		TLSClientConfig: rest.TLSClientConfig{CAData: ca},
		UserAgent:       "leasehold-faults",
		// The election's reads and writes are few; client-go's default rate limit (5/s) would
		// queue them behind each other after an outage.
		QPS: 100, Burst: 100,
	}
	httpClient, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, nil, fmt.Errorf("campaign: kubernetes client: %w", err)
	}
	client, err := k8s.NewForConfigAndClient(cfg, httpClient)
	if err != nil {
		return nil, nil, fmt.Errorf("campaign: kubernetes client: %w", err)
	}
	closer := closerFunc(func() error { utilnet.CloseIdleConnectionsFor(httpClient.Transport); return nil })
	return kubernetes.NewLeaseLock(client.CoordinationV1(), ns, 0), closer, nil
}
