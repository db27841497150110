package hints

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/schedscope/schedscope/pkg/apis/schedscope/v1alpha1"
	"github.com/schedscope/schedscope/pkg/record"
	"github.com/schedscope/schedscope/pkg/record/recordtest"
)

func pod(cpu string, mod ...func(*v1.Pod)) *v1.Pod {
	p := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web", UID: "uid-web"},
		Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c", Resources: v1.ResourceRequirements{
			Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse(cpu)}}}}},
	}
	for _, m := range mod {
		m(p)
	}
	return p
}

func node(name, cpu string, mod ...func(*v1.Node)) *v1.Node {
	n := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{}}}
	n.Status.Allocatable = v1.ResourceList{v1.ResourceCPU: resource.MustParse(cpu), v1.ResourcePods: resource.MustParse("110")}
	for _, m := range mod {
		m(n)
	}
	return n
}

func tainted(key, value string) func(*v1.Node) {
	return func(n *v1.Node) {
		n.Spec.Taints = append(n.Spec.Taints, v1.Taint{Key: key, Value: value, Effect: v1.TaintEffectNoSchedule})
	}
}

func withMemory(memory string) func(*v1.Node) {
	return func(n *v1.Node) { n.Status.Allocatable[v1.ResourceMemory] = resource.MustParse(memory) }
}

func bound(cpu string, priority int32) *v1.Pod {
	p := pod(cpu)
	p.Spec.Priority = &priority
	return p
}

func nodes(ns ...Node) map[string]Node {
	m := map[string]Node{}
	for _, n := range ns {
		m[n.Node.Name] = n
	}
	return m
}

func TestCompute(t *testing.T) {
	never := v1.PreemptNever
	dbTaint := v1.Taint{Key: "dedicated", Value: "db", Effect: v1.TaintEffectNoSchedule}
	tests := []struct {
		name      string
		attempt   *record.Attempt
		pod       *v1.Pod
		nodes     map[string]Node
		showNodes bool
		want      []v1alpha1.Hint
	}{{
		name: "tolerate a taint",
		attempt: recordtest.MakeAttempt("shop", "web", "uid-web").Unschedulable("0/3 nodes are available").
			Rejected(TaintToleration, "node(s) had untolerated taint(s)", "a", "b", "c").Obj(),
		pod: pod("1"),
		nodes: nodes(Node{Node: node("a", "4", tainted("dedicated", "db"))}, Node{Node: node("b", "4", tainted("dedicated", "db"))},
			Node{Node: node("c", "4", tainted("dedicated", "db"), tainted("gpu", ""))}),
		showNodes: true,
		want: []v1alpha1.Hint{{Kind: v1alpha1.HintTolerate, Plugins: []string{TaintToleration}, Nodes: 2, NodeNames: []string{"a", "b"},
			Taint: &dbTaint, Message: "2 nodes would fit if the pod tolerated dedicated=db:NoSchedule (a, b)"}},
	}, {
		name: "lower the request, nodes hidden",
		attempt: recordtest.MakeAttempt("shop", "web", "uid-web").Unschedulable("0/2 nodes are available").
			Rejected(NodeResourcesFit, "Insufficient cpu", "small", "large").Obj(),
		pod:   pod("4"),
		nodes: nodes(Node{Node: node("small", "2")}, Node{Node: node("large", "4"), Pods: []*v1.Pod{bound("500m", 0)}}),
		// The requests that fit are large's free capacity: neither they nor
		// the node are told.
		want: []v1alpha1.Hint{{Kind: v1alpha1.HintLowerRequests, Plugins: []string{NodeResourcesFit}, Nodes: 2,
			Message: "2 nodes would fit with a lower cpu request"}},
	}, {
		name: "lower the request, nodes shown",
		attempt: recordtest.MakeAttempt("shop", "web", "uid-web").Unschedulable("0/1 nodes are available").
			Rejected(NodeResourcesFit, "Insufficient cpu", "large").Obj(),
		pod:       pod("4"),
		nodes:     nodes(Node{Node: node("large", "4"), Pods: []*v1.Pod{bound("500m", 0)}}),
		showNodes: true,
		want: []v1alpha1.Hint{{Kind: v1alpha1.HintLowerRequests, Plugins: []string{NodeResourcesFit}, Nodes: 1, NodeNames: []string{"large"},
			Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("3500m")}, Message: "lower the cpu request to 3500m to fit large"}},
	}, {
		name: "lower two requests, nodes hidden",
		attempt: recordtest.MakeAttempt("shop", "web", "uid-web").Unschedulable("0/3 nodes are available").
			Rejected(NodeResourcesFit, "Insufficient cpu, Insufficient memory", "mid", "full", "crowded").Obj(),
		pod: pod("4", func(p *v1.Pod) {
			p.Spec.Containers[0].Resources.Requests[v1.ResourceMemory] = resource.MustParse("8Gi")
		}),
		nodes: nodes(Node{Node: node("mid", "4", withMemory("6Gi")), Pods: []*v1.Pod{bound("1", 0)}},
			Node{Node: node("full", "4", withMemory("8Gi")), Pods: []*v1.Pod{bound("4", 0)}},
			Node{Node: node("crowded", "16", withMemory("4Gi"), func(n *v1.Node) { n.Status.Allocatable[v1.ResourcePods] = resource.MustParse("1") }),
				Pods: []*v1.Pod{bound("1", 0)}}),
		want: []v1alpha1.Hint{{Kind: v1alpha1.HintLowerRequests, Plugins: []string{NodeResourcesFit}, Nodes: 1,
			Message: "1 node would fit with lower cpu and memory requests"}},
	}, {
		name: "a label no node has",
		attempt: recordtest.MakeAttempt("shop", "web", "uid-web").Unschedulable("0/2 nodes are available").
			Rejected(NodeAffinity, "node(s) didn't match Pod's node affinity/selector", "a", "b").Obj(),
		pod:   pod("1", func(p *v1.Pod) { p.Spec.NodeSelector = map[string]string{"disk": "ssd"} }),
		nodes: nodes(Node{Node: node("a", "4")}, Node{Node: node("b", "4", tainted("x", "y"))}),
		want: []v1alpha1.Hint{{Kind: v1alpha1.HintAddNodeLabels, Plugins: []string{NodeAffinity}, Nodes: 1,
			Labels: map[string]string{"disk": "ssd"}, Message: "1 node would fit with label disk=ssd: add it to one, or change the pod's node selector or affinity"}},
	}, {
		name: "preemption the pod may not do",
		attempt: recordtest.MakeAttempt("shop", "web", "uid-web").Unschedulable("0/2 nodes are available").
			Rejected(NodeResourcesFit, "Insufficient cpu", "a", "b").Obj(),
		pod: pod("2", func(p *v1.Pod) { p.Spec.PreemptionPolicy = &never; prio := int32(100); p.Spec.Priority = &prio }),
		nodes: nodes(Node{Node: node("a", "2"), Pods: []*v1.Pod{bound("2", 0)}},
			Node{Node: node("b", "2"), Pods: []*v1.Pod{bound("2", 1000)}}),
		showNodes: true,
		want: []v1alpha1.Hint{{Kind: v1alpha1.HintPreempt, Plugins: []string{NodeResourcesFit}, Nodes: 1, NodeNames: []string{"a"},
			Message: "1 node would fit after preempting pods of lower priority (a): the pod's preemptionPolicy is Never"}},
	}, {
		name: "uncordon",
		attempt: recordtest.MakeAttempt("shop", "web", "uid-web").Unschedulable("0/1 nodes are available").
			Rejected(NodeUnschedulable, "node(s) were unschedulable", "a").Obj(),
		pod:       pod("1"),
		nodes:     nodes(Node{Node: node("a", "2", func(n *v1.Node) { n.Spec.Unschedulable = true })}),
		showNodes: true,
		want: []v1alpha1.Hint{{Kind: v1alpha1.HintUncordon, Plugins: []string{NodeUnschedulable}, Nodes: 1, NodeNames: []string{"a"},
			Message: "1 node would fit if uncordoned (a)"}},
	}, {
		name: "no single change",
		attempt: recordtest.MakeAttempt("shop", "web", "uid-web").Unschedulable("0/3 nodes are available").
			Rejected(TaintToleration, "node(s) had untolerated taint(s)", "a").
			Rejected("InterPodAffinity", "node(s) didn't match pod affinity rules", "b").Obj(),
		pod:   pod("8"),
		nodes: nodes(Node{Node: node("a", "2", tainted("dedicated", "db"))}, Node{Node: node("b", "16")}),
		want: []v1alpha1.Hint{{Kind: v1alpha1.HintNoSingleChange, Plugins: []string{"InterPodAffinity", NodeResourcesFit, TaintToleration},
			Message: "no single change is enough: more than one check fails on 1 node; 1 node rejected by InterPodAffinity, which hints do not cover"}},
	}, {
		name:    "scheduled: none",
		attempt: recordtest.MakeAttempt("shop", "web", "uid-web").Scheduled("a").Obj(),
		pod:     pod("1"),
		nodes:   nodes(Node{Node: node("a", "2")}),
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Compute(tt.attempt, tt.pod, tt.nodes, tt.showNodes)
			if diff := cmp.Diff(tt.want, got, cmp.Comparer(func(a, b resource.Quantity) bool { return a.Cmp(b) == 0 })); diff != "" {
				t.Errorf("Compute (-want +got):\n%s", diff)
			}
		})
	}
}
