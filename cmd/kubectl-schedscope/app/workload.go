package app

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"reflect"
	"slices"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/resource"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/schedscope/schedscope/pkg/apis/schedscope/v1alpha1"
)

// podSet is the pods a workload or a label selector selects, and the
// latest recorded attempt of each.
type podSet struct {
	// Workload is the workload whose pods they are, as kubectl names it
	// (deployment.apps/web); empty for the pods of -l.
	Workload  string
	Namespace string
	Selector  string
	// Latest are the latest attempts of the pods with one recorded, in
	// pod name order.
	Latest []v1alpha1.AttemptSummary
	// Unrecorded are the pods without a recorded attempt.
	Unrecorded []corev1.Pod
}

// workloadSelector resolves TYPE/NAME (deploy/web, sts/db, job/train, ...)
// in ns with the user's credentials, as kubectl does, and returns its name
// as kubectl prints it and its pod selector.
func (o *Options) workloadSelector(ns, arg string) (string, labels.Selector, error) {
	r := resource.NewBuilder(o.ConfigFlags).
		WithScheme(scheme.Scheme, scheme.Scheme.PrioritizedVersionsAllGroups()...).
		NamespaceParam(ns).DefaultNamespace().
		ResourceTypeOrNameArgs(false, arg).
		SingleResourceType().
		Do()
	infos, err := r.Infos()
	if err != nil {
		return "", nil, fmt.Errorf("reading %s: %w", arg, err)
	}
	if len(infos) != 1 {
		return "", nil, usageErrorf("%s: want one workload, got %d objects", arg, len(infos))
	}
	info := infos[0]
	gvk := info.Mapping.GroupVersionKind
	name := strings.ToLower(gvk.Kind) + "/" + info.Name
	if gvk.Group != "" {
		name = strings.ToLower(gvk.Kind) + "." + gvk.Group + "/" + info.Name
	}
	sel, err := podSelector(info.Object)
	if err != nil {
		return "", nil, usageErrorf("%s: %v", arg, err)
	}
	return name, sel, nil
}

// podSelector returns the selector of a workload's pods, as kubectl's
// polymorphichelpers.SelectorsForObject does for the workloads explain
// takes.
func podSelector(obj runtime.Object) (labels.Selector, error) {
	var ls *metav1.LabelSelector
	switch w := obj.(type) {
	case *appsv1.Deployment:
		ls = w.Spec.Selector
	case *appsv1.ReplicaSet:
		ls = w.Spec.Selector
	case *appsv1.StatefulSet:
		ls = w.Spec.Selector
	case *appsv1.DaemonSet:
		ls = w.Spec.Selector
	case *batchv1.Job:
		ls = w.Spec.Selector
	case *corev1.ReplicationController:
		return labels.SelectorFromSet(w.Spec.Selector), nil
	default:
		return nil, fmt.Errorf("a %s is not a workload explain takes: pod/NAME, deployment, replicaset, statefulset, daemonset, job or replicationcontroller", reflect.TypeOf(obj).Elem().Name())
	}
	sel, err := metav1.LabelSelectorAsSelector(ls)
	if err != nil {
		return nil, fmt.Errorf("its pod selector: %w", err)
	}
	if sel.Empty() {
		return nil, errors.New("its pod selector is empty: it would select every pod")
	}
	return sel, nil
}

// explainPods returns the latest recorded attempt of each pod of selector
// in ns; not found if it selects no pod.
func (e *explainOptions) explainPods(ctx context.Context, ns, workload, selector string) (*podSet, error) {
	pods, err := e.selectPods(ctx, ns, selector)
	if err != nil {
		return nil, err
	}
	if len(pods) == 0 {
		return nil, &ExitError{Code: ExitNotFound, Err: fmt.Errorf("no pods%s in namespace %s: none matches selector %q", ofWorkload(workload), ns, selector)}
	}
	slices.SortFunc(pods, func(a, b corev1.Pod) int { return strings.Compare(a.Name, b.Name) })
	c, err := e.newClient()
	if err != nil {
		return nil, err
	}
	attempts, err := e.podAttempts(ctx, c, pods, 1)
	if err != nil {
		return nil, err
	}
	set := &podSet{Workload: workload, Namespace: ns, Selector: selector}
	for i, as := range attempts {
		if len(as) == 0 {
			set.Unrecorded = append(set.Unrecorded, pods[i])
			continue
		}
		set.Latest = append(set.Latest, as[0])
	}
	return set, nil
}

// runPods explains the pods of a workload or of -l: their latest
// attempts, grouped.
func (e *explainOptions) runPods(ctx context.Context, ns string) error {
	workload, selector := "", e.Selector
	if e.workload != "" {
		name, sel, err := e.workloadSelector(ns, e.workload)
		if err != nil {
			return err
		}
		workload, selector = name, sel.String()
	}
	set, err := e.explainPods(ctx, ns, workload, selector)
	if err != nil {
		return err
	}
	if err := e.sortItems(set.Latest); err != nil {
		return err
	}
	list := &v1alpha1.AttemptList{Items: set.Latest}
	if list.Items == nil {
		list.Items = []v1alpha1.AttemptSummary{}
	}
	if !e.tableOutput() && len(set.Unrecorded) > 0 {
		fmt.Fprintf(e.ErrOut, "warning: no attempt recorded for %s\n", podNames(set.Unrecorded))
	}
	if err := e.print(list, func(w io.Writer) { PrintPodSet(w, set, e.Output == OutputWide) }); err != nil {
		return err
	}
	switch {
	case slices.ContainsFunc(set.Latest, func(a v1alpha1.AttemptSummary) bool { return a.Result != v1alpha1.ResultScheduled }):
		return &ExitError{Code: ExitPending}
	case len(set.Latest) == 0:
		return &ExitError{Code: ExitNotFound}
	}
	return nil
}

// ofWorkload is " of WORKLOAD", or empty for no workload.
func ofWorkload(workload string) string {
	if workload == "" {
		return ""
	}
	return " of " + workload
}

// podNames lists pods by name.
func podNames(pods []corev1.Pod) string {
	names := make([]string, len(pods))
	for i, p := range pods {
		names[i] = p.Name
	}
	return strings.Join(names, ", ")
}

// podGroup is pods whose latest attempts had one outcome.
type podGroup struct {
	result, rejected, message string
	pods, nodes               []string
}

// groupPods groups the latest attempts by result, rejecting plugins and
// message (the scheduled ones together, with their nodes), then the pods
// without a recorded attempt by their spec.schedulerName: pending groups
// first, most pods first.
func groupPods(set *podSet) []*podGroup {
	var groups []*podGroup
	find := func(g podGroup) *podGroup {
		i := slices.IndexFunc(groups, func(h *podGroup) bool {
			return h.result == g.result && h.rejected == g.rejected && h.message == g.message
		})
		if i < 0 {
			groups = append(groups, &g)
			return &g
		}
		return groups[i]
	}
	for _, a := range set.Latest {
		g := podGroup{result: string(a.Result), rejected: "-", message: "-"}
		if a.Result != v1alpha1.ResultScheduled {
			g.rejected, g.message = rejectedBy(a.Reasons), a.Message
		}
		grp := find(g)
		grp.pods = append(grp.pods, a.Pod.Name)
		if a.SelectedNode != "" && !slices.Contains(grp.nodes, a.SelectedNode) {
			grp.nodes = append(grp.nodes, a.SelectedNode)
		}
	}
	for _, p := range set.Unrecorded {
		grp := find(podGroup{result: "not recorded", rejected: "-", message: fmt.Sprintf("no attempt recorded; spec.schedulerName is %q", p.Spec.SchedulerName)})
		grp.pods = append(grp.pods, p.Name)
	}
	rank := func(g *podGroup) int {
		switch g.result {
		case string(v1alpha1.ResultScheduled):
			return 1
		case "not recorded":
			return 2
		}
		return 0
	}
	slices.SortStableFunc(groups, func(a, b *podGroup) int {
		return cmp.Or(cmp.Compare(rank(a), rank(b)), cmp.Compare(len(b.pods), len(a.pods)))
	})
	return groups
}

// rejectedBy lists an attempt's rejecting plugins as the tables do:
// Plugin(nodes),...; "-" for none.
func rejectedBy(reasons []v1alpha1.RejectionSummary) string {
	var parts []string
	for _, r := range reasons {
		parts = append(parts, fmt.Sprintf("%s(%d)", r.Plugin, r.Nodes))
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, ",")
}

// PrintPodSet prints the pods of a workload or a selector: a header, then
// a row for each group of pods whose latest attempts had one outcome; wide
// adds the pods' names.
func PrintPodSet(w io.Writer, set *podSet, wide bool) {
	n := len(set.Latest) + len(set.Unrecorded)
	noun := "pods"
	if n == 1 {
		noun = "pod"
	}
	fmt.Fprintf(w, "Pods:     %d %s%s in %s (selector %s)\n\n", n, noun, ofWorkload(set.Workload), set.Namespace, set.Selector)
	header := []string{"PODS", "RESULT", "NODES", "REJECTED BY", "MESSAGE"}
	if wide {
		header = append(header, "NAMES")
	}
	t := newTable(header...)
	for _, g := range groupPods(set) {
		nodes := strings.Join(g.nodes, ",")
		if nodes == "" {
			nodes = "-"
		}
		row := []string{strconv.Itoa(len(g.pods)), g.result, nodes, g.rejected, g.message}
		if wide {
			row = append(row, strings.Join(g.pods, ","))
		}
		t.addRow(row...)
	}
	t.print(w, true)
}
