package main

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
)

// Names of the demo.
const (
	demoNamespace  = "demo"
	profileDefault = "schedscope"
	// shadowBinpack, the bin-packing profile of the scheduler's
	// configuration, is a shadow of profileDefault: it runs in every
	// attempt of profileDefault and schedules no pod of its own.
	shadowBinpack   = "schedscope-binpack"
	unschedulable   = "too-big"
	zoneLabel       = v1.LabelTopologyZone
	diskLabel       = "disk"
	generationLabel = "cpu-generation"
	pauseImage      = "registry.k8s.io/pause:3.10"
)

// demoNode is a Node of the demo cluster. No kubelet runs: the nodes are
// API objects with a capacity and a Ready condition.
type demoNode struct {
	name, zone, cpu, memory string
	labels                  map[string]string
	taints                  []v1.Taint
	cordoned                bool
}

var demoNodes = []demoNode{
	{name: "a-small-1", zone: "zone-a", cpu: "2", memory: "4Gi", labels: map[string]string{diskLabel: "ssd", generationLabel: "3"}},
	{name: "a-small-2", zone: "zone-a", cpu: "2", memory: "4Gi", labels: map[string]string{diskLabel: "hdd", generationLabel: "2"}},
	{name: "a-reserved", zone: "zone-a", cpu: "1", memory: "2Gi", labels: map[string]string{generationLabel: "1"},
		taints: []v1.Taint{{Key: "reserved", Value: "preemption-demo", Effect: v1.TaintEffectNoSchedule}}},
	{name: "b-large-1", zone: "zone-b", cpu: "16", memory: "64Gi", labels: map[string]string{diskLabel: "ssd", generationLabel: "4"}},
	{name: "b-gpu-1", zone: "zone-b", cpu: "16", memory: "64Gi", labels: map[string]string{"accelerator": "gpu", generationLabel: "5"},
		taints: []v1.Taint{{Key: "dedicated", Value: "gpu", Effect: v1.TaintEffectNoSchedule}}},
	{name: "c-edge-1", zone: "zone-c", cpu: "4", memory: "8Gi", labels: map[string]string{generationLabel: "1"},
		taints: []v1.Taint{{Key: "edge", Value: "true", Effect: v1.TaintEffectPreferNoSchedule}}},
	{name: "c-quarantine-1", zone: "zone-c", cpu: "4", memory: "8Gi",
		taints: []v1.Taint{{Key: "quarantine", Value: "true", Effect: v1.TaintEffectNoExecute}}},
	{name: "c-cordoned-1", zone: "zone-c", cpu: "8", memory: "16Gi", cordoned: true},
}

// general are the nodes a pod without constraints or tolerations may use:
// not cordoned, no NoSchedule or NoExecute taint.
var general = []string{"a-small-1", "a-small-2", "b-large-1", "c-edge-1"}

// expect is a demo pod's expected outcome.
type expect struct {
	// nodes the pod may be bound to.
	nodes []string
	// unschedulable: no node fits; the pod stays Pending.
	unschedulable bool
	// preempted: a higher-priority pod evicts it (and it is deleted at once:
	// terminationGracePeriodSeconds 0, and no kubelet runs).
	preempted bool
	// distinct names a group of pods that must be on different nodes.
	distinct string
}

// demoPod is a pod of the demo workload.
type demoPod struct {
	pod  *v1.Pod
	want expect
	// what the pod shows, for the summary.
	what string
	// waitBound: wait until the pod is bound before submitting the next.
	waitBound bool
}

type podOption func(*v1.Pod)

func newPod(name, cpu, memory string, opts ...podOption) *v1.Pod {
	p := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: demoNamespace, Labels: map[string]string{"demo": name}},
		Spec: v1.PodSpec{
			SchedulerName:                 profileDefault,
			TerminationGracePeriodSeconds: new(int64),
			Containers: []v1.Container{{
				Name: "main", Image: pauseImage,
				Resources: v1.ResourceRequirements{Requests: v1.ResourceList{
					v1.ResourceCPU: resource.MustParse(cpu), v1.ResourceMemory: resource.MustParse(memory),
				}},
			}},
		},
	}
	for _, o := range opts {
		o(p)
	}
	return p
}

func withLabel(k, v string) podOption { return func(p *v1.Pod) { p.Labels[k] = v } }
func withNodeSelector(k, v string) podOption {
	return func(p *v1.Pod) { p.Spec.NodeSelector = map[string]string{k: v} }
}
func withPriority(class string) podOption {
	return func(p *v1.Pod) { p.Spec.PriorityClassName = class }
}
func withHostPort(port int32) podOption {
	return func(p *v1.Pod) {
		p.Spec.Containers[0].Ports = []v1.ContainerPort{{ContainerPort: port, HostPort: port, Protocol: v1.ProtocolTCP}}
	}
}
func withToleration(key, value string, effect v1.TaintEffect) podOption {
	return func(p *v1.Pod) {
		p.Spec.Tolerations = append(p.Spec.Tolerations, v1.Toleration{Key: key, Operator: v1.TolerationOpEqual, Value: value, Effect: effect})
	}
}

// withNodeAffinity requires one node selector term with one expression.
func withNodeAffinity(key string, op v1.NodeSelectorOperator, values ...string) podOption {
	return func(p *v1.Pod) {
		p.Spec.Affinity = &v1.Affinity{NodeAffinity: &v1.NodeAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: &v1.NodeSelector{NodeSelectorTerms: []v1.NodeSelectorTerm{{
				MatchExpressions: []v1.NodeSelectorRequirement{{Key: key, Operator: op, Values: values}},
			}}},
		}}
	}
}

// withPodAffinity requires (anti=false) or forbids (anti=true) a pod
// labelled app=value in the same topology domain.
func withPodAffinity(anti bool, app, topologyKey string) podOption {
	return func(p *v1.Pod) {
		terms := []v1.PodAffinityTerm{{
			LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}},
			TopologyKey:   topologyKey,
		}}
		if anti {
			p.Spec.Affinity = &v1.Affinity{PodAntiAffinity: &v1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: terms}}
		} else {
			p.Spec.Affinity = &v1.Affinity{PodAffinity: &v1.PodAffinity{RequiredDuringSchedulingIgnoredDuringExecution: terms}}
		}
	}
}

// demoWorkload is the demo's pods in submission order, each with its
// expected outcome.
func demoWorkload() []demoPod {
	return []demoPod{
		{pod: newPod("web-1", "200m", "256Mi"), want: expect{nodes: general}, what: "resources only"},
		{pod: newPod("web-2", "200m", "256Mi"), want: expect{nodes: general}, what: "resources only"},
		{pod: newPod("batch-1", "300m", "512Mi"), want: expect{nodes: general}, what: "resources only"},
		{pod: newPod("batch-2", "300m", "512Mi"), want: expect{nodes: general}, what: "resources only"},
		{pod: newPod("needs-24gi", "1", "24Gi"), want: expect{nodes: []string{"b-large-1"}}, what: "memory fits one node"},
		{pod: newPod("ssd-only", "100m", "128Mi", withNodeSelector(diskLabel, "ssd")), want: expect{nodes: []string{"a-small-1", "b-large-1"}}, what: "nodeSelector disk=ssd"},
		{pod: newPod("in-zone-b", "100m", "128Mi", withNodeAffinity(zoneLabel, v1.NodeSelectorOpIn, "zone-b")), want: expect{nodes: []string{"b-large-1"}}, what: "node affinity In"},
		{pod: newPod("not-in-zone-a-b", "100m", "128Mi", withNodeAffinity(zoneLabel, v1.NodeSelectorOpNotIn, "zone-a", "zone-b")), want: expect{nodes: []string{"c-edge-1"}}, what: "node affinity NotIn"},
		{pod: newPod("disk-exists", "100m", "128Mi", withNodeAffinity(diskLabel, v1.NodeSelectorOpExists)), want: expect{nodes: []string{"a-small-1", "a-small-2", "b-large-1"}}, what: "node affinity Exists"},
		{pod: newPod("no-disk", "100m", "128Mi", withNodeAffinity(diskLabel, v1.NodeSelectorOpDoesNotExist)), want: expect{nodes: []string{"c-edge-1"}}, what: "node affinity DoesNotExist"},
		{pod: newPod("generation-gt-3", "100m", "128Mi", withNodeAffinity(generationLabel, v1.NodeSelectorOpGt, "3")), want: expect{nodes: []string{"b-large-1"}}, what: "node affinity Gt"},
		{pod: newPod("generation-lt-3", "100m", "128Mi", withNodeAffinity(generationLabel, v1.NodeSelectorOpLt, "3")), want: expect{nodes: []string{"a-small-2", "c-edge-1"}}, what: "node affinity Lt"},
		{pod: newPod("cache", "100m", "128Mi", withLabel("app", "cache"), withNodeSelector(v1.LabelHostname, "a-small-1")), want: expect{nodes: []string{"a-small-1"}}, what: "pinned by hostname", waitBound: true},
		{pod: newPod("near-cache", "100m", "128Mi", withPodAffinity(false, "cache", zoneLabel)), want: expect{nodes: []string{"a-small-1", "a-small-2"}}, what: "pod affinity (zone of app=cache)"},
		{pod: newPod("away-from-cache", "100m", "128Mi", withPodAffinity(true, "cache", zoneLabel)), want: expect{nodes: []string{"b-large-1", "c-edge-1"}}, what: "pod anti-affinity (zone of app=cache)"},
		{pod: newPod("gpu-trainer", "2", "8Gi", withNodeSelector("accelerator", "gpu"), withToleration("dedicated", "gpu", v1.TaintEffectNoSchedule)), want: expect{nodes: []string{"b-gpu-1"}}, what: "tolerates NoSchedule"},
		{pod: newPod("quarantine-debug", "100m", "128Mi", withNodeAffinity(v1.LabelHostname, v1.NodeSelectorOpIn, "c-quarantine-1"), withToleration("quarantine", "true", v1.TaintEffectNoExecute)), want: expect{nodes: []string{"c-quarantine-1"}}, what: "tolerates NoExecute"},
		{pod: newPod("hostport-1", "100m", "128Mi", withHostPort(8080), withNodeSelector(diskLabel, "ssd")), want: expect{nodes: []string{"a-small-1", "b-large-1"}, distinct: "hostport"}, what: "host port 8080"},
		{pod: newPod("hostport-2", "100m", "128Mi", withHostPort(8080), withNodeSelector(diskLabel, "ssd")), want: expect{nodes: []string{"a-small-1", "b-large-1"}, distinct: "hostport"}, what: "host port 8080, other node"},
		{pod: newPod("low-priority", "800m", "512Mi", withPriority("demo-low"), withNodeSelector(v1.LabelHostname, "a-reserved"), withToleration("reserved", "preemption-demo", v1.TaintEffectNoSchedule)), want: expect{preempted: true}, what: "preemption victim", waitBound: true},
		{pod: newPod("high-priority", "800m", "512Mi", withPriority("demo-high"), withNodeSelector(v1.LabelHostname, "a-reserved"), withToleration("reserved", "preemption-demo", v1.TaintEffectNoSchedule)), want: expect{nodes: []string{"a-reserved"}}, what: "preempts low-priority"},
		{pod: newPod(unschedulable, "64", "1Gi"), want: expect{unschedulable: true}, what: "64 CPUs: no node has them"},
	}
}

// demo is the submitted workload and, once settled, where each pod went.
type demo struct {
	pods     []demoPod
	outcomes map[string]string // pod name: node, "unschedulable", "preempted" or "pending"
	took     time.Duration
}

// runDemo registers the demo nodes, submits the workload and waits until
// every pod reached its expected outcome.
func (s *stack) runDemo(ctx context.Context) (*demo, error) {
	client := s.cp.Client
	done := s.step(fmt.Sprintf("registering %d demo nodes and priority classes", len(demoNodes)))
	if err := createCluster(ctx, client); err != nil {
		return nil, err
	}
	done("")

	d := &demo{pods: demoWorkload()}
	done = s.step(fmt.Sprintf("submitting %d demo pods to namespace %s", len(d.pods), demoNamespace))
	start := time.Now()
	for _, dp := range d.pods {
		if _, err := client.CoreV1().Pods(demoNamespace).Create(ctx, dp.pod, metav1.CreateOptions{}); err != nil {
			return nil, fmt.Errorf("creating pod %s: %w", dp.pod.Name, err)
		}
		if dp.waitBound {
			if err := waitBound(ctx, client, dp.pod.Name); err != nil {
				return nil, err
			}
		}
	}
	done("")

	done = s.step("waiting for every demo pod's expected outcome")
	var failures []string
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, s.o.timeout, true, func(ctx context.Context) (bool, error) {
		var err error
		d.outcomes, failures, err = observe(ctx, client, d.pods)
		return err == nil && len(failures) == 0, nil
	})
	d.took = time.Since(start)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("demo pods without their expected outcome after %s:\n  %s", s.o.timeout, strings.Join(failures, "\n  "))
	}
	done("")
	s.printOutcomes(d)
	return d, nil
}

func createCluster(ctx context.Context, client kubernetes.Interface) error {
	for _, pc := range []struct {
		name  string
		value int32
	}{{"demo-low", 100}, {"demo-high", 1000}} {
		_, err := client.SchedulingV1().PriorityClasses().Create(ctx, &schedulingv1.PriorityClass{
			ObjectMeta: metav1.ObjectMeta{Name: pc.name}, Value: pc.value,
			Description: "schedscope demo",
		}, metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating PriorityClass %s: %w", pc.name, err)
		}
	}
	if _, err := client.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: demoNamespace}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating namespace %s: %w", demoNamespace, err)
	}
	for _, dn := range demoNodes {
		n := &v1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: dn.name, Labels: map[string]string{v1.LabelHostname: dn.name, zoneLabel: dn.zone}},
			Spec:       v1.NodeSpec{Taints: dn.taints, Unschedulable: dn.cordoned},
		}
		for k, v := range dn.labels {
			n.Labels[k] = v
		}
		created, err := client.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{})
		if err != nil {
			return fmt.Errorf("creating node %s: %w", dn.name, err)
		}
		capacity := v1.ResourceList{
			v1.ResourceCPU:    resource.MustParse(dn.cpu),
			v1.ResourceMemory: resource.MustParse(dn.memory),
			v1.ResourcePods:   resource.MustParse("110"),
		}
		created.Status = v1.NodeStatus{
			Capacity: capacity, Allocatable: capacity,
			Conditions: []v1.NodeCondition{{Type: v1.NodeReady, Status: v1.ConditionTrue, LastHeartbeatTime: metav1.Now(), Reason: "Demo"}},
		}
		if _, err := client.CoreV1().Nodes().UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("setting the status of node %s: %w", dn.name, err)
		}
	}
	return nil
}

func waitBound(ctx context.Context, client kubernetes.Interface, name string) error {
	var node string
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		p, err := client.CoreV1().Pods(demoNamespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		node = p.Spec.NodeName
		return node != "", nil
	})
	if err != nil {
		return fmt.Errorf("pod %s/%s was not bound within a minute: %w", demoNamespace, name, err)
	}
	return nil
}

// observe reads every demo pod and compares it with its expectation. It
// returns each pod's outcome and a line per pod that does not match (yet).
func observe(ctx context.Context, client kubernetes.Interface, pods []demoPod) (map[string]string, []string, error) {
	list, err := client.CoreV1().Pods(demoNamespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, []string{err.Error()}, err
	}
	byName := map[string]*v1.Pod{}
	for i := range list.Items {
		byName[list.Items[i].Name] = &list.Items[i]
	}
	outcomes := map[string]string{}
	var failures []string
	nodesOf := map[string][]string{} // distinct group: nodes
	for _, dp := range pods {
		name := dp.pod.Name
		p := byName[name]
		var got string
		switch {
		case p == nil || p.DeletionTimestamp != nil:
			got = "preempted"
		case p.Spec.NodeName != "":
			got = p.Spec.NodeName
		case isUnschedulable(p):
			got = "unschedulable"
		default:
			got = "pending"
		}
		outcomes[name] = got
		var ok bool
		var want string
		switch {
		case dp.want.preempted:
			ok, want = got == "preempted", "preempted"
		case dp.want.unschedulable:
			ok, want = got == "unschedulable", "unschedulable"
		default:
			ok, want = slices.Contains(dp.want.nodes, got), "one of "+strings.Join(dp.want.nodes, ", ")
		}
		if !ok {
			failures = append(failures, fmt.Sprintf("%s (%s): %s, want %s", name, dp.what, got, want))
		}
		if dp.want.distinct != "" && ok {
			nodesOf[dp.want.distinct] = append(nodesOf[dp.want.distinct], got)
		}
	}
	for group, nodes := range nodesOf {
		sorted := slices.Clone(nodes)
		sort.Strings(sorted)
		if len(slices.Compact(sorted)) != len(nodes) {
			failures = append(failures, fmt.Sprintf("pods of group %s share a node: %v", group, nodes))
		}
	}
	return outcomes, failures, nil
}

func isUnschedulable(p *v1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == v1.PodScheduled && c.Status == v1.ConditionFalse && c.Reason == v1.PodReasonUnschedulable {
			return true
		}
	}
	return false
}

func (s *stack) printOutcomes(d *demo) {
	fmt.Fprintf(s.out, "\n%-18s %-20s %-38s %s\n", "POD", "PROFILE", "SHOWS", "OUTCOME")
	for _, dp := range d.pods {
		fmt.Fprintf(s.out, "%-18s %-20s %-38s %s\n", dp.pod.Name, dp.pod.Spec.SchedulerName, dp.what, d.outcomes[dp.pod.Name])
	}
	fmt.Fprintln(s.out)
}
