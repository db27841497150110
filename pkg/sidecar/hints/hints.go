// Package hints says what would make an unschedulable pod fit: the single
// changes, to the pod or to nodes, after which the Filter plugins that
// rejected nodes in its latest attempt would pass them, judged from the
// recorded verdicts and the nodes and pods as they are now.
package hints

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	resourcehelper "k8s.io/component-helpers/resource"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"k8s.io/klog/v2"

	"github.com/schedscope/schedscope/pkg/apis/schedscope/v1alpha1"
	"github.com/schedscope/schedscope/pkg/record"
)

// The Filter plugins whose rejections hints answer, named as upstream names them.
const (
	TaintToleration   = "TaintToleration"
	NodeAffinity      = "NodeAffinity"
	NodeUnschedulable = "NodeUnschedulable"
	NodeResourcesFit  = "NodeResourcesFit"
)

// Node is a node as it is now, with the pods bound to it.
type Node struct {
	Node *v1.Node
	Pods []*v1.Pod
}

// check is what the modelled Filter plugins say of the pod on one node.
type check struct {
	name     string
	failing  []string // plugins that reject the node, sorted
	taints   []v1.Taint
	labels   map[string]string // labels that would make NodeAffinity pass
	free     v1.ResourceList   // allocatable minus the bound pods' requests
	short    []v1.ResourceName // resources the pod requests more of than free
	tooMany  bool              // no room for another pod
	freeable v1.ResourceList   // free plus what pods of lower priority hold
	// tooManyAfterPreemption: no room for another pod even once pods of
	// lower priority are preempted.
	tooManyAfterPreemption bool
}

// Compute returns the hints for attempt a of pod on nodes: the nodes a rejected
// at Filter, judged as they are now. showNodes names the nodes in the hints
// and gives the requests that fit, which are a node's free capacity, what
// the pods bound to it leave; without it the hints count nodes and state
// no capacity.
func Compute(a *record.Attempt, pod *v1.Pod, nodes map[string]Node, showNodes bool) []v1alpha1.Hint {
	if a.Result != record.ResultUnschedulable {
		return nil
	}
	var checks []check
	uncovered := map[string]int{}
	for _, g := range a.Filter {
		if g.Verdict != record.VerdictRejected {
			continue
		}
		for _, name := range g.Nodes {
			n, ok := nodes[name]
			if !ok {
				continue // gone since the attempt
			}
			if !modelled(g.Plugin) {
				uncovered[g.Plugin]++
				continue
			}
			if c := evaluate(pod, name, n); len(c.failing) > 0 {
				checks = append(checks, c)
			}
		}
	}
	var hs []v1alpha1.Hint
	hs = append(hs, tolerate(checks, showNodes)...)
	hs = append(hs, addLabels(checks, showNodes)...)
	hs = append(hs, uncordon(checks, showNodes)...)
	hs = append(hs, lowerRequests(pod, checks, showNodes)...)
	hs = append(hs, preempt(pod, checks, showNodes)...)
	sort.SliceStable(hs, func(i, j int) bool { return hs[i].Nodes > hs[j].Nodes })
	if len(hs) == 0 && (len(checks) > 0 || len(uncovered) > 0) {
		hs = append(hs, noSingleChange(checks, uncovered))
	}
	return hs
}

func modelled(plugin string) bool {
	switch plugin {
	case TaintToleration, NodeAffinity, NodeUnschedulable, NodeResourcesFit:
		return true
	}
	return false
}

// evaluate runs the modelled Filter plugins' checks of pod on node n.
func evaluate(pod *v1.Pod, name string, n Node) check {
	c := check{name: name}
	node := n.Node
	logger := klog.Background()
	unschedulable := &v1.Taint{Key: v1.TaintNodeUnschedulable, Effect: v1.TaintEffectNoSchedule}
	if node.Spec.Unschedulable && !corev1helpers.TolerationsTolerateTaint(logger, pod.Spec.Tolerations, unschedulable, false) {
		c.failing = append(c.failing, NodeUnschedulable)
	}
	for _, t := range node.Spec.Taints {
		if t.Effect == v1.TaintEffectPreferNoSchedule {
			continue
		}
		if !corev1helpers.TolerationsTolerateTaint(logger, pod.Spec.Tolerations, &t, false) {
			c.taints = append(c.taints, t)
		}
	}
	if len(c.taints) > 0 {
		c.failing = append(c.failing, TaintToleration)
	}
	if ok, _ := nodeaffinity.GetRequiredNodeAffinity(pod).Match(node); !ok {
		c.failing = append(c.failing, NodeAffinity)
		c.labels = missingLabels(pod, node)
	}
	c.free, c.freeable, c.tooMany, c.tooManyAfterPreemption = room(pod, n)
	req := resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{})
	for _, r := range sortedNames(req) {
		q := req[r]
		if q.IsZero() {
			continue
		}
		if free := c.free[r]; q.Cmp(free) > 0 {
			c.short = append(c.short, r)
		}
	}
	if c.tooMany || len(c.short) > 0 {
		c.failing = append(c.failing, NodeResourcesFit)
	}
	slices.Sort(c.failing)
	return c
}

// room returns what node n has left for pod: free, and freeable once pods
// of lower priority than pod's are preempted; tooMany when the node has no
// room for another pod, tooManyAfter when it has none even then.
func room(pod *v1.Pod, n Node) (free, freeable v1.ResourceList, tooMany, tooManyAfter bool) {
	free, freeable = v1.ResourceList{}, v1.ResourceList{}
	for r, q := range n.Node.Status.Allocatable {
		free[r], freeable[r] = q.DeepCopy(), q.DeepCopy()
	}
	priority := corev1helpers.PodPriority(pod)
	bound, lower := 0, 0
	for _, p := range n.Pods {
		if p.Status.Phase == v1.PodSucceeded || p.Status.Phase == v1.PodFailed {
			continue
		}
		bound++
		isLower := corev1helpers.PodPriority(p) < priority
		if isLower {
			lower++
		}
		for r, q := range resourcehelper.PodRequests(p, resourcehelper.PodResourcesOptions{}) {
			f := free[r]
			f.Sub(q)
			free[r] = f
			if !isLower {
				f := freeable[r]
				f.Sub(q)
				freeable[r] = f
			}
		}
	}
	maxPods := n.Node.Status.Allocatable.Pods().Value()
	return free, freeable, int64(bound) >= maxPods, int64(bound-lower) >= maxPods
}

// missingLabels returns the labels that, added to node, make the pod's
// node selector and required node affinity match it; nil if labels alone
// cannot (a NotIn, DoesNotExist or field requirement fails).
func missingLabels(pod *v1.Pod, node *v1.Node) map[string]string {
	want := map[string]string{}
	for k, v := range pod.Spec.NodeSelector {
		if node.Labels[k] != v {
			want[k] = v
		}
	}
	if a := pod.Spec.Affinity; a != nil && a.NodeAffinity != nil && a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution != nil {
		terms := a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
		if len(terms) > 0 {
			for _, r := range terms[0].MatchExpressions {
				if r.Operator != v1.NodeSelectorOpIn || len(r.Values) == 0 || slices.Contains(r.Values, node.Labels[r.Key]) {
					continue
				}
				if _, ok := want[r.Key]; !ok {
					want[r.Key] = r.Values[0]
				}
			}
		}
	}
	if len(want) == 0 {
		return nil
	}
	labeled := node.DeepCopy()
	if labeled.Labels == nil {
		labeled.Labels = map[string]string{}
	}
	for k, v := range want {
		labeled.Labels[k] = v
	}
	if ok, _ := nodeaffinity.GetRequiredNodeAffinity(pod).Match(labeled); !ok {
		return nil
	}
	return want
}

// only returns the checks that fail plugin and nothing else.
func only(checks []check, plugin string) []check {
	var out []check
	for _, c := range checks {
		if len(c.failing) == 1 && c.failing[0] == plugin {
			out = append(out, c)
		}
	}
	return out
}

// grouped groups checks by key, keeping the first check of each key.
func grouped(checks []check, key func(check) (string, bool)) (keys []string, nodes map[string][]string, first map[string]check) {
	nodes, first = map[string][]string{}, map[string]check{}
	for _, c := range checks {
		k, ok := key(c)
		if !ok {
			continue
		}
		if _, seen := first[k]; !seen {
			keys = append(keys, k)
			first[k] = c
		}
		nodes[k] = append(nodes[k], c.name)
	}
	return keys, nodes, first
}

func tolerate(checks []check, showNodes bool) []v1alpha1.Hint {
	keys, nodes, first := grouped(only(checks, TaintToleration), func(c check) (string, bool) {
		if len(c.taints) != 1 {
			return "", false
		}
		return taintString(c.taints[0]), true
	})
	var hs []v1alpha1.Hint
	for _, k := range keys {
		t := first[k].taints[0]
		h := hint(v1alpha1.HintTolerate, TaintToleration, nodes[k], showNodes)
		h.Taint = &t
		h.Message = fmt.Sprintf("%s would fit if the pod tolerated %s%s", countNodes(len(nodes[k])), k, names(h))
		hs = append(hs, h)
	}
	return hs
}

func addLabels(checks []check, showNodes bool) []v1alpha1.Hint {
	keys, nodes, first := grouped(only(checks, NodeAffinity), func(c check) (string, bool) {
		return labelString(c.labels), c.labels != nil
	})
	var hs []v1alpha1.Hint
	for _, k := range keys {
		h := hint(v1alpha1.HintAddNodeLabels, NodeAffinity, nodes[k], showNodes)
		h.Labels = first[k].labels
		h.Message = fmt.Sprintf("%s would fit with label %s%s: add it to one, or change the pod's node selector or affinity", countNodes(len(nodes[k])), k, names(h))
		hs = append(hs, h)
	}
	return hs
}

func uncordon(checks []check, showNodes bool) []v1alpha1.Hint {
	var fit []string
	for _, c := range only(checks, NodeUnschedulable) {
		fit = append(fit, c.name)
	}
	if len(fit) == 0 {
		return nil
	}
	h := hint(v1alpha1.HintUncordon, NodeUnschedulable, fit, showNodes)
	h.Message = fmt.Sprintf("%s would fit if uncordoned%s", countNodes(len(fit)), names(h))
	return []v1alpha1.Hint{h}
}

// lowerRequests suggests the requests that fit the node needing the
// smallest cut, and counts the nodes they fit. Those requests are the
// node's free capacity: without showNodes, lowerSomeRequests answers
// instead.
func lowerRequests(pod *v1.Pod, checks []check, showNodes bool) []v1alpha1.Hint {
	candidates := only(checks, NodeResourcesFit)
	if !showNodes {
		return lowerSomeRequests(candidates)
	}
	req := resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{})
	var best v1.ResourceList
	var bestCut float64
	for _, c := range candidates {
		if c.tooMany {
			continue
		}
		fits, cut := v1.ResourceList{}, 0.0
		for _, r := range c.short {
			free, q := c.free[r], req[r]
			if free.Sign() <= 0 {
				fits = nil
				break
			}
			fits[r] = roundDown(r, free)
			cut += 1 - free.AsApproximateFloat64()/q.AsApproximateFloat64()
		}
		if fits != nil && (best == nil || cut < bestCut) {
			best, bestCut = fits, cut
		}
	}
	if best == nil {
		return nil
	}
	var fit []string
	for _, c := range candidates {
		if !c.tooMany && within(best, c.free) {
			fit = append(fit, c.name)
		}
	}
	h := hint(v1alpha1.HintLowerRequests, NodeResourcesFit, fit, true)
	h.Requests = best
	var parts []string
	for _, r := range sortedNames(best) {
		q := best[r]
		parts = append(parts, fmt.Sprintf("%s request to %s", r, q.String()))
	}
	h.Message = fmt.Sprintf("lower the %s to fit %s", strings.Join(parts, " and the "), strings.Join(h.NodeNames, ", "))
	return []v1alpha1.Hint{h}
}

// lowerSomeRequests counts the nodes that some lower requests would fit,
// naming the resources to lower but neither the nodes nor how much: the
// figures would be the nodes' free capacity.
func lowerSomeRequests(candidates []check) []v1alpha1.Hint {
	var fit []string
	short := map[string]bool{}
	for _, c := range candidates {
		if c.tooMany || slices.ContainsFunc(c.short, func(r v1.ResourceName) bool {
			free := c.free[r]
			return free.Sign() <= 0
		}) {
			continue
		}
		fit = append(fit, c.name)
		for _, r := range c.short {
			short[string(r)] = true
		}
	}
	if len(fit) == 0 {
		return nil
	}
	h := hint(v1alpha1.HintLowerRequests, NodeResourcesFit, fit, false)
	resources := sortedKeys(short)
	requests := "a lower " + resources[0] + " request"
	if len(resources) > 1 {
		requests = "lower " + strings.Join(resources, " and ") + " requests"
	}
	h.Message = fmt.Sprintf("%s would fit with %s", countNodes(len(fit)), requests)
	return []v1alpha1.Hint{h}
}

// preempt counts the nodes that preempting pods of lower priority would
// free enough for the pod, when the pod may not preempt.
func preempt(pod *v1.Pod, checks []check, showNodes bool) []v1alpha1.Hint {
	if pod.Spec.PreemptionPolicy == nil || *pod.Spec.PreemptionPolicy != v1.PreemptNever {
		return nil
	}
	req := resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{})
	var fit []string
	for _, c := range only(checks, NodeResourcesFit) {
		if !c.tooManyAfterPreemption && within(req, c.freeable) {
			fit = append(fit, c.name)
		}
	}
	if len(fit) == 0 {
		return nil
	}
	h := hint(v1alpha1.HintPreempt, NodeResourcesFit, fit, showNodes)
	h.Message = fmt.Sprintf("%s would fit after preempting pods of lower priority%s: the pod's preemptionPolicy is Never", countNodes(len(fit)), names(h))
	return []v1alpha1.Hint{h}
}

func noSingleChange(checks []check, uncovered map[string]int) v1alpha1.Hint {
	plugins := map[string]bool{}
	multi := 0
	for _, c := range checks {
		for _, p := range c.failing {
			plugins[p] = true
		}
		if len(c.failing) > 1 {
			multi++
		}
	}
	var parts []string
	if multi > 0 {
		parts = append(parts, fmt.Sprintf("more than one check fails on %s", countNodes(multi)))
	}
	if single := len(checks) - multi; single > 0 {
		parts = append(parts, fmt.Sprintf("one check needs more than one change on %s", countNodes(single)))
	}
	for _, p := range sortedKeys(uncovered) {
		plugins[p] = true
		parts = append(parts, fmt.Sprintf("%s rejected by %s, which hints do not cover", countNodes(uncovered[p]), p))
	}
	return v1alpha1.Hint{
		Kind: v1alpha1.HintNoSingleChange, Plugins: sortedKeys(plugins),
		Message: "no single change is enough: " + strings.Join(parts, "; "),
	}
}

func hint(kind v1alpha1.HintKind, plugin string, nodes []string, showNodes bool) v1alpha1.Hint {
	h := v1alpha1.Hint{Kind: kind, Plugins: []string{plugin}, Nodes: len(nodes)}
	if showNodes {
		h.NodeNames = slices.Clone(nodes[:min(len(nodes), v1alpha1.MaxHintNodes)])
	}
	return h
}

// names lists a hint's node names in parentheses, if it has any.
func names(h v1alpha1.Hint) string {
	if len(h.NodeNames) == 0 {
		return ""
	}
	s := strings.Join(h.NodeNames, ", ")
	if more := h.Nodes - len(h.NodeNames); more > 0 {
		s += fmt.Sprintf(" and %d more", more)
	}
	return " (" + s + ")"
}

func countNodes(n int) string {
	if n == 1 {
		return "1 node"
	}
	return fmt.Sprintf("%d nodes", n)
}

// within reports whether every quantity of want fits have.
func within(want, have v1.ResourceList) bool {
	for r, q := range want {
		if q.IsZero() {
			continue
		}
		h, ok := have[r]
		if !ok || q.Cmp(h) > 0 {
			return false
		}
	}
	return true
}

// roundDown rounds cpu down to the millicore and memory-like resources
// down to the MiB, so that the suggestion is one a person would write.
func roundDown(r v1.ResourceName, q resource.Quantity) resource.Quantity {
	if r == v1.ResourceCPU {
		return *resource.NewMilliQuantity(q.MilliValue(), resource.DecimalSI)
	}
	const mi = 1 << 20
	if v := q.Value(); v >= mi {
		return *resource.NewQuantity(v/mi*mi, resource.BinarySI)
	}
	return *resource.NewQuantity(q.Value(), q.Format)
}

func taintString(t v1.Taint) string {
	if t.Value == "" {
		return fmt.Sprintf("%s:%s", t.Key, t.Effect)
	}
	return fmt.Sprintf("%s=%s:%s", t.Key, t.Value, t.Effect)
}

func labelString(labels map[string]string) string {
	var parts []string
	for _, k := range sortedKeys(labels) {
		parts = append(parts, k+"="+labels[k])
	}
	return strings.Join(parts, ",")
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func sortedNames(l v1.ResourceList) []v1.ResourceName {
	names := make([]v1.ResourceName, 0, len(l))
	for r := range l {
		names = append(names, r)
	}
	slices.Sort(names)
	return names
}
