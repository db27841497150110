package scheduler

import (
	"context"
	"slices"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	st "k8s.io/kubernetes/pkg/scheduler/testing"

	"github.com/schedscope/schedscope/pkg/record"
	"github.com/schedscope/schedscope/test/framework"
)

// expectRejected fails unless node was rejected by plugin with a reason containing reason.
func expectRejected(t *testing.T, r *record.Attempt, node, plugin, reason string) {
	t.Helper()
	v := verdictOf(r, node)
	if v == nil || v.Verdict != record.VerdictRejected || v.Plugin != plugin {
		t.Errorf("verdict of %s = %+v, want rejected by %s", node, v, plugin)
		return
	}
	if !strings.Contains(strings.Join(v.Reasons, "; "), reason) {
		t.Errorf("reasons of %s = %q, want one containing %q", node, v.Reasons, reason)
	}
}

func expectPassed(t *testing.T, r *record.Attempt, nodes ...string) {
	t.Helper()
	for _, node := range nodes {
		if v := verdictOf(r, node); v == nil || v.Verdict != record.VerdictPassed {
			t.Errorf("verdict of %s = %+v, want passed", node, v)
		}
	}
}

// scheduled creates pod, waits for it to be bound and for its record, and
// checks that both name the same node.
func scheduled(t *testing.T, pod *v1.Pod) (*record.Attempt, string) {
	t.Helper()
	pod = createPod(t, pod)
	node := waitForBinding(t, pod)
	rec, _ := waitForRecord(t, pod.UID, record.ResultScheduled)
	if rec.SelectedNode != node {
		t.Errorf("record selected %q, pod is bound to %q", rec.SelectedNode, node)
	}
	if rec.Profile != pod.Spec.SchedulerName {
		t.Errorf("record profile %q, want %q", rec.Profile, pod.Spec.SchedulerName)
	}
	expectTrace(t, rec)
	return rec, node
}

func unschedulable(t *testing.T, pod *v1.Pod) *record.Attempt {
	t.Helper()
	pod = createPod(t, pod)
	rec, _ := waitForRecord(t, pod.UID, record.ResultUnschedulable)
	expectTrace(t, rec)
	return rec
}

func cpuMem(cpu, mem string) map[v1.ResourceName]string {
	return map[v1.ResourceName]string{v1.ResourceCPU: cpu, v1.ResourceMemory: mem}
}

func TestInsufficientResources(t *testing.T) {
	ns := createNamespace(t)
	createNodes(t,
		nodeSpec{name: "res-small", cpu: "1", memory: "1Gi"},
		nodeSpec{name: "res-big", cpu: "8", memory: "16Gi"},
	)
	rec, node := scheduled(t, st.MakePod().Namespace(ns).Name("fits-big").SchedulerName(profileDefault).Req(cpuMem("2", "2Gi")).Obj())
	if node != "res-big" {
		t.Errorf("bound to %s, want res-big", node)
	}
	expectRejected(t, rec, "res-small", "NodeResourcesFit", "Insufficient cpu")
	expectRejected(t, rec, "res-small", "NodeResourcesFit", "Insufficient memory")
	expectPassed(t, rec, "res-big")
	if rec.Scores == nil || rec.Scores.SkippedReason != record.ScoringSkippedSingleNode {
		t.Errorf("scores = %+v, want scoring skipped for the single feasible node", rec.Scores)
	}

	rec = unschedulable(t, st.MakePod().Namespace(ns).Name("too-big").SchedulerName(profileDefault).Req(cpuMem("100", "1Gi")).Obj())
	expectRejected(t, rec, "res-small", "NodeResourcesFit", "Insufficient cpu")
	expectRejected(t, rec, "res-big", "NodeResourcesFit", "Insufficient cpu")
	if !strings.Contains(rec.Message, "nodes are available") || rec.FailedPoint != record.Filter {
		t.Errorf("message %q failed point %q, want the scheduler's FailedScheduling message at Filter", rec.Message, rec.FailedPoint)
	}
	if rec.Nodes.Feasible != 0 || rec.Nodes.Evaluated < 2 {
		t.Errorf("node counts %+v, want every node evaluated and none feasible", rec.Nodes)
	}
}

// A pod that names its node is never queued by a scheduler: schedscope
// must neither schedule nor record it.
func TestNodeName(t *testing.T) {
	ns := createNamespace(t)
	createNodes(t, nodeSpec{name: "nn-1", cpu: "2", memory: "2Gi"}, nodeSpec{name: "nn-2", cpu: "2", memory: "2Gi"})
	named := createPod(t, st.MakePod().Namespace(ns).Name("named").SchedulerName(profileDefault).Node("nn-2").Obj())
	// A pod scheduled after it proves the scheduler had the chance to record it.
	_, _ = scheduled(t, st.MakePod().Namespace(ns).Name("after").SchedulerName(profileDefault).Obj())
	l, err := framework.ListRecords(sched.StreamURL)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range l.Items {
		if r.Attempt.Pod.UID == string(named.UID) {
			t.Errorf("pod with spec.nodeName was recorded: %+v", r.Attempt)
		}
	}
}

func TestNodeSelector(t *testing.T) {
	ns := createNamespace(t)
	createNodes(t,
		nodeSpec{name: "sel-ssd", cpu: "2", memory: "2Gi", labels: map[string]string{"disktype": "ssd"}},
		nodeSpec{name: "sel-hdd", cpu: "2", memory: "2Gi", labels: map[string]string{"disktype": "hdd"}},
	)
	rec, node := scheduled(t, st.MakePod().Namespace(ns).Name("wants-ssd").SchedulerName(profileDefault).NodeSelector(map[string]string{"disktype": "ssd"}).Obj())
	if node != "sel-ssd" {
		t.Errorf("bound to %s, want sel-ssd", node)
	}
	expectRejected(t, rec, "sel-hdd", "NodeAffinity", "didn't match Pod's node affinity/selector")
}

func TestNodeAffinityOperators(t *testing.T) {
	ns := createNamespace(t)
	createNodes(t,
		nodeSpec{name: "na-gold", cpu: "2", memory: "2Gi", labels: map[string]string{"tier": "gold", "cores": "8"}},
		nodeSpec{name: "na-silver", cpu: "2", memory: "2Gi", labels: map[string]string{"tier": "silver", "cores": "4"}},
		nodeSpec{name: "na-plain", cpu: "2", memory: "2Gi", labels: map[string]string{"cores": "2"}},
	)
	all := []string{"na-gold", "na-silver", "na-plain"}
	tests := []struct {
		name     string
		op       v1.NodeSelectorOperator
		key      string
		values   []string
		feasible []string
	}{
		{"in", v1.NodeSelectorOpIn, "tier", []string{"gold"}, []string{"na-gold"}},
		{"notin", v1.NodeSelectorOpNotIn, "tier", []string{"gold"}, []string{"na-silver", "na-plain"}},
		{"exists", v1.NodeSelectorOpExists, "tier", nil, []string{"na-gold", "na-silver"}},
		{"doesnotexist", v1.NodeSelectorOpDoesNotExist, "tier", nil, []string{"na-plain"}},
		{"gt", v1.NodeSelectorOpGt, "cores", []string{"5"}, []string{"na-gold"}},
		{"lt", v1.NodeSelectorOpLt, "cores", []string{"3"}, []string{"na-plain"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := st.MakePod().Namespace(ns).Name("op-" + tt.name).SchedulerName(profileDefault).Obj()
			pod.Spec.Affinity = &v1.Affinity{NodeAffinity: &v1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &v1.NodeSelector{
				NodeSelectorTerms: []v1.NodeSelectorTerm{{MatchExpressions: []v1.NodeSelectorRequirement{{Key: tt.key, Operator: tt.op, Values: tt.values}}}},
			}}}
			rec, node := scheduled(t, pod)
			if !slices.Contains(tt.feasible, node) {
				t.Errorf("bound to %s, want one of %v", node, tt.feasible)
			}
			for _, n := range all {
				if slices.Contains(tt.feasible, n) {
					expectPassed(t, rec, n)
				} else {
					expectRejected(t, rec, n, "NodeAffinity", "didn't match Pod's node affinity/selector")
				}
			}
		})
	}

	t.Run("preferred", func(t *testing.T) {
		pod := st.MakePod().Namespace(ns).Name("prefers-silver").SchedulerName(profileDefault).Obj()
		pod.Spec.Affinity = &v1.Affinity{NodeAffinity: &v1.NodeAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []v1.PreferredSchedulingTerm{
			{Weight: 80, Preference: v1.NodeSelectorTerm{MatchExpressions: []v1.NodeSelectorRequirement{{Key: "tier", Operator: v1.NodeSelectorOpIn, Values: []string{"silver"}}}}},
			{Weight: 20, Preference: v1.NodeSelectorTerm{MatchExpressions: []v1.NodeSelectorRequirement{{Key: "tier", Operator: v1.NodeSelectorOpIn, Values: []string{"gold"}}}}},
		}}}
		rec, node := scheduled(t, pod)
		if node != "na-silver" {
			t.Errorf("bound to %s, want na-silver", node)
		}
		for node, want := range map[string][2]int64{"na-silver": {80, 100}, "na-gold": {20, 25}, "na-plain": {0, 0}} {
			s, i := scoreOf(t, rec, node, "NodeAffinity")
			weight := rec.Scores.Plugins[i].Weight
			if s.Raw[i] != want[0] || s.Normalized[i] != want[1] || s.Weighted[i] != want[1]*weight {
				t.Errorf("NodeAffinity score of %s: raw %d normalized %d weighted %d, want %d %d %d", node, s.Raw[i], s.Normalized[i], s.Weighted[i], want[0], want[1], want[1]*weight)
			}
		}
		if rec.Scores.Nodes[0].Node != "na-silver" {
			t.Errorf("highest total is %s, want the chosen node na-silver", rec.Scores.Nodes[0].Node)
		}
	})
}

func TestInterPodAffinity(t *testing.T) {
	ns := createNamespace(t)
	zone := v1.LabelTopologyZone
	createNodes(t,
		nodeSpec{name: "ipa-a1", cpu: "2", memory: "2Gi", labels: map[string]string{zone: "a"}},
		nodeSpec{name: "ipa-a2", cpu: "2", memory: "2Gi", labels: map[string]string{zone: "a"}},
		nodeSpec{name: "ipa-b1", cpu: "2", memory: "2Gi", labels: map[string]string{zone: "b"}},
	)
	createPod(t, st.MakePod().Namespace(ns).Name("db").Label("app", "db").Node("ipa-b1").Obj())

	rec, node := scheduled(t, st.MakePod().Namespace(ns).Name("near-db").SchedulerName(profileDefault).PodAffinityExists("app", zone, st.PodAffinityWithRequiredReq).Obj())
	if node != "ipa-b1" {
		t.Errorf("affinity pod bound to %s, want ipa-b1", node)
	}
	expectRejected(t, rec, "ipa-a1", "InterPodAffinity", "didn't match pod affinity rules")
	expectRejected(t, rec, "ipa-a2", "InterPodAffinity", "didn't match pod affinity rules")

	rec, node = scheduled(t, st.MakePod().Namespace(ns).Name("away-from-db").SchedulerName(profileDefault).PodAntiAffinityExists("app", zone, st.PodAntiAffinityWithRequiredReq).Obj())
	if node == "ipa-b1" {
		t.Errorf("anti-affinity pod bound to ipa-b1")
	}
	expectRejected(t, rec, "ipa-b1", "InterPodAffinity", "didn't match pod anti-affinity rules")
	expectPassed(t, rec, "ipa-a1", "ipa-a2")
}

func TestTaintsAndTolerations(t *testing.T) {
	ns := createNamespace(t)
	taint := func(effect v1.TaintEffect) []v1.Taint {
		return []v1.Taint{{Key: "dedicated", Value: "infra", Effect: effect}}
	}
	createNodes(t,
		nodeSpec{name: "tt-noschedule", cpu: "2", memory: "2Gi", taints: taint(v1.TaintEffectNoSchedule)},
		nodeSpec{name: "tt-noexecute", cpu: "2", memory: "2Gi", taints: taint(v1.TaintEffectNoExecute)},
		nodeSpec{name: "tt-prefer", cpu: "2", memory: "2Gi", taints: taint(v1.TaintEffectPreferNoSchedule)},
		nodeSpec{name: "tt-clean", cpu: "2", memory: "2Gi"},
	)
	const untolerated = "had untolerated taint"

	t.Run("no tolerations", func(t *testing.T) {
		rec, node := scheduled(t, st.MakePod().Namespace(ns).Name("intolerant").SchedulerName(profileDefault).Obj())
		if node != "tt-clean" {
			t.Errorf("bound to %s, want tt-clean", node)
		}
		expectRejected(t, rec, "tt-noschedule", "TaintToleration", untolerated)
		expectRejected(t, rec, "tt-noexecute", "TaintToleration", untolerated)
		expectPassed(t, rec, "tt-prefer", "tt-clean")
		prefer, i := scoreOf(t, rec, "tt-prefer", "TaintToleration")
		clean, _ := scoreOf(t, rec, "tt-clean", "TaintToleration")
		if prefer.Raw[i] != 1 || clean.Raw[i] != 0 || prefer.Normalized[i] != 0 || clean.Normalized[i] != 100 {
			t.Errorf("TaintToleration raw/normalized: tt-prefer %d/%d, tt-clean %d/%d; want 1/0 and 0/100",
				prefer.Raw[i], prefer.Normalized[i], clean.Raw[i], clean.Normalized[i])
		}
	})
	t.Run("tolerates NoSchedule", func(t *testing.T) {
		pod := st.MakePod().Namespace(ns).Name("tolerates-noschedule").SchedulerName(profileDefault).
			Toleration("dedicated").Obj()
		pod.Spec.Tolerations[0].Effect = v1.TaintEffectNoSchedule
		rec, _ := scheduled(t, pod)
		expectPassed(t, rec, "tt-noschedule")
		expectRejected(t, rec, "tt-noexecute", "TaintToleration", untolerated)
	})
	t.Run("tolerates NoExecute for a while", func(t *testing.T) {
		seconds := int64(60)
		pod := st.MakePod().Namespace(ns).Name("tolerates-noexecute").SchedulerName(profileDefault).Obj()
		pod.Spec.Tolerations = []v1.Toleration{{Key: "dedicated", Operator: v1.TolerationOpEqual, Value: "infra", Effect: v1.TaintEffectNoExecute, TolerationSeconds: &seconds}}
		rec, _ := scheduled(t, pod)
		expectPassed(t, rec, "tt-noexecute")
		expectRejected(t, rec, "tt-noschedule", "TaintToleration", untolerated)
	})
}

func TestHostPortConflict(t *testing.T) {
	ns := createNamespace(t)
	createNodes(t, nodeSpec{name: "hp-1", cpu: "2", memory: "2Gi"}, nodeSpec{name: "hp-2", cpu: "2", memory: "2Gi"})
	port := []v1.ContainerPort{{ContainerPort: 8080, HostPort: 8080, Protocol: v1.ProtocolTCP}}
	createPod(t, st.MakePod().Namespace(ns).Name("holder").Node("hp-1").ContainerPort(port).Obj())
	rec, node := scheduled(t, st.MakePod().Namespace(ns).Name("wants-port").SchedulerName(profileDefault).ContainerPort(port).Obj())
	if node != "hp-2" {
		t.Errorf("bound to %s, want hp-2", node)
	}
	expectRejected(t, rec, "hp-1", "NodePorts", "didn't have free ports for the requested pod ports")
}

func TestCordonedNode(t *testing.T) {
	ns := createNamespace(t)
	createNodes(t, nodeSpec{name: "cordon-1", cpu: "2", memory: "2Gi", unschedulable: true}, nodeSpec{name: "cordon-2", cpu: "2", memory: "2Gi"})
	rec, node := scheduled(t, st.MakePod().Namespace(ns).Name("avoids-cordon").SchedulerName(profileDefault).Obj())
	if node != "cordon-2" {
		t.Errorf("bound to %s, want cordon-2", node)
	}
	expectRejected(t, rec, "cordon-1", "NodeUnschedulable", "were unschedulable")
}

func TestImageLocality(t *testing.T) {
	ns := createNamespace(t)
	const image = "registry.example/analytics:1.0"
	createNodes(t,
		nodeSpec{name: "img-has", cpu: "2", memory: "2Gi", images: []v1.ContainerImage{{Names: []string{image}, SizeBytes: 800 * 1024 * 1024}}},
		nodeSpec{name: "img-lacks", cpu: "2", memory: "2Gi"},
	)
	pod := st.MakePod().Namespace(ns).Name("analytics").SchedulerName(profileDefault).Container(image).Obj()
	rec, node := scheduled(t, pod)
	if node != "img-has" {
		t.Errorf("bound to %s, want img-has", node)
	}
	has, i := scoreOf(t, rec, "img-has", "ImageLocality")
	lacks, _ := scoreOf(t, rec, "img-lacks", "ImageLocality")
	if has.Raw[i] <= 0 || lacks.Raw[i] != 0 {
		t.Errorf("ImageLocality raw: img-has %d, img-lacks %d; want positive and 0", has.Raw[i], lacks.Raw[i])
	}
}

func TestResourceScores(t *testing.T) {
	ns := createNamespace(t)
	createNodes(t, nodeSpec{name: "rs-loaded", cpu: "4", memory: "8Gi"}, nodeSpec{name: "rs-empty", cpu: "4", memory: "8Gi"})
	createPod(t, st.MakePod().Namespace(ns).Name("load").Node("rs-loaded").Req(cpuMem("2", "4Gi")).Obj())
	rec, node := scheduled(t, st.MakePod().Namespace(ns).Name("spreads").SchedulerName(profileDefault).Req(cpuMem("1", "1Gi")).Obj())
	if node != "rs-empty" {
		t.Errorf("bound to %s, want rs-empty", node)
	}
	// LeastAllocated: mean over cpu and memory of free*100/allocatable after placing the pod.
	// rs-loaded: cpu 1/4 -> 25, memory 3/8 -> 37; rs-empty: cpu 3/4 -> 75, memory 7/8 -> 87.
	// BalancedAllocation scores the change in balance, 50 + (50 + with - without) / 2,
	// where balance is (1 - |cpu fraction - memory fraction| / 2) * 100:
	// with the pod 93 on both nodes, without it 100 on both, so 71.
	for node, want := range map[string][2]int64{"rs-loaded": {31, 71}, "rs-empty": {81, 71}} {
		s, fit := scoreOf(t, rec, node, "NodeResourcesFit")
		_, balanced := scoreOf(t, rec, node, "NodeResourcesBalancedAllocation")
		if s.Raw[fit] != want[0] || s.Raw[balanced] != want[1] {
			t.Errorf("%s: NodeResourcesFit %d, NodeResourcesBalancedAllocation %d; want %d, %d", node, s.Raw[fit], s.Raw[balanced], want[0], want[1])
		}
		var sum int64
		for _, w := range s.Weighted {
			sum += w
		}
		if sum+s.Extenders != s.Total {
			t.Errorf("%s: weighted scores add up to %d, total is %d", node, sum, s.Total)
		}
	}
	if rec.Scores.Nodes[0].Node != rec.SelectedNode {
		t.Errorf("highest total %s is not the selected node %s", rec.Scores.Nodes[0].Node, rec.SelectedNode)
	}
}

func TestPreemption(t *testing.T) {
	ns := createNamespace(t)
	ctx := context.Background()
	for name, value := range map[string]int32{"scenario-low": 100, "scenario-high": 1000} {
		pc, err := client.SchedulingV1().PriorityClasses().Create(ctx, &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Value: value}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = client.SchedulingV1().PriorityClasses().Delete(context.Background(), pc.Name, metav1.DeleteOptions{})
		})
	}
	createNodes(t, nodeSpec{name: "pre-1", cpu: "2", memory: "4Gi"})
	low := st.MakePod().Namespace(ns).Name("low").SchedulerName(profileDefault).Req(cpuMem("1500m", "1Gi")).Obj()
	low.Spec.PriorityClassName = "scenario-low"
	low.Spec.TerminationGracePeriodSeconds = new(int64)
	low = createPod(t, low)
	waitForBinding(t, low)

	high := st.MakePod().Namespace(ns).Name("high").SchedulerName(profileDefault).Req(cpuMem("1500m", "1Gi")).Obj()
	high.Spec.PriorityClassName = "scenario-high"
	high = createPod(t, high)
	rec, all := waitForRecord(t, high.UID, record.ResultScheduled)
	if rec.SelectedNode != "pre-1" {
		t.Errorf("high-priority pod scheduled on %q, want pre-1", rec.SelectedNode)
	}
	first := all[0]
	if first.Result != record.ResultUnschedulable || first.NominatedNode != "pre-1" {
		t.Fatalf("first attempt: result %q nominated %q, want unschedulable with pre-1 nominated", first.Result, first.NominatedNode)
	}
	expectRejected(t, first, "pre-1", "NodeResourcesFit", "Insufficient cpu")
	expectTrace(t, first)
	expectTrace(t, rec)
	if len(first.Victims) != 1 || first.Victims[0].Name != "low" || first.Victims[0].UID != string(low.UID) {
		t.Errorf("victims = %+v, want the low-priority pod", first.Victims)
	}
	var ranPostFilter bool
	for _, p := range first.Points {
		ranPostFilter = ranPostFilter || p.Point == record.PostFilter
	}
	if !ranPostFilter {
		t.Errorf("first attempt has no PostFilter run: %+v", first.Points)
	}
}

func TestMultipleProfiles(t *testing.T) {
	ns := createNamespace(t)
	createNodes(t, nodeSpec{name: "mp-small", cpu: "4", memory: "8Gi"}, nodeSpec{name: "mp-large", cpu: "16", memory: "32Gi"})
	createPod(t, st.MakePod().Namespace(ns).Name("load").Node("mp-small").Req(cpuMem("2", "4Gi")).Obj())

	spread, node := scheduled(t, st.MakePod().Namespace(ns).Name("spread").SchedulerName(profileDefault).Req(cpuMem("1", "1Gi")).Obj())
	if node != "mp-large" {
		t.Errorf("default profile bound to %s, want the emptier mp-large", node)
	}
	packed, node := scheduled(t, st.MakePod().Namespace(ns).Name("packed").SchedulerName(profileBinpack).Req(cpuMem("1", "1Gi")).Obj())
	if node != "mp-small" {
		t.Errorf("bin-packing profile bound to %s, want the fuller mp-small", node)
	}
	names := func(r *record.Attempt) map[string]int64 {
		m := map[string]int64{}
		for _, p := range r.Scores.Plugins {
			m[p.Name] = p.Weight
		}
		return m
	}
	if w := names(packed); w["NodeResourcesFit"] != 5 || w["ImageLocality"] != 0 {
		t.Errorf("bin-packing score plugins %v, want NodeResourcesFit weight 5 and no ImageLocality", w)
	}
	if w := names(spread); w["NodeResourcesFit"] != 1 || w["ImageLocality"] != 1 {
		t.Errorf("default score plugins %v, want NodeResourcesFit and ImageLocality weight 1", w)
	}

	other := createPod(t, st.MakePod().Namespace(ns).Name("not-ours").SchedulerName(v1.DefaultSchedulerName).Obj())
	// Sync point: a later pod of ours has its record, so not-ours had its chance.
	_, _ = scheduled(t, st.MakePod().Namespace(ns).Name("sync").SchedulerName(profileDefault).Obj())
	l, err := framework.ListRecords(sched.StreamURL)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range l.Items {
		if r.Attempt.Pod.UID == string(other.UID) {
			t.Errorf("pod of default-scheduler was recorded: %+v", r.Attempt)
		}
	}
	p, err := client.CoreV1().Pods(ns).Get(context.Background(), other.Name, metav1.GetOptions{})
	if err != nil || p.Spec.NodeName != "" {
		t.Errorf("pod of default-scheduler: node %q err %v, want left alone", p.Spec.NodeName, err)
	}
}
