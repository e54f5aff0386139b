package kubernetes

import (
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/cluster"
)

// TestInvalidLeaseName: a leaseName that is not a DNS-1123 subdomain fails at start with an
// error naming the service, the parameter and the rule, before any request.
func TestInvalidLeaseName(t *testing.T) {
	for _, name := range []string{"Leader", "my_lease", "-leader", strings.Repeat("a", 254)} {
		_, err := start(t, fmt.Sprintf(`"leaseName": %q, "config": "/nonexistent/kubeconfig"`, name), nil, nil)
		if err == nil {
			t.Fatalf("leaseName %q accepted", name)
		}
		for _, want := range []string{`"cluster"`, `parameter "leaseName"`, "DNS-1123 subdomain"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("leaseName %q: error %q does not mention %s", name, err, want)
			}
		}
	}
}

// TestServiceTypeNames: A2, the type is known with and without the Webda/ namespace, and the
// K1 parameters are Webda's plus namespace, config, context and timeout.
func TestServiceTypeNames(t *testing.T) {
	for _, typ := range []string{"Webda/KubernetesClusterService", "KubernetesClusterService"} {
		cfg, err := leasehold.ParseConfig([]byte(`{"services": {"cluster": {"type": "` + typ + `",
			"leaseDuration": "2s", "renewInterval": 500, "instanceId": "x", "leaseName": "l",
			"namespace": "ns", "config": "/k", "context": "c", "timeout": "1s"}}}`))
		if err != nil {
			t.Fatal(err)
		}
		app, err := leasehold.New(cfg)
		if err != nil {
			t.Fatalf("type %s: %v", typ, err)
		}
		c, ok := app.Cluster().(*ClusterService)
		if !ok {
			t.Fatalf("type %s made a %T", typ, app.Cluster())
		}
		if c.Namespace != "ns" || c.Config != "/k" || c.Context != "c" || c.Timeout.D() != time.Second || c.LeaseDuration.D() != 2*time.Second {
			t.Fatalf("parameters not decoded: %+v", c)
		}
	}
	cfg, _ := leasehold.ParseConfig([]byte(`{"services": {"cluster": {"type": "KubernetesClusterService", "kubeconfig": "/k"}}}`))
	if _, err := leasehold.New(cfg); err == nil || !strings.Contains(err.Error(), `"kubeconfig"`) {
		t.Fatalf("unknown parameter: %v", err)
	}
}

// TestRequestTimeout: timeout defaults to L - R and never exceeds it (E3: a longer attempt has
// failed anyway); a negative one is refused.
func TestRequestTimeout(t *testing.T) {
	for _, c := range []struct {
		l, r, timeout, want time.Duration
	}{
		{0, 0, 0, cluster.DefaultLeaseDuration - cluster.DefaultRenewInterval},
		{2 * time.Second, 500 * time.Millisecond, 0, 1500 * time.Millisecond},
		{2 * time.Second, 500 * time.Millisecond, time.Second, time.Second},
		{2 * time.Second, 500 * time.Millisecond, time.Minute, 1500 * time.Millisecond},
	} {
		s := &ClusterService{ElectionService: leasehold.ElectionService{LeaseDuration: leasehold.Duration(c.l), RenewInterval: leasehold.Duration(c.r)}, Timeout: leasehold.Duration(c.timeout)}
		if got, err := s.requestTimeout(); err != nil || got != c.want {
			t.Errorf("L %v, R %v, timeout %v: %v, %v; want %v", c.l, c.r, c.timeout, got, err, c.want)
		}
	}
	s := &ClusterService{Timeout: leasehold.Duration(-time.Second)}
	if _, err := s.requestTimeout(); err == nil || !strings.Contains(err.Error(), `"timeout"`) {
		t.Fatalf("negative timeout: %v", err)
	}
}

// TestKubeconfigContexts: config is a kubeconfig path and context picks one of its contexts.
// The kubeconfig has two: "elector" (the restricted user) and "stranger" (an unknown token),
// the current one. With context "elector" the instance leads; without context the current
// one is used and the API server refuses it; an unknown context is an error at start naming
// the parameter.
func TestKubeconfigContexts(t *testing.T) {
	s := api(t)
	ns := grant(t, s, "get", "create", "update")
	path := filepath.Join(t.TempDir(), "kubeconfig")
	kubeconfig := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: kubetest
  cluster:
    server: %s
    certificate-authority-data: %s
users:
- name: elector
  user:
    token: %s
- name: stranger
  user:
    token: not-a-valid-token
contexts:
- name: elector
  context: {cluster: kubetest, user: elector}
- name: stranger
  context: {cluster: kubetest, user: stranger}
current-context: stranger
`, s.Host, base64.StdEncoding.EncodeToString(s.CAData), s.UserToken)
	if err := os.WriteFile(path, []byte(kubeconfig), 0o600); err != nil {
		t.Fatal(err)
	}
	params := func(id, ctx string) string {
		p := fmt.Sprintf(`"config": %q, "namespace": %q, "instanceId": %q, "leaseDuration": 2000, "renewInterval": 500`, path, ns, id)
		if ctx != "" {
			p += fmt.Sprintf(`, "context": %q`, ctx)
		}
		return p
	}

	ev := newEvents()
	if _, err := start(t, params("elector", "elector"), ev, nil); err != nil {
		t.Fatal(err)
	}
	var from int
	ev.wait(t, &from, 10*time.Second, `leadership with context "elector"`, kindOf(cluster.BecameLeader, "elector"))

	strangers := newEvents()
	if _, err := start(t, params("stranger", ""), strangers, nil); err != nil {
		t.Fatal(err)
	}
	from = 0
	failed := strangers.wait(t, &from, 10*time.Second, "a failed attempt with the current context", kind(cluster.AttemptFailed))
	if !apierrors.IsUnauthorized(failed.Err) {
		t.Fatalf("with the current context %q: %v, want 401 Unauthorized", "stranger", failed.Err)
	}
	if strings.Contains(failed.Err.Error(), "not-a-valid-token") || strings.Contains(failed.Err.Error(), s.UserToken) {
		t.Fatalf("a token appears in the error: %v", failed.Err)
	}

	_, err := start(t, params("lost", "no-such-context"), nil, nil)
	if err == nil || !strings.Contains(err.Error(), `parameter "context"`) || !strings.Contains(err.Error(), "no-such-context") {
		t.Fatalf("unknown context: %v", err)
	}

	// Without config, the default loading rules read KUBECONFIG; context still picks one.
	t.Setenv("KUBECONFIG", path)
	fromEnv := newEvents()
	in, err := start(t, fmt.Sprintf(`"context": "elector", "namespace": %q, "instanceId": "from-env", "leaseName": "from-env", "leaseDuration": 2000, "renewInterval": 500`, ns), fromEnv, nil)
	if err != nil {
		t.Fatal(err)
	}
	from = 0
	fromEnv.wait(t, &from, 10*time.Second, "leadership with KUBECONFIG", kind(cluster.BecameLeader))
	if in.svc.Config != "" {
		t.Fatal("the config parameter was set")
	}
}

// TestInClusterConfiguration: in a pod (KUBERNETES_SERVICE_HOST set) without config or
// context, the service uses the in-cluster configuration, here missing its token, and says so;
// an explicit config wins over it.
func TestInClusterConfiguration(t *testing.T) {
	if _, err := os.Stat("/var/run/secrets/kubernetes.io/serviceaccount/token"); err == nil {
		t.Skip("this test runs in a pod: its in-cluster configuration is complete")
	}
	t.Setenv("KUBERNETES_SERVICE_HOST", "127.0.0.1")
	t.Setenv("KUBERNETES_SERVICE_PORT", "6443")
	_, err := start(t, `"namespace": "ns"`, nil, nil)
	if err == nil || !strings.Contains(err.Error(), "in-cluster configuration") {
		t.Fatalf("in a pod without a token: %v, want an in-cluster configuration error", err)
	}
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(path, []byte("apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: \"https://127.0.0.1:1\"}}]\nusers: [{name: u, user: {token: t}}]\ncontexts: [{name: x, context: {cluster: c, user: u}}]\ncurrent-context: x\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := start(t, fmt.Sprintf(`"namespace": "ns", "config": %q`, path), nil, nil); err != nil {
		t.Fatalf("with config in a pod: %v", err)
	}
}

// TestMissingCreatePermission: with a Role lacking "create" on leases, the attempts fail (the
// Lease cannot be created), never lead, and the error says which permission is missing and
// what the service needs.
func TestMissingCreatePermission(t *testing.T) {
	s := api(t)
	ns := grant(t, s, "get", "update")
	ev := newEvents()
	startUser(t, s, ns, "pod-a", ev)
	var from int
	failed := ev.wait(t, &from, 10*time.Second, "a failed attempt", kind(cluster.AttemptFailed))
	msg := failed.Err.Error()
	for _, want := range []string{`cannot create resource "leases"`, `"coordination.k8s.io"`, ns, "get, create and update"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error %q does not say %s", msg, want)
		}
	}
	if !apierrors.IsForbidden(failed.Err) || errors.Is(failed.Err, cluster.ErrConflict) {
		t.Errorf("error %v: want a 403 Forbidden, not a lost race", failed.Err)
	}
	for _, e := range ev.snapshot() {
		if e.Kind == cluster.BecameLeader {
			t.Fatalf("became the leader without the create permission: %+v", e)
		}
	}
}
