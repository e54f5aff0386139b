package kubetest

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8s "k8s.io/client-go/kubernetes"
)

// RoleName names the Role (and RoleBinding) Grant creates, as in examples/kubernetes.
const RoleName = "leasehold-elector"

// Grant creates, as admin, the namespace ns, a Role allowing only verbs on
// leases.coordination.k8s.io in it, and a RoleBinding of that Role to UserName (see
// GrantRole). verbs must include "get", which the wait uses.
func (s *APIServer) Grant(ctx context.Context, ns string, verbs ...string) error {
	return s.GrantRole(ctx, ns, &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Name: RoleName},
		Rules: []rbacv1.PolicyRule{{
			APIGroups: []string{"coordination.k8s.io"},
			Resources: []string{"leases"},
			Verbs:     verbs,
		}},
	})
}

// GrantRole creates, as admin, the namespace ns, role in it and a RoleBinding of role to
// UserName, then waits until the API server's authorizer applies them (it reads RBAC objects
// through a cache). role must allow "get" on leases, which the wait uses.
func (s *APIServer) GrantRole(ctx context.Context, ns string, role *rbacv1.Role) error {
	admin, err := k8s.NewForConfig(s.Config(s.AdminToken))
	if err != nil {
		return err
	}
	_, err = admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("kubetest: create namespace %s: %w", ns, err)
	}
	role = role.DeepCopy()
	role.Namespace = ns
	if _, err := admin.RbacV1().Roles(ns).Create(ctx, role, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("kubetest: create Role %s/%s: %w", ns, role.Name, err)
	}
	binding := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: role.Name, Namespace: ns},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: role.Name},
		Subjects:   []rbacv1.Subject{{APIGroup: "rbac.authorization.k8s.io", Kind: "User", Name: UserName}},
	}
	if _, err := admin.RbacV1().RoleBindings(ns).Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("kubetest: create RoleBinding %s/%s: %w", ns, role.Name, err)
	}
	user, err := k8s.NewForConfig(s.Config(s.UserToken))
	if err != nil {
		return err
	}
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		// NotFound, not Forbidden: the user's permissions are in force.
		_, err := user.CoordinationV1().Leases(ns).Get(ctx, "kubetest-probe", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("kubetest: the Role in %s is not in force (last answer: %v): %w", ns, err, ctx.Err())
		case <-tick.C:
		}
	}
}
