package kubernetes

import (
	"context"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/yaml"

	"github.com/leasehold/leasehold/cluster"
)

// exampleRole reads the Role of examples/kubernetes/rbac.yaml.
func exampleRole(t *testing.T) *rbacv1.Role {
	t.Helper()
	data, err := os.ReadFile("../examples/kubernetes/rbac.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, doc := range strings.Split(string(data), "\n---\n") {
		var role rbacv1.Role
		if err := yaml.UnmarshalStrict([]byte(doc), &role); err == nil && role.Kind == "Role" {
			return &role
		}
	}
	t.Fatal("examples/kubernetes/rbac.yaml has no Role")
	return nil
}

// TestExampleRoleIsMinimal: K1, the example's Role grants exactly get, create and update on
// leases.coordination.k8s.io, and nothing else.
func TestExampleRoleIsMinimal(t *testing.T) {
	role := exampleRole(t)
	if len(role.Rules) != 1 {
		t.Fatalf("the example Role has %d rules, want 1", len(role.Rules))
	}
	r := role.Rules[0]
	verbs := slices.Sorted(slices.Values(r.Verbs))
	if !slices.Equal(r.APIGroups, []string{"coordination.k8s.io"}) || !slices.Equal(r.Resources, []string{"leases"}) ||
		!slices.Equal(verbs, []string{"create", "get", "update"}) || len(r.ResourceNames) != 0 {
		t.Fatalf("the example Role's rule is %+v, want get, create, update on leases.coordination.k8s.io", r)
	}
}

// TestExampleRoleSuffices: bound to the restricted user, the example's Role is all an
// instance needs to lead.
func TestExampleRoleSuffices(t *testing.T) {
	s := api(t)
	ns := grant(t, s, "get") // a namespace of its own; the example Role is added beside
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	role := exampleRole(t)
	role.Name = "from-example"
	if err := s.GrantRole(ctx, ns, role); err != nil {
		t.Fatal(err)
	}
	ev := newEvents()
	startUser(t, s, ns, "pod-a", ev)
	var from int
	ev.wait(t, &from, 10*time.Second, "leadership under the example Role", kind(cluster.BecameLeader))
}
