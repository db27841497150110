package health

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/schedscope/schedscope/pkg/sidecar/metrics"
)

var now = time.Date(2026, 1, 2, 12, 0, 0, 0, time.UTC)

type podWrapper struct{ corev1.Pod }

func makePod(name string, age time.Duration) *podWrapper {
	return &podWrapper{corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, CreationTimestamp: metav1.NewTime(now.Add(-age))},
		Spec:       corev1.PodSpec{SchedulerName: "default-scheduler", Containers: []corev1.Container{{Name: "c"}}},
		Status:     corev1.PodStatus{Phase: corev1.PodPending},
	}}
}

func (p *podWrapper) profile(s string) *podWrapper { p.Spec.SchedulerName = s; return p }
func (p *podWrapper) node(n string) *podWrapper {
	p.Spec.NodeName = n
	p.Status.Phase = corev1.PodRunning
	return p
}
func (p *podWrapper) phase(ph corev1.PodPhase) *podWrapper { p.Status.Phase = ph; return p }
func (p *podWrapper) requests(cpu, mem string) *podWrapper {
	p.Spec.Containers[0].Resources.Requests = corev1.ResourceList{
		corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem)}
	return p
}
func (p *podWrapper) initRequests(cpu string) *podWrapper {
	p.Spec.InitContainers = append(p.Spec.InitContainers, corev1.Container{Name: "init",
		Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}}})
	return p
}
func (p *podWrapper) overhead(cpu string) *podWrapper {
	p.Spec.Overhead = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}
	return p
}
func (p *podWrapper) obj() *corev1.Pod { return &p.Pod }

func makeNode(name, cpu, mem string, unschedulable bool, effects ...corev1.TaintEffect) *corev1.Node {
	n := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       corev1.NodeSpec{Unschedulable: unschedulable},
		Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{
			corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem)}},
	}
	for i, e := range effects {
		n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: "k" + string(rune('a'+i)), Effect: e})
	}
	return n
}

func makeEvent(name, reason string, count int32) *corev1.Event {
	return &corev1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}, Reason: reason, Count: count, Type: corev1.EventTypeWarning}
}

func TestClusterMetrics(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	client := fake.NewClientset(
		makePod("new", 30*time.Second).obj(),
		makePod("mid", 3*time.Minute).obj(),
		makePod("old", 3*time.Hour).profile("batch").obj(),
		makePod("done", time.Hour).phase(corev1.PodSucceeded).obj(),
		// Requests: max(500m containers, 1 init) + 100m overhead = 1.1 cores.
		makePod("run", time.Hour).node("node-1").requests("500m", "1Gi").initRequests("1").overhead("100m").obj(),
		makeNode("node-1", "4", "8Gi", true, corev1.TaintEffectNoSchedule),
		makeNode("node-2", "2", "4Gi", false, corev1.TaintEffectNoExecute, corev1.TaintEffectNoSchedule, corev1.TaintEffectNoSchedule),
		makeEvent("old-failure", "FailedScheduling", 5),
	)
	reg := prometheus.NewRegistry()
	m := metrics.NewMetrics(reg)
	factory := informers.NewSharedInformerFactory(client, 0)
	if _, err := NewCluster(factory, m, reg, testingclock.NewFakePassiveClock(now)); err != nil {
		t.Fatal(err)
	}
	factory.Start(ctx.Done())
	factory.WaitForCacheSync(ctx.Done())

	// Pod "mid" is bound 90s after its creation.
	mid := makePod("mid", 3*time.Minute).node("node-2").obj()
	mid.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionTrue,
		LastTransitionTime: metav1.NewTime(now.Add(-3*time.Minute + 90*time.Second))}}
	if _, err := client.CoreV1().Pods("ns").Update(ctx, mid, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	// Events after the initial list count; "old-failure" above does not.
	events := client.CoreV1().Events("ns")
	for _, e := range []*corev1.Event{makeEvent("f1", "FailedScheduling", 1), makeEvent("p1", "Preempted", 0), makeEvent("s1", "Scheduled", 1)} {
		if _, err := events.Create(ctx, e, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := events.Update(ctx, makeEvent("f1", "FailedScheduling", 3), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	err := wait.PollUntilContextTimeout(ctx, 5*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return testutil.ToFloat64(m.SchedulingEvents.WithLabelValues("FailedScheduling")) == 3 &&
			testutil.ToFloat64(m.SchedulingEvents.WithLabelValues("Preempted")) == 1 &&
			testutil.CollectAndCount(m.PodSchedulingDuration) == 1, nil
	})
	if err != nil {
		t.Fatalf("informer events not seen: %v", err)
	}
	// The pod cache may lag the histogram by nothing: both come from the
	// same update, but the lister is read at scrape time.
	err = wait.PollUntilContextTimeout(ctx, 5*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		p, err := factory.Core().V1().Pods().Lister().Pods("ns").Get("mid")
		return err == nil && p.Spec.NodeName != "", nil
	})
	if err != nil {
		t.Fatal(err)
	}

	want := `
# HELP schedscope_cluster_cpu_allocatable_cores CPU allocatable, summed over nodes.
# TYPE schedscope_cluster_cpu_allocatable_cores gauge
schedscope_cluster_cpu_allocatable_cores 6
# HELP schedscope_cluster_cpu_requested_cores CPU requested by the non-terminated pods bound to nodes.
# TYPE schedscope_cluster_cpu_requested_cores gauge
schedscope_cluster_cpu_requested_cores 1.1
# HELP schedscope_cluster_memory_allocatable_bytes Memory allocatable, summed over nodes.
# TYPE schedscope_cluster_memory_allocatable_bytes gauge
schedscope_cluster_memory_allocatable_bytes 1.2884901888e+10
# HELP schedscope_cluster_memory_requested_bytes Memory requested by the non-terminated pods bound to nodes.
# TYPE schedscope_cluster_memory_requested_bytes gauge
schedscope_cluster_memory_requested_bytes 1.073741824e+09
# HELP schedscope_cluster_nodes_cordoned Nodes marked unschedulable (cordoned).
# TYPE schedscope_cluster_nodes_cordoned gauge
schedscope_cluster_nodes_cordoned 1
# HELP schedscope_cluster_nodes_tainted Nodes with at least one taint of the effect.
# TYPE schedscope_cluster_nodes_tainted gauge
schedscope_cluster_nodes_tainted{effect="NoExecute"} 1
schedscope_cluster_nodes_tainted{effect="NoSchedule"} 2
schedscope_cluster_nodes_tainted{effect="PreferNoSchedule"} 0
# HELP schedscope_cluster_pending_pods Pods not yet bound to a node, by scheduler profile (spec.schedulerName) and age bucket.
# TYPE schedscope_cluster_pending_pods gauge
schedscope_cluster_pending_pods{age="0-1m",profile="batch"} 0
schedscope_cluster_pending_pods{age="0-1m",profile="default-scheduler"} 1
schedscope_cluster_pending_pods{age="1m-5m",profile="batch"} 0
schedscope_cluster_pending_pods{age="1m-5m",profile="default-scheduler"} 0
schedscope_cluster_pending_pods{age="2h+",profile="batch"} 1
schedscope_cluster_pending_pods{age="2h+",profile="default-scheduler"} 0
schedscope_cluster_pending_pods{age="30m-2h",profile="batch"} 0
schedscope_cluster_pending_pods{age="30m-2h",profile="default-scheduler"} 0
schedscope_cluster_pending_pods{age="5m-30m",profile="batch"} 0
schedscope_cluster_pending_pods{age="5m-30m",profile="default-scheduler"} 0
# HELP schedscope_cluster_scheduling_events_total FailedScheduling, Preempted and eviction events, by reason.
# TYPE schedscope_cluster_scheduling_events_total counter
schedscope_cluster_scheduling_events_total{reason="FailedScheduling"} 3
schedscope_cluster_scheduling_events_total{reason="Preempted"} 1
# HELP schedscope_pod_scheduling_duration_seconds Time from pod creation to the pod being scheduled, by scheduler profile.
# TYPE schedscope_pod_scheduling_duration_seconds histogram
schedscope_pod_scheduling_duration_seconds_bucket{profile="default-scheduler",le="0.01"} 0
schedscope_pod_scheduling_duration_seconds_bucket{profile="default-scheduler",le="0.04"} 0
schedscope_pod_scheduling_duration_seconds_bucket{profile="default-scheduler",le="0.16"} 0
schedscope_pod_scheduling_duration_seconds_bucket{profile="default-scheduler",le="0.64"} 0
schedscope_pod_scheduling_duration_seconds_bucket{profile="default-scheduler",le="2.56"} 0
schedscope_pod_scheduling_duration_seconds_bucket{profile="default-scheduler",le="10.24"} 0
schedscope_pod_scheduling_duration_seconds_bucket{profile="default-scheduler",le="40.96"} 0
schedscope_pod_scheduling_duration_seconds_bucket{profile="default-scheduler",le="163.84"} 1
schedscope_pod_scheduling_duration_seconds_bucket{profile="default-scheduler",le="655.36"} 1
schedscope_pod_scheduling_duration_seconds_bucket{profile="default-scheduler",le="2621.44"} 1
schedscope_pod_scheduling_duration_seconds_bucket{profile="default-scheduler",le="10485.76"} 1
schedscope_pod_scheduling_duration_seconds_bucket{profile="default-scheduler",le="+Inf"} 1
schedscope_pod_scheduling_duration_seconds_sum{profile="default-scheduler"} 90
schedscope_pod_scheduling_duration_seconds_count{profile="default-scheduler"} 1
`
	names := []string{
		"schedscope_cluster_cpu_allocatable_cores", "schedscope_cluster_cpu_requested_cores",
		"schedscope_cluster_memory_allocatable_bytes", "schedscope_cluster_memory_requested_bytes",
		"schedscope_cluster_nodes_cordoned", "schedscope_cluster_nodes_tainted", "schedscope_cluster_pending_pods",
		"schedscope_cluster_scheduling_events_total", "schedscope_pod_scheduling_duration_seconds",
	}
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), names...); err != nil {
		t.Error(err)
	}
}
