package kubernetes

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8s "k8s.io/client-go/kubernetes"

	"github.com/leasehold/leasehold/cluster"
)

// TestNamespaceResolution: K1's order is the parameter, else POD_NAMESPACE, else the service
// account's namespace file, else "default"; each source set or missing.
func TestNamespaceResolution(t *testing.T) {
	dir := t.TempDir()
	saFile := filepath.Join(dir, "namespace")
	if err := os.WriteFile(saFile, []byte("from-file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "missing")
	env := func(v string) func(string) string {
		return func(k string) string {
			if k == "POD_NAMESPACE" {
				return v
			}
			return ""
		}
	}
	for _, c := range []struct {
		name, param, env, file string
		want                   string
		src                    namespaceSource
	}{
		{"all set: the parameter wins", "from-param", "from-env", saFile, "from-param", fromParameter},
		{"no parameter: POD_NAMESPACE", "", "from-env", saFile, "from-env", fromEnvironment},
		{"neither: the service account file", "", "", saFile, "from-file", fromServiceAccount},
		{"nothing: default", "", "", missing, "default", fromDefault},
		{"parameter without the others", "from-param", "", missing, "from-param", fromParameter},
		{"POD_NAMESPACE without a file", "", "from-env", missing, "from-env", fromEnvironment},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, src, err := resolveNamespace(c.param, env(c.env), c.file)
			if err != nil || got != c.want || src != c.src {
				t.Fatalf("resolveNamespace = %q, %s, %v; want %q from %s", got, src, err, c.want, c.src)
			}
		})
	}
}

// TestNamespaceErrors: a bad value is an error naming where it came from, never a silent
// fall-through to the next source.
func TestNamespaceErrors(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(dir, "bad")
	if err := os.WriteFile(bad, []byte("Not_A_Namespace"), 0o600); err != nil {
		t.Fatal(err)
	}
	noenv := func(string) string { return "" }
	for _, c := range []struct {
		name, param string
		getenv      func(string) string
		file        string
		want        []string
	}{
		{"bad parameter", "Bad_NS", noenv, empty, []string{`parameter "namespace"`, "Bad_NS"}},
		{"bad POD_NAMESPACE", "", func(string) string { return "bad.ns" }, empty, []string{"POD_NAMESPACE", "bad.ns"}},
		{"empty file", "", noenv, empty, []string{empty, "empty"}},
		{"bad file", "", noenv, bad, []string{bad, "Not_A_Namespace"}},
		{"unreadable file (a directory)", "", noenv, dir, []string{"namespace file"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, _, err := resolveNamespace(c.param, c.getenv, c.file)
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
}

// TestNamespaceFromServiceAccountFile: without the parameter and POD_NAMESPACE, the service
// puts its Lease in the namespace read from the (injected) service account file.
func TestNamespaceFromServiceAccountFile(t *testing.T) {
	s := api(t)
	ns := grant(t, s, "get", "create", "update")
	t.Setenv("POD_NAMESPACE", "")
	saFile := filepath.Join(t.TempDir(), "namespace")
	if err := os.WriteFile(saFile, []byte(ns), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, _ := userConfig(s)
	ev := newEvents()
	in, err := start(t, `"leaseName": "from-sa-file", "instanceId": "pod-a", "leaseDuration": 2000, "renewInterval": 500`, ev,
		func(c *ClusterService) { c.RESTConfig = cfg; c.saNamespaceFile = saFile })
	if err != nil {
		t.Fatal(err)
	}
	var from int
	ev.wait(t, &from, 10*time.Second, "leadership", kind(cluster.BecameLeader))
	if got := in.svc.LeaseNamespace(); got != ns {
		t.Fatalf("LeaseNamespace() = %q, want %q", got, ns)
	}
	admin, err := k8s.NewForConfig(s.Config(s.AdminToken))
	if err != nil {
		t.Fatal(err)
	}
	lease, err := admin.CoordinationV1().Leases(ns).Get(context.Background(), "from-sa-file", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if *lease.Spec.HolderIdentity != "pod-a" {
		t.Fatalf("holderIdentity %q, want pod-a", *lease.Spec.HolderIdentity)
	}
}
