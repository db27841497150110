package clustermetrics

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	testingclock "k8s.io/utils/clock/testing"
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
func (p *podWrapper) deleting() *podWrapper {
	t := metav1.NewTime(now)
	p.DeletionTimestamp = &t
	return p
}
func (p *podWrapper) obj() *corev1.Pod { return &p.Pod }

func makeEvent(name, reason string, count int32) *corev1.Event {
	return &corev1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}, Reason: reason, Count: count, Type: corev1.EventTypeWarning}
}

func TestPendingByProfile(t *testing.T) {
	tests := []struct {
		name string
		pods []*corev1.Pod
		want map[string][]float64
	}{
		{name: "no pods", want: map[string][]float64{}},
		{
			name: "age buckets, upper bound excluded",
			pods: []*corev1.Pod{
				makePod("a", 0).obj(),
				makePod("b", time.Minute).obj(),
				makePod("c", 30*time.Minute-time.Second).obj(),
				makePod("d", 2*time.Hour).obj(),
				makePod("e", 48*time.Hour).obj(),
			},
			want: map[string][]float64{"default-scheduler": {1, 1, 1, 0, 2}},
		},
		{
			name: "by profile",
			pods: []*corev1.Pod{
				makePod("a", time.Second).obj(),
				makePod("b", 3*time.Hour).profile("batch").obj(),
			},
			want: map[string][]float64{"default-scheduler": {1, 0, 0, 0, 0}, "batch": {0, 0, 0, 0, 1}},
		},
		{
			name: "bound, terminated and deleting pods do not wait",
			pods: []*corev1.Pod{
				makePod("bound", time.Second).node("node-1").obj(),
				makePod("succeeded", time.Second).phase(corev1.PodSucceeded).obj(),
				makePod("failed", time.Second).phase(corev1.PodFailed).obj(),
				makePod("deleting", time.Second).deleting().obj(),
			},
			want: map[string][]float64{},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := pendingByProfile(tt.pods, now)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("pendingByProfile() (-want +got):\n%s", diff)
			}
		})
	}
}

func TestClusterMetrics(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	client := fake.NewClientset(
		makePod("new", 30*time.Second).obj(),
		makePod("mid", 3*time.Minute).obj(),
		makePod("old", 3*time.Hour).profile("batch").obj(),
		makePod("done", time.Hour).phase(corev1.PodSucceeded).obj(),
		makePod("run", time.Hour).node("node-1").obj(),
		makeEvent("old-failure", "FailedScheduling", 5),
	)
	reg := prometheus.NewRegistry()
	factory := informers.NewSharedInformerFactory(client, 0)
	c, err := NewCluster(factory, reg, testingclock.NewFakePassiveClock(now))
	if err != nil {
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
	err = wait.PollUntilContextTimeout(ctx, 5*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return testutil.ToFloat64(c.schedulingEvents.WithLabelValues("FailedScheduling")) == 3 &&
			testutil.ToFloat64(c.schedulingEvents.WithLabelValues("Preempted")) == 1 &&
			testutil.CollectAndCount(c.schedulingDuration) == 1, nil
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
		"schedscope_cluster_pending_pods", "schedscope_cluster_scheduling_events_total",
		"schedscope_pod_scheduling_duration_seconds",
	}
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), names...); err != nil {
		t.Error(err)
	}
	// Only the metrics above are exported from the cluster: what
	// kube-state-metrics and the scheduler's /metrics/resources export is
	// left to them.
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if strings.HasPrefix(f.GetName(), "schedscope_cluster_") && !slices.Contains(names, f.GetName()) {
			t.Errorf("unexpected cluster metric %s", f.GetName())
		}
	}
}
