package sidecar

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	v1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"

	"github.com/schedscope/schedscope/pkg/apis/schedscope/v1alpha1"
	"github.com/schedscope/schedscope/test/framework"
)

// caller is one identity of the tenant matrix.
type caller struct {
	name, token string
	// pods: may get and list pods in matrix-a; nodes: may list nodes.
	pods, nodes bool
}

// TestTenantMatrix asks every endpoint of the explain API, at the
// sidecar's own port and through the kube-apiserver's aggregator, as
// callers with pod rights in namespace matrix-a only (with and without the
// right to list nodes, both ServiceAccounts), a ServiceAccount with no
// rights, and an anonymous caller. Each answer's status must be the one the
// disclosure rule gives, and no answer may hold anything of namespace
// matrix-b (its name, its pods' names or UIDs) that the request did not
// name itself, nor, for a caller who may not list nodes, a node other than
// the pod's own.
func TestTenantMatrix(t *testing.T) {
	registerAPIService(t)
	ensureExplainReader(t)
	createNamespace(t, "matrix-a")
	createNamespace(t, "matrix-b")
	createNode(t, "mx-large", "8")
	createNode(t, "mx-tainted", "8", v1.Taint{Key: "matrix", Value: "b-only", Effect: v1.TaintEffectNoSchedule})
	createPod(t, "matrix-a", "a-web", "100m")
	createPod(t, "matrix-a", "a-huge", "64")
	bHidden := createPod(t, "matrix-b", "b-hidden", "100m")
	bHuge := createPod(t, "matrix-b", "b-huge", "64")
	waitForExplanation(t, "matrix-a", "a-web", "scheduled")
	waitForExplanation(t, "matrix-a", "a-huge", "unschedulable")
	waitForExplanation(t, "matrix-b", "b-hidden", "scheduled")
	waitForExplanation(t, "matrix-b", "b-huge", "unschedulable")

	callers := []caller{
		{name: "pods in A", token: serviceAccount(t, "matrix-a", "pods-reader", true, false), pods: true},
		{name: "pods in A and nodes", token: serviceAccount(t, "matrix-a", "node-reader", true, true), pods: true, nodes: true},
		{name: "no rights", token: serviceAccount(t, "matrix-a", "nobody", false, false)},
		{name: "anonymous"},
	}
	secrets := []string{"matrix-b", "b-hidden", "b-huge", string(bHidden.UID), string(bHuge.UID)}
	const otherNode = "mx-tainted"

	// want returns the status the disclosure rule gives c for path.
	type endpoint struct {
		path string
		want func(c caller) int
	}
	ok := func(allowed bool) int {
		if allowed {
			return http.StatusOK
		}
		return http.StatusForbidden
	}
	forbidden := func(caller) int { return http.StatusForbidden }
	endpoints := []endpoint{
		{"namespaces/matrix-a/pods/a-web/explain", func(c caller) int { return ok(c.pods) }},
		{"namespaces/matrix-a/pods/a-huge/explain", func(c caller) int { return ok(c.pods) }},
		{"namespaces/matrix-a/pods/a-huge/attempts", func(c caller) int { return ok(c.pods) }},
		{"namespaces/matrix-a/pods/a-web/explain?node=mx-large", func(c caller) int { return ok(c.pods && c.nodes) }},
		{"namespaces/matrix-a/pending", func(c caller) int { return ok(c.pods) }},
		{"namespaces/matrix-a/pods", func(c caller) int { return ok(c.pods) }},
		{"namespaces/matrix-a/rejections?by=plugin", func(c caller) int { return ok(c.pods) }},
		{"namespaces/matrix-a/rejections?by=node", func(c caller) int { return ok(c.pods && c.nodes) }},
		{"namespaces/matrix-b/pods/b-hidden/explain", forbidden},
		{"namespaces/matrix-b/pods/b-huge/attempts", forbidden},
		{"namespaces/matrix-b/pending", forbidden},
		{"namespaces/matrix-b/rejections?by=plugin", forbidden},
		{"pods/" + string(bHidden.UID) + "/explain", func(c caller) int { return http.StatusNotFound }},
		{"pods/" + string(bHuge.UID) + "/attempts", func(c caller) int { return http.StatusNotFound }},
		{"pending", forbidden},
		{"pods", forbidden},
		{"rejections?by=plugin", forbidden},
		{"status", forbidden},
	}
	routes := []struct{ name, base string }{
		{"sidecar", sidecar.URL},
		{"aggregated", cp.Config.Host},
	}
	for _, route := range routes {
		for _, c := range callers {
			for _, ep := range endpoints {
				url := route.base + v1alpha1.Prefix + ep.path
				code, body, err := framework.GetAs(url, c.token)
				if err != nil {
					t.Fatal(err)
				}
				want := ep.want(c)
				switch {
				case c.token == "":
					// The sidecar needs to know its caller (401); the
					// apiserver admits anonymous requests and refuses them.
					want = map[string]int{"sidecar": http.StatusUnauthorized, "aggregated": http.StatusForbidden}[route.name]
				case route.name == "aggregated" && !c.pods:
					// The apiserver checks the API group's role first.
					want = http.StatusForbidden
				case route.name == "aggregated" && ep.path == "status":
					// explain-reader does not hold the status resource.
					want = http.StatusForbidden
				}
				name := fmt.Sprintf("%s, %s, %s", route.name, c.name, ep.path)
				if code != want {
					t.Errorf("%s: %d, want %d: %s", name, code, want, body)
				}
				for _, secret := range secrets {
					if strings.Contains(string(body), secret) && !strings.Contains(ep.path, secret) {
						t.Errorf("%s: the answer holds %q: %s", name, secret, body)
					}
				}
				if !c.nodes && strings.Contains(string(body), otherNode) {
					t.Errorf("%s: a caller who may not list nodes is shown node %s: %s", name, otherNode, body)
				}
				if testing.Verbose() {
					t.Logf("%s: %d", name, code)
				}
			}
		}
	}
}

// serviceAccount creates a ServiceAccount in namespace ns, binds it to the
// chart's explain-reader role (so the apiserver lets it through to the
// sidecar) and to get and list pods in ns if pods, to list nodes if nodes,
// and returns a token for it.
func serviceAccount(t *testing.T, ns, name string, pods, nodes bool) string {
	t.Helper()
	ctx := context.Background()
	rbac := cp.Client.RbacV1()
	if _, err := cp.Client.CoreV1().ServiceAccounts(ns).Create(ctx, &v1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	subject := []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: name}}
	var bindings []string
	if pods {
		ensureExplainReader(t)
		bindings = append(bindings, explainReader)
		if _, err := rbac.Roles(ns).Create(ctx, &rbacv1.Role{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get", "list"}}},
		}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := rbac.RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name},
			Subjects:   subject,
		}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if nodes {
		role := "schedscope-test-node-lister"
		if _, err := rbac.ClusterRoles().Create(ctx, &rbacv1.ClusterRole{
			ObjectMeta: metav1.ObjectMeta{Name: role},
			Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"nodes"}, Verbs: []string{"list"}}},
		}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
		bindings = append(bindings, role)
	}
	for _, role := range bindings {
		if _, err := rbac.ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: ns + "-" + name + "-" + strings.ReplaceAll(role, ":", "-")},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
			Subjects:   subject,
		}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	tr, err := cp.Client.CoreV1().ServiceAccounts(ns).CreateToken(ctx, name, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To(int64(3600))},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// RBAC reaches the apiserver's authorizer through an informer: wait
	// until it answers as bound, before any request the sidecar's
	// authorization cache would remember.
	user := "system:serviceaccount:" + ns + ":" + name
	waitForAccess(t, user, authorizationv1.ResourceAttributes{Namespace: ns, Verb: "list", Resource: "pods"}, pods)
	waitForAccess(t, user, authorizationv1.ResourceAttributes{Verb: "list", Resource: "nodes"}, nodes)
	waitForAccess(t, user, authorizationv1.ResourceAttributes{Group: v1alpha1.GroupName, Verb: "get", Resource: "pods", Subresource: "explain", Namespace: ns}, pods)
	return tr.Status.Token
}

// waitForAccess waits until a SubjectAccessReview for user and attrs
// answers allowed.
func waitForAccess(t *testing.T, user string, attrs authorizationv1.ResourceAttributes, allowed bool) {
	t.Helper()
	var got bool
	err := wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		sar, err := cp.Client.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{
			Spec: authorizationv1.SubjectAccessReviewSpec{User: user, ResourceAttributes: &attrs},
		}, metav1.CreateOptions{})
		if err != nil {
			return false, err
		}
		got = sar.Status.Allowed
		return got == allowed, nil
	})
	if err != nil {
		t.Fatalf("%s %+v: allowed %v, want %v: %v", user, attrs, got, allowed, err)
	}
}
