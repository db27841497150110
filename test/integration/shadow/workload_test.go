package shadow

import (
	"fmt"
	"math/rand/v2"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The seeded workload the tests of shadow profiles schedule.
const (
	numNodes = 24
	numPods  = 300
)

// makeNodes returns numNodes nodes of distinct sizes across three zones,
// some tainted.
func makeNodes(rng *rand.Rand) []*v1.Node {
	var nodes []*v1.Node
	for i := range numNodes {
		name := fmt.Sprintf("node-%02d", i)
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

// makePods returns a mixed workload of numPods pods in namespace ns for
// the profile schedulerName; about one pod in twelve fits no node.
func makePods(rng *rand.Rand, ns, schedulerName string) []*v1.Pod {
	apps := []string{"web", "api", "batch", "cache"}
	var pods []*v1.Pod
	for i := range numPods {
		app := apps[rng.IntN(len(apps))]
		p := &v1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("pod-%03d", i), Namespace: ns, Labels: map[string]string{"app": app}},
			Spec: v1.PodSpec{
				SchedulerName: schedulerName,
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
