package sidecar

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/schedscope/schedscope/pkg/apis/schedscope/v1alpha1"
	"github.com/schedscope/schedscope/test/framework"
)

// TestNoCrossTenantLeak lets a pod of tenant-x preempt a pod of tenant-y
// and be kept off a node by anti-affinity to another tenant-y pod. A
// ServiceAccount that may read tenant-x's pods and list nodes, nothing of
// tenant-y, sees every answer the API has for it, and none of them names
// tenant-y or its pods: not the victim, not the pod behind the
// anti-affinity rejection, not in node-level reasons.
func TestNoCrossTenantLeak(t *testing.T) {
	ctx := context.Background()
	createNamespace(t, "tenant-x")
	createNamespace(t, "tenant-y")
	reader := serviceAccount(t, "tenant-x", "reader", true, true)
	for name, value := range map[string]int32{"tenant-low": 10, "tenant-high": 1000} {
		if _, err := cp.Client.SchedulingV1().PriorityClasses().Create(ctx, &schedulingv1.PriorityClass{
			ObjectMeta: metav1.ObjectMeta{Name: name}, Value: value,
		}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cp.Client.SchedulingV1().PriorityClasses().Delete(ctx, name, metav1.DeleteOptions{}) })
	}
	for name, cpu := range map[string]string{"tenant-full": "1", "tenant-shared": "8"} {
		node := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{v1.LabelHostname: name}}}
		if err := framework.CreateNode(ctx, cp.Client, node, v1.ResourceList{v1.ResourceCPU: resource.MustParse(cpu), v1.ResourceMemory: resource.MustParse("8Gi")}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cp.Client.CoreV1().Nodes().Delete(ctx, name, metav1.DeleteOptions{}) })
	}
	// tenant-y's secret-db fills tenant-full; its secret-cache sits on
	// tenant-shared, where tenant-x's pod may not go (anti-affinity).
	tenantPod(t, "tenant-y", "secret-db", "tenant-low", "900m", "tenant-full", nil)
	tenantPod(t, "tenant-y", "secret-cache", "tenant-low", "100m", "tenant-shared", nil)
	antiAffinity := &v1.Affinity{PodAntiAffinity: &v1.PodAntiAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: []v1.PodAffinityTerm{{
			LabelSelector:     &metav1.LabelSelector{MatchLabels: map[string]string{"app": "secret-cache"}},
			NamespaceSelector: &metav1.LabelSelector{},
			TopologyKey:       v1.LabelHostname,
		}},
	}}
	tenantPod(t, "tenant-x", "preemptor", "tenant-high", "900m", "", antiAffinity)
	waitBound(t, "tenant-x", "preemptor")
	waitForExplanation(t, "tenant-x", "preemptor", "scheduled")

	secrets := []string{"tenant-y", "secret-db", "secret-cache"}
	base := sidecar.URL + v1alpha1.Prefix
	for _, path := range []string{
		"namespaces/tenant-x/pods/preemptor/explain?attempt=1",
		"namespaces/tenant-x/pods/preemptor/explain",
		"namespaces/tenant-x/pods/preemptor/explain?node=tenant-full&attempt=1",
		"namespaces/tenant-x/pods/preemptor/explain?node=tenant-shared&attempt=1",
		"namespaces/tenant-x/pods/preemptor/attempts",
		"namespaces/tenant-x/pods",
		"namespaces/tenant-x/pending",
		"namespaces/tenant-x/rejections?by=plugin",
		"namespaces/tenant-x/rejections?by=node",
	} {
		code, body, err := framework.GetAs(base+path, reader)
		if err != nil {
			t.Fatal(err)
		}
		if code != http.StatusOK {
			t.Errorf("GET %s as tenant-x's reader: %d %s", path, code, body)
			continue
		}
		for _, s := range secrets {
			if strings.Contains(string(body), s) {
				t.Errorf("GET %s as tenant-x's reader names %q: %s", path, s, body)
			}
		}
	}
	// The first attempt was the preempting one: its explanation says why
	// each node was refused without saying whose pods made it so.
	code, body, err := framework.GetAs(base+"namespaces/tenant-x/pods/preemptor/explain?attempt=1", reader)
	if err != nil || code != http.StatusOK {
		t.Fatalf("attempt 1: %d %v %s", code, err, body)
	}
	for _, want := range []string{"InterPodAffinity", "NodeResourcesFit", "tenant-full"} {
		if !strings.Contains(string(body), want) {
			t.Errorf("attempt 1 does not explain %q: %s", want, body)
		}
	}
}

// tenantPod creates a pod for the schedscope profile, or bound to node if
// node is set.
func tenantPod(t *testing.T, ns, name, priorityClass, cpu, node string, affinity *v1.Affinity) {
	t.Helper()
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": name}},
		Spec: v1.PodSpec{
			SchedulerName: profile, PriorityClassName: priorityClass, Affinity: affinity,
			// Victims go at once: no kubelet runs to end them.
			TerminationGracePeriodSeconds: new(int64),
			Containers: []v1.Container{{Name: "c", Image: "registry.k8s.io/pause:3.10",
				Resources: v1.ResourceRequirements{Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse(cpu)}}}},
		},
	}
	if node != "" {
		pod.Spec.NodeName = node
	}
	if _, err := cp.Client.CoreV1().Pods(ns).Create(context.Background(), pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// waitBound waits until pod ns/name has a node.
func waitBound(t *testing.T, ns, name string) {
	t.Helper()
	if err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
		p, err := cp.Client.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return p.Spec.NodeName != "", nil
	}); err != nil {
		t.Fatalf("pod %s/%s never bound: %v", ns, name, err)
	}
}
