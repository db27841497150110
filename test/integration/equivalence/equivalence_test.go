// Package equivalence checks that schedscope decides exactly as plain
// kube-scheduler does with the same configuration.
package equivalence

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	kubectlapp "github.com/schedscope/schedscope/cmd/kubectl-schedscope/app"
	"github.com/schedscope/schedscope/pkg/record"
	"github.com/schedscope/schedscope/pkg/sidecar/explain"
	"github.com/schedscope/schedscope/test/framework"
)

const (
	namespace     = "equivalence"
	schedulerName = "equivalence"
	numNodes      = 16
	numPods       = 120
	seed          = 20261202
)

// config is the upstream default profile, with NodeAffinity scoring
// weighted up: every pod prefers each node by a distinct weight, which keeps
// two nodes from ever tying, so that the choice is never left to chance.
const config = `apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
leaderElection:
  leaderElect: false
profiles:
- schedulerName: equivalence
  plugins:
    score:
      enabled:
      - name: NodeAffinity
        weight: 100
`

// shadowProfile shadows the equivalence profile in shadowConfig.
const shadowProfile = "equivalence-binpack"

// shadowConfig is config with a bin-packing shadow of its profile, which
// decides otherwise: NodeResourcesFit scores with MostAllocated and weighs
// 50.
const shadowConfig = config + `- schedulerName: equivalence-binpack
  plugins:
    score:
      enabled:
      - name: NodeAffinity
        weight: 100
      - name: NodeResourcesFit
        weight: 50
  pluginConfig:
  - name: NodeResourcesFit
    args:
      scoringStrategy:
        type: MostAllocated
`

// outOfTreeConfig is config with the example custom scheduler's
// out-of-tree plugins (examples/custom-scheduler): QOSSort sorts the queue
// instead of PrioritySort; NodeRoom (PreFilter, Filter) and NoFit
// (PostFilter) are enabled through multiPoint; NodeLabelScore (Score,
// NormalizeScore) scores beside NodeAffinity. No node has a score label,
// so NodeLabelScore cannot make two nodes tie.
const outOfTreeConfig = `apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
leaderElection:
  leaderElect: false
profiles:
- schedulerName: equivalence
  plugins:
    queueSort:
      enabled:
      - name: QOSSort
      disabled:
      - name: "*"
    multiPoint:
      enabled:
      - name: NodeRoom
      - name: NoFit
    score:
      enabled:
      - name: NodeAffinity
        weight: 100
      - name: NodeLabelScore
        weight: 2
`

// roomLabel is the example's NodeRoom label: how many pods a node has room
// for. Every fourth node has room for two pods only.
const roomLabel = "example.com/room"

// TestDecisionEquivalence schedules one seeded workload with plain
// kube-scheduler and with schedscope, with schedscope and a shadow profile,
// and with the example custom scheduler built without and with schedscope,
// and compares every binding.
func TestDecisionEquivalence(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	cp, err := framework.StartControlPlane(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer cp.Stop()
	client := cp.Client

	rng := rand.New(rand.NewPCG(seed, seed))
	nodes := makeNodes(rng)
	pods := makePods(rng)
	for _, n := range nodes {
		if err := framework.CreateNode(ctx, client, n, n.Status.Capacity); err != nil {
			t.Fatal(err)
		}
	}
	for name, value := range map[string]int32{"eq-low": 10, "eq-mid": 100, "eq-high": 1000} {
		if _, err := client.SchedulingV1().PriorityClasses().Create(ctx, &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Value: value}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := client.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	// Pods are created one at a time, each once the one before is bound, so
	// that both schedulers decide the same pods in the same order on the same
	// cluster state, whatever the timing.
	runWithConfig := func(t *testing.T, binary, config string, extra ...string) (map[string]string, *framework.Scheduler) {
		s, err := cp.StartScheduler(ctx, binary, binary, config, extra...)
		if err != nil {
			t.Fatal(err)
		}
		bindings := map[string]string{}
		for _, p := range pods {
			if _, err := client.CoreV1().Pods(namespace).Create(ctx, p.DeepCopy(), metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			err := wait.PollUntilContextTimeout(ctx, 5*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
				got, err := client.CoreV1().Pods(namespace).Get(ctx, p.Name, metav1.GetOptions{})
				if err != nil {
					return false, err
				}
				bindings[p.Name] = got.Spec.NodeName
				return got.Spec.NodeName != "", nil
			})
			if err != nil {
				s.Stop()
				t.Fatalf("%s did not bind %s: %v\n%s", binary, p.Name, err, s.Tail())
			}
		}
		return bindings, s
	}

	deletePods := func(t *testing.T) {
		if err := framework.DeletePods(ctx, client, namespace); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name, plain, observed, config string
		// observedConfig and observedFlags, when set, are the observed
		// scheduler's configuration and extra flags.
		observedConfig string
		observedFlags  []string
		// outOfTree are the example's plugins the records must show.
		outOfTree bool
	}{
		{name: "in-tree plugins", plain: "kube-scheduler", observed: "schedscope-scheduler", config: config},
		{
			name: "in-tree plugins with a shadow", plain: "kube-scheduler", observed: "schedscope-scheduler", config: config,
			observedConfig: shadowConfig, observedFlags: []string{"--shadow-profile=" + shadowProfile + "=" + schedulerName},
		},
		{name: "out-of-tree plugins", plain: "example-scheduler-plain", observed: "example-scheduler", config: outOfTreeConfig, outOfTree: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			plain, plainScheduler := runWithConfig(t, tt.plain, tt.config)
			plainScheduler.Stop()
			deletePods(t)

			observedConfig := tt.config
			if tt.observedConfig != "" {
				observedConfig = tt.observedConfig
			}
			since := time.Now()
			observed, schedscope := runWithConfig(t, tt.observed, observedConfig, tt.observedFlags...)
			defer deletePods(t)
			defer schedscope.Stop()
			if diff := cmp.Diff(plain, observed); diff != "" {
				t.Errorf("bindings differ (-%s +%s):\n%s", tt.plain, tt.observed, diff)
			}

			records := scheduledRecords(t, schedscope.StreamURL)
			if len(records) != numPods {
				t.Fatalf("%d scheduled records, want %d", len(records), numPods)
			}
			for name, rec := range records {
				if rec.SelectedNode != observed[name] {
					t.Errorf("pod %s: record selected %s, bound to %s", name, rec.SelectedNode, observed[name])
				}
				checkScoresReproduceChoice(t, name, rec)
			}
			if tt.outOfTree {
				checkOutOfTreePlugins(t, records)
			}
			if tt.observedFlags != nil {
				checkShadowRan(t, records)
				checkShadowInvisible(ctx, t, client, since)
			}
		})
	}
}

// checkShadowRan checks that the shadow ran in every attempt, and that it
// decided otherwise at times: the bindings that equal plain
// kube-scheduler's are not so because the shadow did nothing.
func checkShadowRan(t *testing.T, records map[string]*record.Attempt) {
	t.Helper()
	outcomes := map[record.ShadowOutcome]int{}
	for name, rec := range records {
		if len(rec.Shadows) != 1 || rec.Shadows[0].Profile != shadowProfile {
			t.Errorf("pod %s: shadow runs %+v, want one of %s", name, rec.Shadows, shadowProfile)
			continue
		}
		outcomes[rec.Shadows[0].Outcome]++
	}
	if outcomes[record.ShadowOtherNode] == 0 {
		t.Errorf("shadow outcomes %v: the bin-packing shadow never chose another node", outcomes)
	}
	t.Logf("shadow outcomes: %v", outcomes)
}

// checkShadowInvisible checks that nothing the shadow did since is in the
// API server: no event of its profile, no pod nominated.
func checkShadowInvisible(ctx context.Context, t *testing.T, client kubernetes.Interface, since time.Time) {
	t.Helper()
	events, err := client.EventsV1().Events(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range events.Items {
		if e.ReportingController == shadowProfile || e.DeprecatedSource.Component == shadowProfile {
			t.Errorf("event %s/%s (%s, %s) by the shadow profile", e.Namespace, e.Name, e.Reason, e.Note)
		}
		if e.CreationTimestamp.After(since) && e.Regarding.Kind == "Pod" && e.Reason != "Scheduled" {
			t.Errorf("event %s/%s about pod %s: %s %s; the workload's pods are only scheduled", e.Namespace, e.Name, e.Regarding.Name, e.Reason, e.Note)
		}
	}
	pods, err := client.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods.Items {
		if p.Status.NominatedNodeName != "" {
			t.Errorf("pod %s is nominated to %s", p.Name, p.Status.NominatedNodeName)
		}
	}
}

// checkOutOfTreePlugins checks that the records show the example's plugins
// at work: NodeRoom's rejections with its own details, NodeLabelScore's
// scores, QOSSort nowhere (it sorts the queue, outside attempts).
func checkOutOfTreePlugins(t *testing.T, records map[string]*record.Attempt) {
	t.Helper()
	var rejected, detailed, scored int
	var shown bool
	for _, name := range slices.Sorted(maps.Keys(records)) {
		rec := records[name]
		if !shown && len(rec.Details) > 0 {
			// One pod as kubectl schedscope explain prints it.
			var out strings.Builder
			kubectlapp.PrintExplanation(&out, explain.Explain(rec, explain.Options{Group: explain.AllGroups}), true)
			t.Logf("pod %s, as kubectl schedscope explain prints it:\n%s", name, out.String())
			shown = true
		}
		for _, g := range rec.Filter {
			if g.Verdict == record.VerdictRejected && g.Plugin == "NodeRoom" {
				rejected++
			}
		}
		for _, d := range rec.Details {
			if d.Plugin == "NodeRoom" && d.Node != "" && strings.Contains(d.Detail, "has room for 2 pods") {
				detailed++
			}
		}
		if rec.Scores != nil {
			for _, p := range rec.Scores.Plugins {
				if p.Name == "NodeLabelScore" && p.Weight == 2 {
					scored++
				}
			}
		}
	}
	if rejected == 0 || detailed == 0 || scored == 0 {
		t.Errorf("records with NodeRoom rejections %d, with NodeRoom details %d, scored by NodeLabelScore %d: want each > 0", rejected, detailed, scored)
	}
	t.Logf("records with NodeRoom rejections %d, with NodeRoom details %d, scored by NodeLabelScore %d", rejected, detailed, scored)
}

// checkScoresReproduceChoice recomputes every node's total from the
// recorded weighted scores and checks the selected node is the one, unique,
// highest.
func checkScoresReproduceChoice(t *testing.T, pod string, rec *record.Attempt) {
	t.Helper()
	if rec.Scores == nil || rec.Scores.SkippedReason != "" {
		if rec.Nodes.Feasible != 1 {
			t.Errorf("pod %s: no scores recorded with %d feasible nodes", pod, rec.Nodes.Feasible)
		}
		return
	}
	best, bestTotal, tie := "", int64(-1), false
	for _, n := range rec.Scores.Nodes {
		var total int64
		for i, w := range n.Weighted {
			if want := n.Normalized[i] * rec.Scores.Plugins[i].Weight; w != want {
				t.Errorf("pod %s node %s plugin %s: weighted %d, normalized x weight %d", pod, n.Node, rec.Scores.Plugins[i].Name, w, want)
			}
			total += w
		}
		total += n.Extenders
		if total != n.Total {
			t.Errorf("pod %s node %s: weighted scores add to %d, recorded total %d", pod, n.Node, total, n.Total)
		}
		switch {
		case total > bestTotal:
			best, bestTotal, tie = n.Node, total, false
		case total == bestTotal:
			tie = true
		}
	}
	if tie {
		t.Errorf("pod %s: two nodes tie at %d; the workload must rule ties out", pod, bestTotal)
	}
	if best != rec.SelectedNode {
		t.Errorf("pod %s: highest recorded total is %s (%d), selected %s", pod, best, bestTotal, rec.SelectedNode)
	}
}

func scheduledRecords(t *testing.T, url string) map[string]*record.Attempt {
	t.Helper()
	out := map[string]*record.Attempt{}
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		l, err := framework.ListRecords(url)
		if err != nil {
			return false, err
		}
		for _, r := range l.Items {
			if r.Attempt.Result == record.ResultScheduled {
				out[r.Attempt.Pod.Name] = r.Attempt
			}
		}
		return len(out) == numPods, nil
	})
	if err != nil {
		t.Fatalf("have %d scheduled records: %v", len(out), err)
	}
	return out
}

// makeNodes returns nodes of distinct sizes across three zones, some tainted.
func makeNodes(rng *rand.Rand) []*v1.Node {
	var nodes []*v1.Node
	for i := range numNodes {
		n := &v1.Node{ObjectMeta: metav1.ObjectMeta{
			Name: fmt.Sprintf("eq-node-%02d", i),
			Labels: map[string]string{
				v1.LabelHostname:      fmt.Sprintf("eq-node-%02d", i),
				v1.LabelTopologyZone:  fmt.Sprintf("zone-%d", i%3),
				"schedscope.io/rank":  fmt.Sprint(i),
				"schedscope.io/cores": fmt.Sprint(4 + 2*i),
			},
		}}
		if i%4 == 0 {
			n.Labels[roomLabel] = "2"
		}
		switch rng.IntN(6) {
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

// makePods returns a mixed workload that fits the nodes.
func makePods(rng *rand.Rand) []*v1.Pod {
	apps := []string{"web", "api", "batch"}
	priorities := []string{"eq-low", "eq-mid", "eq-high"}
	var pods []*v1.Pod
	for i := range numPods {
		app := apps[rng.IntN(len(apps))]
		p := &v1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("eq-pod-%03d", i), Namespace: namespace, Labels: map[string]string{"app": app}},
			Spec: v1.PodSpec{
				SchedulerName:     schedulerName,
				PriorityClassName: priorities[rng.IntN(len(priorities))],
				Containers: []v1.Container{{Name: "main", Image: "registry.k8s.io/pause:3.10", Resources: v1.ResourceRequirements{Requests: v1.ResourceList{
					v1.ResourceCPU:    *resource.NewMilliQuantity(int64(100+rng.IntN(900)), resource.DecimalSI),
					v1.ResourceMemory: *resource.NewQuantity(int64(128+rng.IntN(1024))<<20, resource.BinarySI),
				}}}},
				Affinity: &v1.Affinity{NodeAffinity: &v1.NodeAffinity{PreferredDuringSchedulingIgnoredDuringExecution: distinctPreferences(rng)}},
			},
		}
		if rng.IntN(3) == 0 {
			p.Spec.Tolerations = []v1.Toleration{{Key: "dedicated", Operator: v1.TolerationOpEqual, Value: "batch", Effect: v1.TaintEffectNoSchedule}}
		}
		switch rng.IntN(5) {
		case 0:
			p.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution = &v1.NodeSelector{NodeSelectorTerms: []v1.NodeSelectorTerm{{
				MatchExpressions: []v1.NodeSelectorRequirement{{Key: "schedscope.io/cores", Operator: v1.NodeSelectorOpGt, Values: []string{fmt.Sprint(4 + 2*rng.IntN(8))}}},
			}}}
		case 1:
			p.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution = &v1.NodeSelector{NodeSelectorTerms: []v1.NodeSelectorTerm{{
				MatchExpressions: []v1.NodeSelectorRequirement{{Key: v1.LabelTopologyZone, Operator: v1.NodeSelectorOpNotIn, Values: []string{fmt.Sprintf("zone-%d", rng.IntN(3))}}},
			}}}
		}
		switch rng.IntN(5) {
		case 0:
			p.Spec.Affinity.PodAntiAffinity = &v1.PodAntiAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []v1.WeightedPodAffinityTerm{{
				Weight: 50, PodAffinityTerm: v1.PodAffinityTerm{TopologyKey: v1.LabelHostname, LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}}},
			}}}
		case 1:
			p.Spec.TopologySpreadConstraints = []v1.TopologySpreadConstraint{{
				MaxSkew: 4, TopologyKey: v1.LabelTopologyZone, WhenUnsatisfiable: v1.DoNotSchedule,
				LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}},
			}}
		case 2:
			p.Spec.TopologySpreadConstraints = []v1.TopologySpreadConstraint{{
				MaxSkew: 1, TopologyKey: v1.LabelHostname, WhenUnsatisfiable: v1.ScheduleAnyway,
				LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}},
			}}
		}
		pods = append(pods, p)
	}
	return pods
}

// distinctPreferences prefers every node by a different weight, 5 apart.
func distinctPreferences(rng *rand.Rand) []v1.PreferredSchedulingTerm {
	weights := rng.Perm(20)
	terms := make([]v1.PreferredSchedulingTerm, numNodes)
	for i := range numNodes {
		terms[i] = v1.PreferredSchedulingTerm{
			Weight:     int32(5 + 5*weights[i]),
			Preference: v1.NodeSelectorTerm{MatchExpressions: []v1.NodeSelectorRequirement{{Key: "schedscope.io/rank", Operator: v1.NodeSelectorOpIn, Values: []string{fmt.Sprint(i)}}}},
		}
	}
	return terms
}

func TestMain(m *testing.M) {
	if _, err := framework.Binary("kube-scheduler"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(m.Run())
}
