package api

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/schedscope/schedscope/pkg/apis/schedscope/v1alpha1"
	"github.com/schedscope/schedscope/pkg/record"
	"github.com/schedscope/schedscope/pkg/sidecar/hints"
)

// TestHintsNeedListNodes: a hint that states a node's free capacity, what
// other tenants' pods leave of it, goes only to a caller who may list
// nodes; another gets the count of the nodes a lower request would fit,
// without figures or node names.
func TestHintsNeedListNodes(t *testing.T) {
	// team-a/web asks for 8 CPUs; team-b's pods hold 9 of n1's 16 and 4 of
	// n2's 8, which leaves 7 and 4.
	cpu := func(q string) corev1.ResourceList {
		return corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(q)}
	}
	allocatable := func(q string) corev1.ResourceList {
		return corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(q), corev1.ResourcePods: resource.MustParse("110")}
	}
	tenant := func(q string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "team-b", Name: "batch"},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Resources: corev1.ResourceRequirements{Requests: cpu(q)}}}}}
	}
	web := tenant("8")
	web.Namespace, web.Name = "team-a", "web"
	nodes := map[string]hints.Node{
		"n1": {Node: &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}, Status: corev1.NodeStatus{Allocatable: allocatable("16")}}, Pods: []*corev1.Pod{tenant("9")}},
		"n2": {Node: &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n2"}, Status: corev1.NodeStatus{Allocatable: allocatable("8")}}, Pods: []*corev1.Pod{tenant("4")}},
	}
	h, err := New(Config{
		Store: openStore(t, fixture()...), Authenticator: fakeAuthn,
		Authorizer: &fakeAuthz{rules: []string{"alice get team-a/web", "admin get team-a/web", "admin list nodes"}},
		Hints: func(a *record.Attempt, showNodes bool) []v1alpha1.Hint {
			return hints.Compute(a, web, nodes, showNodes)
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	e := &env{srv: srv}
	explain := func(user string) (v1alpha1.Explanation, string) {
		t.Helper()
		code, body := e.get(t, user, "/apis/schedscope.io/v1alpha1/namespaces/team-a/pods/web/explain?attempt=1")
		var ex v1alpha1.Explanation
		if err := json.Unmarshal(body, &ex); err != nil || code != http.StatusOK {
			t.Fatalf("%s: status %d %v: %s", user, code, err, body)
		}
		return ex, string(body)
	}
	quantities := cmp.Comparer(func(a, b resource.Quantity) bool { return a.Cmp(b) == 0 })

	shown, _ := explain("admin")
	wantShown := []v1alpha1.Hint{{Kind: v1alpha1.HintLowerRequests, Plugins: []string{hints.NodeResourcesFit}, Nodes: 1, NodeNames: []string{"n1"},
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("7")}, Message: "lower the cpu request to 7 to fit n1"}}
	if diff := cmp.Diff(wantShown, shown.Hints, quantities); diff != "" {
		t.Errorf("hints with list nodes (-want +got):\n%s", diff)
	}

	hidden, body := explain("alice")
	wantHidden := []v1alpha1.Hint{{Kind: v1alpha1.HintLowerRequests, Plugins: []string{hints.NodeResourcesFit}, Nodes: 2,
		Message: "2 nodes would fit with a lower cpu request"}}
	if diff := cmp.Diff(wantHidden, hidden.Hints, quantities); diff != "" {
		t.Errorf("hints without list nodes (-want +got):\n%s", diff)
	}
	for _, leak := range []string{`"requests"`, `"n1"`, `"n2"`, "request to"} {
		if strings.Contains(body, leak) {
			t.Errorf("the explanation without list nodes holds %s: %s", leak, body)
		}
	}
}
