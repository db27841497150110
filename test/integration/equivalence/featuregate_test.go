package equivalence

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/schedscope/schedscope/test/framework"
)

// TestFeatureGatesReachPlugins starts kube-scheduler and schedscope-scheduler
// with and without --feature-gates=TaintTolerationComparisonOperators=true
// on a cluster whose only node has the taint tier=5:NoSchedule, and gives
// each a pod that tolerates tier Gt 3. TaintToleration reads the gate when
// the scheduler builds it: with the gate the pod is bound, without it the
// pod is unschedulable for the untolerated taint, and schedscope's plugins
// must decide as kube-scheduler's do in both cases.
func TestFeatureGatesReachPlugins(t *testing.T) {
	ctx := context.Background()
	cp, err := framework.StartControlPlane(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer cp.Stop()
	client := cp.Client
	node := &v1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "tiered", Labels: map[string]string{v1.LabelHostname: "tiered"}},
		Spec:       v1.NodeSpec{Taints: []v1.Taint{{Key: "tier", Value: "5", Effect: v1.TaintEffectNoSchedule}}},
	}
	capacity := v1.ResourceList{v1.ResourceCPU: resource.MustParse("4"), v1.ResourceMemory: resource.MustParse("8Gi"), v1.ResourcePods: resource.MustParse("110")}
	if err := framework.CreateNode(ctx, client, node, capacity); err != nil {
		t.Fatal(err)
	}
	const ns = "gates"
	if _, err := client.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	for _, gate := range []bool{true, false} {
		var outcomes []string
		for _, binary := range []string{"kube-scheduler", "schedscope-scheduler"} {
			name := fmt.Sprintf("%s-gate-%v", binary, gate)
			config := "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nleaderElection:\n  leaderElect: false\nprofiles:\n- schedulerName: " + name + "\n"
			var flags []string
			if gate {
				flags = append(flags, "--feature-gates=TaintTolerationComparisonOperators=true")
			}
			s, err := cp.StartScheduler(ctx, name, binary, config, flags...)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			pod := &v1.Pod{
				ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
				Spec: v1.PodSpec{
					SchedulerName: name,
					Tolerations:   []v1.Toleration{{Key: "tier", Operator: v1.TolerationOpGt, Value: "3", Effect: v1.TaintEffectNoSchedule}},
					Containers:    []v1.Container{{Name: "main", Image: "registry.k8s.io/pause:3.10"}},
				},
			}
			if _, err := client.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			outcome, err := waitForDecision(ctx, cp, pod)
			s.Stop()
			if err != nil {
				t.Fatalf("%s: %v\n%s", name, err, s.Tail())
			}
			t.Logf("%s: %s", name, outcome)
			outcomes = append(outcomes, outcome)
		}
		want := "unschedulable: 0/1 nodes are available: 1 node(s) had untolerated taint(s)"
		if gate {
			want = "bound to tiered"
		}
		for i, binary := range []string{"kube-scheduler", "schedscope-scheduler"} {
			if !strings.HasPrefix(outcomes[i], want) {
				t.Errorf("gate %v: %s decided %q, want %q", gate, binary, outcomes[i], want)
			}
		}
	}
}

// waitForDecision waits until pod is bound or marked unschedulable, and
// says which.
func waitForDecision(ctx context.Context, cp *framework.ControlPlane, pod *v1.Pod) (string, error) {
	var outcome string
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		got, err := cp.Client.CoreV1().Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		if got.Spec.NodeName != "" {
			outcome = "bound to " + got.Spec.NodeName
			return true, nil
		}
		for _, c := range got.Status.Conditions {
			if c.Type == v1.PodScheduled && c.Status == v1.ConditionFalse && c.Reason == v1.PodReasonUnschedulable {
				outcome = "unschedulable: " + c.Message
				return true, nil
			}
		}
		return false, nil
	})
	return outcome, err
}
