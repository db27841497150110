package sidecar

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/component-base/metrics/testutil"

	"github.com/schedscope/schedscope/test/framework"
)

// healthNode is a node of TestClusterHealthMetrics.
type healthNode struct {
	name        string
	cpu, memory string
	cordoned    bool
	taints      []v1.Taint
}

// healthNodes are the nodes of TestClusterHealthMetrics: 18.5 cores and
// 34Gi allocatable, one cordoned, one tainted per effect.
var healthNodes = []healthNode{
	{name: "h-big", cpu: "8", memory: "16Gi"},
	{name: "h-small", cpu: "4", memory: "8Gi"},
	{name: "h-cordoned", cpu: "2", memory: "4Gi", cordoned: true},
	// Two NoSchedule taints: the node counts once for the effect.
	{name: "h-dedicated", cpu: "2500m", memory: "4Gi", taints: []v1.Taint{
		{Key: "dedicated", Value: "db", Effect: v1.TaintEffectNoSchedule},
		{Key: "gpu", Effect: v1.TaintEffectNoSchedule},
	}},
	{name: "h-spot", cpu: "2", memory: "2Gi", taints: []v1.Taint{
		{Key: "spot", Effect: v1.TaintEffectPreferNoSchedule},
		{Key: "draining", Effect: v1.TaintEffectNoExecute},
	}},
}

func requests(cpu, memory string) v1.ResourceRequirements {
	return v1.ResourceRequirements{Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse(cpu), v1.ResourceMemory: resource.MustParse(memory)}}
}

func container(name, cpu, memory string) v1.Container {
	return v1.Container{Name: name, Image: "registry.k8s.io/pause:3.10", Resources: requests(cpu, memory)}
}

// TestClusterHealthMetrics runs a sidecar with --cluster-health on a
// control plane of its own, where it sees only the nodes and pods below, and
// compares its schedscope_cluster_* and pod scheduling duration metrics with
// the values those objects determine:
//   - pending pods by profile: 3 unschedulable for the schedscope profile
//     and 2 for a profile no scheduler runs, all younger than a minute; a pod
//     being deleted and a failed pod without a node are not pending;
//   - the scheduling duration histogram counts the 4 pods schedscope
//     scheduled (not the 2 created bound) and sums their creation to
//     PodScheduled times as the API reports them;
//   - FailedScheduling events at least one per pending schedscope pod.
//
// Node and resource gauges are left to kube-state-metrics and the
// scheduler's /metrics/resources; the sidecar exports none.
func TestClusterHealthMetrics(t *testing.T) {
	ctx := context.Background()
	hdir := t.TempDir()
	hcp, err := framework.StartControlPlane(ctx, hdir)
	if err != nil {
		t.Fatal(err)
	}
	defer hcp.Stop()
	config := "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nleaderElection:\n  leaderElect: false\nprofiles:\n- schedulerName: " + profile + "\n"
	hsched, err := hcp.StartScheduler(ctx, "schedscope-scheduler", "schedscope-scheduler", config)
	if err != nil {
		t.Fatal(err)
	}
	defer hsched.Stop()
	hsidecar, err := hcp.StartSidecar(ctx, "schedscope-sidecar", hsched, "--cluster-health=true")
	if err != nil {
		t.Fatal(err)
	}
	defer hsidecar.Stop()
	metricsURL := hsidecar.URL + "/metrics"
	client := hcp.Client

	for _, n := range healthNodes {
		node := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: n.name, Labels: map[string]string{v1.LabelHostname: n.name}},
			Spec: v1.NodeSpec{Unschedulable: n.cordoned, Taints: n.taints}}
		if err := framework.CreateNode(ctx, client, node, v1.ResourceList{v1.ResourceCPU: resource.MustParse(n.cpu), v1.ResourceMemory: resource.MustParse(n.memory)}); err != nil {
			t.Fatal(err)
		}
	}
	const ns = "health"
	if _, err := client.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	always := v1.ContainerRestartPolicyAlways
	pod := func(name, scheduler string, containers ...v1.Container) *v1.Pod {
		return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Spec: v1.PodSpec{SchedulerName: scheduler, Containers: containers}}
	}
	// Scheduled by schedscope: requested 500m+1+2+300m = 3.8 cores and
	// 1Gi+512Mi+256Mi+128Mi = 1920Mi.
	scheduled := []*v1.Pod{
		pod("s-plain", profile, container("c", "500m", "1Gi")),
		pod("s-two", profile, container("a", "600m", "256Mi"), container("b", "400m", "256Mi")),
		pod("s-init", profile, container("c", "250m", "128Mi")),
		pod("s-sidecar", profile, container("c", "200m", "64Mi")),
	}
	scheduled[2].Spec.InitContainers = []v1.Container{container("init", "2", "256Mi")}
	sidecarInit := container("proxy", "100m", "64Mi")
	sidecarInit.RestartPolicy = &always
	scheduled[3].Spec.InitContainers = []v1.Container{sidecarInit}
	// Created bound to h-small: 300m and 256Mi requested; the succeeded one
	// requests nothing any more.
	bound := pod("b-running", profile, container("c", "300m", "256Mi"))
	bound.Spec.NodeName = "h-small"
	boundDone := pod("b-succeeded", profile, container("c", "1", "1Gi"))
	boundDone.Spec.NodeName = "h-small"
	// Pending for schedscope: too much cpu, too much memory, no such node label.
	pendingOurs := []*v1.Pod{
		pod("p-cpu", profile, container("c", "100", "1Mi")),
		pod("p-memory", profile, container("c", "1m", "1Ti")),
		pod("p-selector", profile, container("c", "1m", "1Mi")),
	}
	pendingOurs[2].Spec.NodeSelector = map[string]string{"schedscope.io/missing": "true"}
	// Pending for a profile no scheduler runs; the failed and the deleted
	// (held by a finalizer) pods are not pending.
	pendingOther := []*v1.Pod{pod("o-1", "nobody", container("c", "1", "1Gi")), pod("o-2", "nobody", container("c", "1", "1Gi"))}
	failed := pod("o-failed", "nobody", container("c", "1", "1Gi"))
	deleting := pod("o-deleting", "nobody", container("c", "1", "1Gi"))
	deleting.Finalizers = []string{"schedscope.io/test"}

	var all []*v1.Pod
	all = append(all, scheduled...)
	all = append(all, bound, boundDone)
	all = append(all, pendingOurs...)
	all = append(all, pendingOther...)
	all = append(all, failed, deleting)
	for _, p := range all {
		if _, err := client.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	setPhase(t, client, ns, boundDone.Name, v1.PodSucceeded)
	setPhase(t, client, ns, failed.Name, v1.PodFailed)
	if err := client.CoreV1().Pods(ns).Delete(ctx, deleting.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	defer func() {
		// Let the namespace's deleting pod go.
		p, err := client.CoreV1().Pods(ns).Get(ctx, deleting.Name, metav1.GetOptions{})
		if err == nil {
			p.Finalizers = nil
			_, _ = client.CoreV1().Pods(ns).Update(ctx, p, metav1.UpdateOptions{})
		}
	}()

	// Wait until schedscope has scheduled its pods and tried the pending
	// ones (each has a FailedScheduling condition).
	var wantDurationSum float64
	if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		wantDurationSum = 0
		for _, p := range scheduled {
			got, err := client.CoreV1().Pods(ns).Get(ctx, p.Name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			cond := podScheduled(got)
			if got.Spec.NodeName == "" || cond == nil || cond.Status != v1.ConditionTrue {
				return false, nil
			}
			wantDurationSum += math.Max(0, cond.LastTransitionTime.Sub(got.CreationTimestamp.Time).Seconds())
		}
		for _, p := range pendingOurs {
			got, err := client.CoreV1().Pods(ns).Get(ctx, p.Name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			if cond := podScheduled(got); got.Spec.NodeName != "" || cond == nil || cond.Reason != v1.PodReasonUnschedulable {
				return false, nil
			}
		}
		return true, nil
	}); err != nil {
		t.Fatalf("schedscope did not schedule and reject the pods: %v\n%s", err, hsched.Tail())
	}
	// The pods still exist as created.
	for _, n := range healthNodes {
		got, err := client.CoreV1().Nodes().Get(ctx, n.name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got.Spec.Unschedulable != n.cordoned || len(got.Spec.Taints) != len(n.taints) {
			t.Fatalf("node %s changed: unschedulable %v, taints %v", n.name, got.Spec.Unschedulable, got.Spec.Taints)
		}
	}

	want := `
# HELP schedscope_cluster_pending_pods Pods not yet bound to a node, by scheduler profile (spec.schedulerName) and age bucket.
# TYPE schedscope_cluster_pending_pods gauge
schedscope_cluster_pending_pods{age="0-1m",profile="nobody"} 2
schedscope_cluster_pending_pods{age="0-1m",profile="schedscope"} 3
schedscope_cluster_pending_pods{age="1m-5m",profile="nobody"} 0
schedscope_cluster_pending_pods{age="1m-5m",profile="schedscope"} 0
schedscope_cluster_pending_pods{age="2h+",profile="nobody"} 0
schedscope_cluster_pending_pods{age="2h+",profile="schedscope"} 0
schedscope_cluster_pending_pods{age="30m-2h",profile="nobody"} 0
schedscope_cluster_pending_pods{age="30m-2h",profile="schedscope"} 0
schedscope_cluster_pending_pods{age="5m-30m",profile="nobody"} 0
schedscope_cluster_pending_pods{age="5m-30m",profile="schedscope"} 0
`
	names := []string{"schedscope_cluster_pending_pods"}
	// The sidecar's informers catch up asynchronously: poll until the scrape
	// matches, and report the last difference.
	var lastErr error
	var count uint64
	var sum float64
	var failedScheduling float64
	if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		g, families, err := framework.Scrape(metricsURL)
		if err != nil {
			lastErr = err
			return false, nil
		}
		if lastErr = testutil.GatherAndCompare(g, strings.NewReader(want), names...); lastErr != nil {
			return false, nil
		}
		for name := range families {
			if strings.HasPrefix(name, "schedscope_cluster_") && name != "schedscope_cluster_pending_pods" && name != "schedscope_cluster_scheduling_events_total" {
				lastErr = fmt.Errorf("%s exported: node and resource gauges are left to kube-state-metrics and /metrics/resources", name)
				return false, lastErr
			}
		}
		count, sum = 0, 0
		for _, m := range families["schedscope_pod_scheduling_duration_seconds"].GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "profile" && l.GetValue() != profile {
					lastErr = fmt.Errorf("scheduling duration observed for profile %q", l.GetValue())
					return false, lastErr
				}
			}
			count += m.GetHistogram().GetSampleCount()
			sum += m.GetHistogram().GetSampleSum()
		}
		failedScheduling = framework.Sum(families["schedscope_cluster_scheduling_events_total"], map[string]string{"reason": "FailedScheduling"})
		if count != uint64(len(scheduled)) {
			lastErr = fmt.Errorf("schedscope_pod_scheduling_duration_seconds count %d, want %d", count, len(scheduled))
			return false, nil
		}
		if failedScheduling < float64(len(pendingOurs)) {
			lastErr = fmt.Errorf("schedscope_cluster_scheduling_events_total{reason=FailedScheduling} %v, want at least %d", failedScheduling, len(pendingOurs))
			return false, nil
		}
		return true, nil
	}); err != nil {
		t.Fatalf("the sidecar's metrics do not match the cluster: %v (last: %v)\n%s", err, lastErr, hsidecar.Tail())
	}
	// PodScheduled times have one-second resolution, as does creation.
	if math.Abs(sum-wantDurationSum) > 1e-9 {
		t.Errorf("schedscope_pod_scheduling_duration_seconds sum %v, want %v (creation to PodScheduled of the scheduled pods)", sum, wantDurationSum)
	}
	t.Logf("scheduling duration: count %d, sum %vs; FailedScheduling events %v", count, sum, failedScheduling)
}

func podScheduled(p *v1.Pod) *v1.PodCondition {
	for i, c := range p.Status.Conditions {
		if c.Type == v1.PodScheduled {
			return &p.Status.Conditions[i]
		}
	}
	return nil
}

func setPhase(t *testing.T, client kubernetes.Interface, ns, name string, phase v1.PodPhase) {
	t.Helper()
	p, err := client.CoreV1().Pods(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	p.Status.Phase = phase
	if _, err := client.CoreV1().Pods(ns).UpdateStatus(context.Background(), p, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}
