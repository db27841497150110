// Package shadow checks shadow profiles on a real kube-apiserver: a shadow
// identical to its live profile decides as the live profile does.
package shadow

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/schedscope/schedscope/pkg/record"
	"github.com/schedscope/schedscope/test/framework"
)

const (
	namespace = "fidelity"
	// ownNamespace holds a pod that names the shadow.
	ownNamespace = "fidelity-own"
	live         = "fidelity"
	shadow       = "fidelity-shadow"
	numNodes     = 24
	numPods      = 300
	seed         = 20261207
)

// config has the default profile twice: live, and its identical shadow.
const config = `apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
leaderElection:
  leaderElect: false
profiles:
- schedulerName: fidelity
- schedulerName: fidelity-shadow
`

// TestShadowFidelity schedules a seeded workload of 300 pods on 24 nodes
// (resources, node affinity, pod affinity and anti-affinity, topology
// spreading, taints, and a share that no node fits) with a shadow
// identical to the live profile in every attempt. Every compared attempt
// must be sameNode when the live profile found a node and neither when it
// did not, and an attempt not compared must say why. The scheduler's
// metrics count the outcomes, and a pod that names the shadow stays
// pending, counted.
func TestShadowFidelity(t *testing.T) {
	ctx := context.Background()
	cp := framework.StartTestControlPlane(t)
	client, err := framework.FastClient(cp.Config)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(seed, seed))
	for _, n := range makeNodes(rng) {
		if err := framework.CreateNode(ctx, client, n, n.Status.Capacity); err != nil {
			t.Fatal(err)
		}
	}
	for _, ns := range []string{namespace, ownNamespace} {
		if _, err := client.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	s, err := cp.StartScheduler(ctx, "schedscope-scheduler", "schedscope-scheduler", config,
		"--shadow-profile="+shadow+"="+live, "--record-buffer-size=20000")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	if err := s.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}

	own := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "names-the-shadow", Namespace: ownNamespace},
		Spec:       v1.PodSpec{SchedulerName: shadow, Containers: []v1.Container{{Name: "main", Image: "registry.k8s.io/pause:3.10"}}},
	}
	if _, err := client.CoreV1().Pods(ownNamespace).Create(ctx, own, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pods := makePods(rng)
	for _, p := range pods {
		if _, err := client.CoreV1().Pods(namespace).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	records := settledRecords(ctx, t, client, s)

	outcomes := map[record.ShadowOutcome]int{}
	scored := 0
	for _, rec := range records {
		if len(rec.Shadows) != 1 || rec.Shadows[0].Profile != shadow {
			t.Errorf("pod %s attempt %d: shadow runs %+v, want one of %s", rec.Pod.Name, rec.Attempt, rec.Shadows, shadow)
			continue
		}
		run := rec.Shadows[0]
		outcomes[run.Outcome]++
		liveFound := rec.SelectedNode != ""
		switch {
		case run.Outcome == record.ShadowNotCompared:
			if run.NotComparedReason == "" {
				t.Errorf("pod %s attempt %d: not compared, and no reason given", rec.Pod.Name, rec.Attempt)
			}
		case liveFound && run.Outcome != record.ShadowSameNode:
			t.Errorf("pod %s attempt %d: live chose %s, the identical shadow %s (%s; live node rank %d)",
				rec.Pod.Name, rec.Attempt, rec.SelectedNode, shadowNode(run), run.Outcome, run.LiveNodeRank)
		case !liveFound && run.Outcome != record.ShadowNeither:
			t.Errorf("pod %s attempt %d: live found no node (%s), the identical shadow: %s %s",
				rec.Pod.Name, rec.Attempt, rec.Message, run.Outcome, shadowNode(run))
		case liveFound && run.LiveNodeRank == 1:
			scored++
		}
	}
	t.Logf("%d attempts; shadow outcomes %v; %d with the live node ranked first by the shadow's scores", len(records), outcomes, scored)
	if outcomes[record.ShadowSameNode] < numPods/2 || outcomes[record.ShadowNeither] == 0 || scored == 0 {
		t.Errorf("shadow outcomes %v, %d scored: want most pods placed, some unschedulable, and scored choices", outcomes, scored)
	}
	checkMetrics(t, s, outcomes)
	got, err := client.CoreV1().Pods(ownNamespace).Get(ctx, own.Name, metav1.GetOptions{})
	if err != nil || got.Spec.NodeName != "" {
		t.Errorf("the pod that names the shadow is on node %q (%v); a shadow schedules no pod", got.Spec.NodeName, err)
	}
}

// checkMetrics checks that the scheduler counts the shadow's outcomes as
// the records have them, and the pod that names the shadow.
func checkMetrics(t *testing.T, s *framework.Scheduler, outcomes map[record.ShadowOutcome]int) {
	t.Helper()
	_, families, err := framework.Scrape(s.MetricsURL)
	if err != nil {
		t.Fatal(err)
	}
	counted := map[record.ShadowOutcome]int{}
	if f := families["schedscope_shadow_attempts_total"]; f != nil {
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["profile"] != live || labels["shadow"] != shadow {
				t.Errorf("schedscope_shadow_attempts_total has a series of %v", labels)
			}
			counted[record.ShadowOutcome(labels["outcome"])] = int(m.GetCounter().GetValue())
		}
	}
	if diff := cmp.Diff(outcomes, counted); diff != "" {
		t.Errorf("schedscope_shadow_attempts_total by outcome, against the records (-records +metric):\n%s", diff)
	}
	ownPods := 0.0
	if f := families["schedscope_shadow_pods_total"]; f != nil && len(f.GetMetric()) == 1 {
		ownPods = f.GetMetric()[0].GetCounter().GetValue()
	}
	if ownPods != 1 {
		t.Errorf("schedscope_shadow_pods_total is %v, want 1: the pod that names the shadow", ownPods)
	}
}

func shadowNode(run record.ShadowRun) string {
	if run.Attempt == nil {
		return ""
	}
	return run.Attempt.SelectedNode
}

// settledRecords waits until every pod is bound or was found unschedulable
// in its latest attempt, and returns every attempt's record.
func settledRecords(ctx context.Context, t *testing.T, client kubernetes.Interface, s *framework.Scheduler) []*record.Attempt {
	t.Helper()
	var records []*record.Attempt
	err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
		l, err := framework.ListRecords(s.StreamURL)
		if err != nil {
			return false, err
		}
		latest := map[string]*record.Attempt{}
		records = records[:0]
		for _, r := range l.Items {
			records = append(records, r.Attempt)
			latest[r.Attempt.Pod.Name] = r.Attempt
		}
		pods, err := client.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		for _, p := range pods.Items {
			rec := latest[p.Name]
			if rec == nil || p.Spec.NodeName == "" && rec.Result != record.ResultUnschedulable {
				return false, nil
			}
		}
		return len(pods.Items) == numPods, nil
	})
	if err != nil {
		t.Fatalf("waiting for the workload to settle: %v\n%s", err, s.Tail())
	}
	return records
}

// makeNodes returns nodes of distinct sizes across three zones, some
// tainted.
func makeNodes(rng *rand.Rand) []*v1.Node {
	var nodes []*v1.Node
	for i := range numNodes {
		name := fmt.Sprintf("fi-node-%02d", i)
		n := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
			v1.LabelHostname:     name,
			v1.LabelTopologyZone: fmt.Sprintf("zone-%d", i%3),
			"example.com/cores":  fmt.Sprint(4 + 2*i),
		}}}
		switch rng.IntN(5) {
		case 0:
			n.Spec.Taints = []v1.Taint{{Key: "dedicated", Value: "batch", Effect: v1.TaintEffectNoSchedule}}
		case 1:
			n.Spec.Taints = []v1.Taint{{Key: "spot", Value: "true", Effect: v1.TaintEffectPreferNoSchedule}}
		}
		capacity := v1.ResourceList{
			v1.ResourceCPU:    *resource.NewMilliQuantity(int64(4000+2000*i), resource.DecimalSI),
			v1.ResourceMemory: *resource.NewQuantity(int64(8+3*i)<<30, resource.BinarySI),
			v1.ResourcePods:   resource.MustParse("110"),
		}
		n.Status = v1.NodeStatus{Capacity: capacity, Allocatable: capacity,
			Conditions: []v1.NodeCondition{{Type: v1.NodeReady, Status: v1.ConditionTrue}}}
		nodes = append(nodes, n)
	}
	return nodes
}

// makePods returns a mixed workload; about one pod in twelve fits no node.
func makePods(rng *rand.Rand) []*v1.Pod {
	apps := []string{"web", "api", "batch", "cache"}
	var pods []*v1.Pod
	for i := range numPods {
		app := apps[rng.IntN(len(apps))]
		p := &v1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("fi-pod-%03d", i), Namespace: namespace, Labels: map[string]string{"app": app}},
			Spec: v1.PodSpec{
				SchedulerName: live,
				Containers: []v1.Container{{Name: "main", Image: "registry.k8s.io/pause:3.10", Resources: v1.ResourceRequirements{Requests: v1.ResourceList{
					v1.ResourceCPU:    *resource.NewMilliQuantity(int64(100+rng.IntN(1500)), resource.DecimalSI),
					v1.ResourceMemory: *resource.NewQuantity(int64(128+rng.IntN(2048))<<20, resource.BinarySI),
				}}}},
				Affinity: &v1.Affinity{},
			},
		}
		if rng.IntN(3) == 0 {
			p.Spec.Tolerations = []v1.Toleration{{Key: "dedicated", Operator: v1.TolerationOpEqual, Value: "batch", Effect: v1.TaintEffectNoSchedule}}
		}
		switch rng.IntN(6) {
		case 0:
			p.Spec.Affinity.NodeAffinity = &v1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &v1.NodeSelector{NodeSelectorTerms: []v1.NodeSelectorTerm{{
				MatchExpressions: []v1.NodeSelectorRequirement{{Key: "example.com/cores", Operator: v1.NodeSelectorOpGt, Values: []string{fmt.Sprint(4 + 2*rng.IntN(16))}}},
			}}}}
		case 1:
			p.Spec.Affinity.NodeAffinity = &v1.NodeAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []v1.PreferredSchedulingTerm{{
				Weight: 50, Preference: v1.NodeSelectorTerm{MatchExpressions: []v1.NodeSelectorRequirement{{Key: v1.LabelTopologyZone, Operator: v1.NodeSelectorOpIn, Values: []string{fmt.Sprintf("zone-%d", rng.IntN(3))}}}},
			}}}
		}
		selector := &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}}
		switch rng.IntN(6) {
		case 0:
			p.Spec.Affinity.PodAntiAffinity = &v1.PodAntiAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []v1.WeightedPodAffinityTerm{{
				Weight: 50, PodAffinityTerm: v1.PodAffinityTerm{TopologyKey: v1.LabelHostname, LabelSelector: selector},
			}}}
		case 1:
			p.Spec.Affinity.PodAntiAffinity = &v1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []v1.PodAffinityTerm{{
				TopologyKey: v1.LabelHostname, LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": app, "spread": "host"}},
			}}}
			p.Labels["spread"] = "host"
		case 2:
			p.Spec.Affinity.PodAffinity = &v1.PodAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []v1.WeightedPodAffinityTerm{{
				Weight: 30, PodAffinityTerm: v1.PodAffinityTerm{TopologyKey: v1.LabelTopologyZone, LabelSelector: selector},
			}}}
		case 3:
			p.Spec.TopologySpreadConstraints = []v1.TopologySpreadConstraint{{
				MaxSkew: 2, TopologyKey: v1.LabelTopologyZone, WhenUnsatisfiable: v1.DoNotSchedule, LabelSelector: selector,
			}}
		case 4:
			p.Spec.TopologySpreadConstraints = []v1.TopologySpreadConstraint{{
				MaxSkew: 1, TopologyKey: v1.LabelHostname, WhenUnsatisfiable: v1.ScheduleAnyway, LabelSelector: selector,
			}}
		}
		if rng.IntN(12) == 0 {
			// More CPU than any node has.
			p.Spec.Containers[0].Resources.Requests[v1.ResourceCPU] = resource.MustParse("200")
		}
		pods = append(pods, p)
	}
	return pods
}

func TestMain(m *testing.M) {
	if _, err := framework.Binary("schedscope-scheduler"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(m.Run())
}
