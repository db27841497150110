package sidecar

import (
	"context"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/schedscope/schedscope/pkg/apis/schedscope/v1alpha1"
	"github.com/schedscope/schedscope/test/framework"
)

// TestAggregatedAPI registers the sidecar as the APIService
// v1alpha1.schedscope.io and explains pods through the kube-apiserver, as
// kubectl schedscope does by default. The apiserver passes the caller's
// identity on, so the sidecar's own per-namespace check applies: user
// viewer, bound to the manifests' schedscope:explain-reader role for the
// API group but allowed core pods only in agg-a, gets
// agg-a's explanation and the sidecar's 403 for agg-b's.
func TestAggregatedAPI(t *testing.T) {
	ctx := context.Background()
	registerAPIService(t)
	createNamespace(t, "agg-a")
	createNamespace(t, "agg-b")
	createNode(t, "agg-node", "8")
	grantAPIGroup(t)
	grantPodReader(t, "agg-a")
	createPod(t, "agg-a", "mine", "100m")
	createPod(t, "agg-b", "theirs", "100m")
	createPod(t, "agg-a", "too-big", "64")
	waitForExplanation(t, "agg-a", "mine", "scheduled")
	waitForExplanation(t, "agg-b", "theirs", "scheduled")
	waitForExplanation(t, "agg-a", "too-big", "unschedulable")

	viewer := filepath.Join(dir, "viewer.kubeconfig")
	if err := framework.WriteKubeconfig(viewer, cp.Config.Host, framework.ViewerToken); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name       string
		kubeconfig string
		args       []string
		wantCode   int
		want       []string
	}{
		// The viewer may not list nodes: verdict groups, no node rows.
		{"own pod", viewer, []string{"explain", "pod/mine", "-n", "agg-a"}, 0, []string{"Node:     agg-node", "feasible", "hidden: you may not list nodes"}},
		{"own unschedulable pod", viewer, []string{"explain", "pod/too-big", "-n", "agg-a"}, 3, []string{"NodeResourcesFit", "Insufficient cpu", "hidden: you may not list nodes"}},
		{"own pending list", viewer, []string{"pending", "-n", "agg-a"}, 0, []string{"too-big", "NodeResourcesFit"}},
		// The sidecar, not the apiserver, refuses: it was told the caller is viewer.
		{"other namespace", viewer, []string{"explain", "pod/theirs", "-n", "agg-b"}, 1, []string{"403", `user "viewer" cannot get pods "theirs" in namespace "agg-b"`}},
		{"admin, other namespace", cp.Kubeconfig, []string{"explain", "pod/theirs", "-n", "agg-b"}, 0, []string{"agg-node", "chosen"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			code, out := runPlugin(t, tt.kubeconfig, tt.args...)
			if code != tt.wantCode {
				t.Errorf("kubectl schedscope %s exited %d, want %d:\n%s", strings.Join(tt.args, " "), code, tt.wantCode, out)
			}
			for _, w := range tt.want {
				if !strings.Contains(out, w) {
					t.Errorf("kubectl schedscope %s output lacks %q:\n%s", strings.Join(tt.args, " "), w, out)
				}
			}
			if code == 1 && strings.Contains(out, "agg-node") {
				t.Errorf("a refusal leaks the pod's explanation:\n%s", out)
			}
		})
	}

	// Without rights to the API group the apiserver refuses before proxying.
	if err := cp.Client.RbacV1().ClusterRoleBindings().Delete(ctx, "agg-viewer", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	code, body, err := framework.GetAs(cp.Config.Host+v1alpha1.Prefix+"namespaces/agg-a/pods/mine/explain", framework.ViewerToken)
	if err != nil {
		t.Fatal(err)
	}
	if code != http.StatusForbidden || !strings.Contains(string(body), `"kind":"Status"`) || !strings.Contains(string(body), "schedscope.io") {
		t.Errorf("without the API group role: %d %s, want the apiserver's 403", code, body)
	}
}

// registerAPIService makes the kube-apiserver serve the sidecar's API group
// by proxying to the sidecar, as the chart does. Tests may call it one
// after the other: each removes the APIService when it ends.
func registerAPIService(t *testing.T) {
	t.Helper()
	unregister, err := cp.RegisterAPIService(context.Background(), sidecar)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = unregister() })
}

// explainReader is the ClusterRole the chart grants callers of the API
// group through the kube-apiserver.
const explainReader = "schedscope:explain-reader"

// grantAPIGroup binds user viewer to the chart's own explainReader role,
// as the chart renders it, so the test proves that role enough.
func grantAPIGroup(t *testing.T) {
	t.Helper()
	ensureExplainReader(t)
	if _, err := cp.Client.RbacV1().ClusterRoleBindings().Create(context.Background(), &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "agg-viewer"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: explainReader},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "viewer"}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// ensureExplainReader creates the chart's explainReader ClusterRole, as
// `helm template` renders it with the default values, unless it exists.
func ensureExplainReader(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	data, err := framework.RenderChart("schedscope", nil)
	if err != nil {
		t.Fatal(err)
	}
	objs, err := framework.DecodeYAML(data)
	if err != nil {
		t.Fatal(err)
	}
	var role *rbacv1.ClusterRole
	for _, o := range objs {
		if o.GetKind() == "ClusterRole" && o.GetName() == explainReader {
			role = &rbacv1.ClusterRole{}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, role); err != nil {
				t.Fatal(err)
			}
		}
	}
	if role == nil {
		t.Fatalf("the chart renders no ClusterRole %s", explainReader)
	}
	if _, err := cp.Client.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
}
