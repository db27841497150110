// Package sidecar tests schedscope-sidecar against a real control plane, a
// real schedscope-scheduler and the kubectl plugin.
package sidecar

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/schedscope/schedscope/test/framework"
)

const profile = "schedscope"

var (
	cp      *framework.ControlPlane
	sched   *framework.Scheduler
	sidecar *framework.Sidecar
	dir     string
)

func TestMain(m *testing.M) { os.Exit(run(m)) }

func run(m *testing.M) int {
	var err error
	if dir, err = os.MkdirTemp("", "schedscope-sidecar-"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	ctx := context.Background()
	if cp, err = framework.StartControlPlane(ctx, dir); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer cp.Stop()
	config := "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nleaderElection:\n  leaderElect: false\nprofiles:\n- schedulerName: " + profile + "\n"
	if sched, err = cp.StartScheduler(ctx, "schedscope-scheduler", "schedscope-scheduler", config); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer sched.Stop()
	if sidecar, err = cp.StartSidecar(ctx, "schedscope-sidecar", sched); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer sidecar.Stop()
	code := m.Run()
	if code == 0 {
		os.RemoveAll(dir)
	} else {
		fmt.Fprintf(os.Stderr, "logs kept in %s\n", dir)
	}
	return code
}

func createNode(t *testing.T, name, cpu string, taints ...v1.Taint) {
	t.Helper()
	node := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1.NodeSpec{Taints: taints}}
	capacity := v1.ResourceList{v1.ResourceCPU: resource.MustParse(cpu), v1.ResourceMemory: resource.MustParse("8Gi")}
	if err := framework.CreateNode(context.Background(), cp.Client, node, capacity); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cp.Client.CoreV1().Nodes().Delete(context.Background(), name, metav1.DeleteOptions{}) })
}

func createNamespace(t *testing.T, name string) {
	t.Helper()
	if _, err := cp.Client.CoreV1().Namespaces().Create(context.Background(), &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func createPod(t *testing.T, ns, name, cpu string) *v1.Pod {
	t.Helper()
	p, err := cp.Client.CoreV1().Pods(ns).Create(context.Background(), &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1.PodSpec{SchedulerName: profile, Containers: []v1.Container{{Name: "c", Image: "registry.k8s.io/pause:3.10",
			Resources: v1.ResourceRequirements{Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse(cpu)}}}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// explanation is the part of the explain API's answer the tests read.
type explanation struct {
	Result       string `json:"result"`
	SelectedNode string `json:"selectedNode"`
	Rows         []struct {
		Node    string   `json:"node"`
		Verdict string   `json:"verdict"`
		Plugin  string   `json:"plugin"`
		Reasons []string `json:"reasons"`
	} `json:"rows"`
}

// waitForExplanation polls the explain API until the pod's latest attempt
// has result.
func waitForExplanation(t *testing.T, ns, name, result string) explanation {
	t.Helper()
	var e explanation
	url := fmt.Sprintf("%s/apis/schedscope.io/v1alpha1/namespaces/%s/pods/%s/explain", sidecar.URL, ns, name)
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 60*time.Second, true, func(context.Context) (bool, error) {
		code, body, err := framework.GetAs(url, cp.Config.BearerToken)
		if err != nil || code != http.StatusOK {
			return false, nil
		}
		if err := json.Unmarshal(body, &e); err != nil {
			return false, err
		}
		return e.Result == result, nil
	})
	if err != nil {
		t.Fatalf("no %s explanation of %s/%s: %v", result, ns, name, err)
	}
	return e
}

func rowOf(e explanation, node string) (verdict, plugin string) {
	for _, r := range e.Rows {
		if r.Node == node {
			return r.Verdict, r.Plugin
		}
	}
	return "", ""
}

// TestExplainScenarios schedules a pod past a tainted node and leaves one
// unschedulable for lack of cpu; the API and the kubectl plugin must name
// TaintToleration and NodeResourcesFit.
func TestExplainScenarios(t *testing.T) {
	createNamespace(t, "explain")
	createNode(t, "ex-big", "8")
	createNode(t, "ex-tainted", "8", v1.Taint{Key: "dedicated", Value: "db", Effect: v1.TaintEffectNoSchedule})
	createPod(t, "explain", "web", "1")
	createPod(t, "explain", "huge", "64")

	web := waitForExplanation(t, "explain", "web", "scheduled")
	if v, p := rowOf(web, "ex-tainted"); v != "rejected" || p != "TaintToleration" {
		t.Errorf("web on ex-tainted: %s by %q, want rejected by TaintToleration", v, p)
	}
	if web.SelectedNode != "ex-big" {
		t.Errorf("web selected %q, want ex-big", web.SelectedNode)
	}
	huge := waitForExplanation(t, "explain", "huge", "unschedulable")
	if v, p := rowOf(huge, "ex-big"); v != "rejected" || p != "NodeResourcesFit" {
		t.Errorf("huge on ex-big: %s by %q, want rejected by NodeResourcesFit", v, p)
	}

	for _, tt := range []struct {
		pod      string
		wantCode int
		want     []string
	}{
		{"web", 0, []string{"ex-big", "ex-tainted", "TaintToleration"}},
		{"huge", 3, []string{"ex-big", "NodeResourcesFit", "Insufficient cpu"}},
	} {
		code, out := runPlugin(t, cp.Kubeconfig, "explain", "pod/"+tt.pod, "-n", "explain", "--all-nodes", "--sidecar-url", sidecar.URL, "--insecure-skip-tls-verify")
		if code != tt.wantCode {
			t.Errorf("kubectl schedscope explain pod/%s exited %d, want %d:\n%s", tt.pod, code, tt.wantCode, out)
		}
		for _, w := range tt.want {
			if !strings.Contains(string(out), w) {
				t.Errorf("kubectl schedscope explain pod/%s output lacks %q:\n%s", tt.pod, w, out)
			}
		}
		t.Logf("kubectl schedscope explain pod/%s -n explain:\n%s", tt.pod, out)
	}
}

// runPlugin runs kubectl-schedscope with kubeconfig and returns its exit
// code and combined output.
func runPlugin(t *testing.T, kubeconfig string, args ...string) (int, string) {
	t.Helper()
	plugin, err := framework.Binary("kubectl-schedscope")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(plugin, args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig)
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		return exit.ExitCode(), string(out)
	case err != nil:
		t.Fatal(err)
	}
	return 0, string(out)
}

// TestAuthorization grants user viewer get on pods in namespace team-a
// only: the viewer gets team-a's explanation, 403 for team-b's asked by
// name, 404 for team-b's asked by UID (as for a UID no pod has), and no or
// a bad token gets 401.
func TestAuthorization(t *testing.T) {
	createNamespace(t, "team-a")
	createNamespace(t, "team-b")
	createNode(t, "auth-node", "8")
	grantPodReader(t, "team-a")
	createPod(t, "team-a", "mine", "100m")
	theirs := createPod(t, "team-b", "theirs", "100m")
	waitForExplanation(t, "team-a", "mine", "scheduled")
	waitForExplanation(t, "team-b", "theirs", "scheduled")

	explain := func(ns, name string) string {
		return fmt.Sprintf("%s/apis/schedscope.io/v1alpha1/namespaces/%s/pods/%s/explain", sidecar.URL, ns, name)
	}
	for _, tt := range []struct {
		name, url, token string
		want             int
	}{
		{"own namespace", explain("team-a", "mine"), framework.ViewerToken, http.StatusOK},
		{"other namespace", explain("team-b", "theirs"), framework.ViewerToken, http.StatusForbidden},
		{"other namespace, attempts", fmt.Sprintf("%s/apis/schedscope.io/v1alpha1/namespaces/team-b/pods/theirs/attempts", sidecar.URL), framework.ViewerToken, http.StatusForbidden},
		// By UID the pod is unnamed: forbidden answers as absent.
		{"other namespace by UID", fmt.Sprintf("%s/apis/schedscope.io/v1alpha1/pods/%s/explain", sidecar.URL, theirs.UID), framework.ViewerToken, http.StatusNotFound},
		{"unknown UID", sidecar.URL + "/apis/schedscope.io/v1alpha1/pods/00000000-0000-0000-0000-000000000000/explain", framework.ViewerToken, http.StatusNotFound},
		{"no token", explain("team-a", "mine"), "", http.StatusUnauthorized},
		{"bad token", explain("team-a", "mine"), "not-a-token", http.StatusUnauthorized},
	} {
		t.Run(tt.name, func(t *testing.T) {
			code, body, err := framework.GetAs(tt.url, tt.token)
			if err != nil {
				t.Fatal(err)
			}
			if code != tt.want {
				t.Errorf("GET %s: %d, want %d: %s", tt.url, code, tt.want, body)
			}
			// A refusal names what was asked, never what was decided,
			// and never a pod that was asked for by UID.
			if code != http.StatusOK && (strings.Contains(string(body), "auth-node") || strings.Contains(string(body), "scheduled")) {
				t.Errorf("a refusal leaks the pod's explanation: %s", body)
			}
			if strings.Contains(tt.url, "/pods/"+string(theirs.UID)) && (strings.Contains(string(body), "theirs") || strings.Contains(string(body), "team-b")) {
				t.Errorf("the answer for a UID names the pod: %s", body)
			}
		})
	}
	// The viewer may not list nodes: its explanation has the verdict
	// groups and no node rows.
	code, body, err := framework.GetAs(explain("team-a", "mine"), framework.ViewerToken)
	var e struct {
		NodesHidden bool `json:"nodesHidden"`
		Rows        []struct {
			Node string `json:"node"`
		} `json:"rows"`
		Groups []struct {
			Nodes int `json:"nodes"`
		} `json:"groups"`
	}
	if err != nil || code != http.StatusOK || json.Unmarshal(body, &e) != nil {
		t.Fatalf("GET the viewer's own explanation: %d %v %s", code, err, body)
	}
	if !e.NodesHidden || len(e.Rows) != 0 || len(e.Groups) == 0 {
		t.Errorf("the viewer's explanation: nodesHidden %v, %d rows, %d groups; want hidden, no rows, groups: %s", e.NodesHidden, len(e.Rows), len(e.Groups), body)
	}
	// Listing pods is one decision: in team-a the viewer gets team-a's,
	// cluster-wide it is refused and told to ask for one namespace.
	code, body, err = framework.GetAs(sidecar.URL+"/apis/schedscope.io/v1alpha1/namespaces/team-a/pods", framework.ViewerToken)
	if err != nil || code != http.StatusOK || !strings.Contains(string(body), `"name":"mine"`) || strings.Contains(string(body), "team-b") {
		t.Errorf("GET namespaces/team-a/pods as viewer: %d %v %s, want team-a's pods only", code, err, body)
	}
	code, body, err = framework.GetAs(sidecar.URL+"/apis/schedscope.io/v1alpha1/pods", framework.ViewerToken)
	if err != nil || code != http.StatusForbidden || !strings.Contains(string(body), "ask for one namespace") || strings.Contains(string(body), "team-b") {
		t.Errorf("GET pods cluster-wide as viewer: %d %v %s, want 403 saying to ask for one namespace", code, err, body)
	}
}

// grantPodReader lets user viewer get and list pods in namespace ns.
func grantPodReader(t *testing.T, ns string) {
	t.Helper()
	ctx := context.Background()
	if _, err := cp.Client.RbacV1().Roles(ns).Create(ctx, &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Name: "pod-reader"},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get", "list"}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cp.Client.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "viewer"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "pod-reader"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "viewer"}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// TestRestartLosesNothing stops the sidecar, schedules pods meanwhile, and
// restarts it: it catches up from the scheduler's buffer, and what it had
// stored before is still there.
func TestRestartLosesNothing(t *testing.T) {
	createNamespace(t, "restart")
	createNode(t, "restart-node", "8")
	createPod(t, "restart", "before", "100m")
	waitForExplanation(t, "restart", "before", "scheduled")
	sidecar.Stop()
	for i := range 5 {
		createPod(t, "restart", fmt.Sprintf("during-%d", i), "100m")
	}
	if err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
		pods, err := cp.Client.CoreV1().Pods("restart").List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		for _, p := range pods.Items {
			if p.Spec.NodeName == "" {
				return false, nil
			}
		}
		return true, nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := sidecar.Restart(context.Background()); err != nil {
		t.Fatal(err)
	}
	waitForExplanation(t, "restart", "before", "scheduled")
	for i := range 5 {
		waitForExplanation(t, "restart", fmt.Sprintf("during-%d", i), "scheduled")
	}
	code, body, err := framework.GetAs(sidecar.URL+"/apis/schedscope.io/v1alpha1/status", cp.Config.BearerToken)
	if err != nil || code != http.StatusOK {
		t.Fatalf("status: %d %v", code, err)
	}
	var status struct {
		Follower struct {
			Cursor struct {
				Lost uint64 `json:"lost"`
			} `json:"cursor"`
		} `json:"follower"`
	}
	if err := json.Unmarshal(body, &status); err != nil {
		t.Fatal(err)
	}
	if status.Follower.Cursor.Lost != 0 {
		t.Errorf("the sidecar reports %d records lost, want 0: %s", status.Follower.Cursor.Lost, body)
	}
}

// TestDeletedNamespaceRecordsGo: once a namespace is being deleted, the
// sidecar deletes its records, so that a namespace created later under the
// same name reads nothing of this one. (No namespace controller runs here:
// the namespace stays Terminating, which is when the records must go.)
func TestDeletedNamespaceRecordsGo(t *testing.T) {
	createNamespace(t, "short-lived")
	createNode(t, "short-lived-node", "4")
	pod := createPod(t, "short-lived", "web", "100m")
	waitForExplanation(t, "short-lived", "web", "scheduled")

	if err := cp.Client.CoreV1().Namespaces().Delete(context.Background(), "short-lived", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{
		"/apis/schedscope.io/v1alpha1/namespaces/short-lived/pods/web/explain",
		"/apis/schedscope.io/v1alpha1/pods/" + string(pod.UID) + "/attempts",
	} {
		var code int
		var body []byte
		err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
			var err error
			code, body, err = framework.GetAs(sidecar.URL+path, cp.Config.BearerToken)
			return err == nil && code == http.StatusNotFound, nil
		})
		if err != nil {
			t.Errorf("GET %s after its namespace was deleted: %d %s, want 404", path, code, body)
		}
	}
}
