//go:build kube1.35

package observe

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
)

// leftAlonePluginLists are the framework's plugin lists observePlugins
// knowingly leaves as they are; v1.35 has no pod group or placement points.
var leftAlonePluginLists = []string{
	"preEnqueuePlugins", "queueSortPlugins", "batchablePlugins", "enqueueExtensions", "extenders",
}

func (p queueSortPart) Less(x, y fwk.QueuedPodInfo) bool {
	return (corev1helpers.PodPriority(x.GetPodInfo().GetPod()) > corev1helpers.PodPriority(y.GetPodInfo().GetPod())) != p.b.varied
}

func (p preBindPart) PreBindPreFlight(_ context.Context, _ fwk.CycleState, pod *v1.Pod, node string) *fwk.Status {
	p.b.called("PreBindPreFlight %s %s", pod.Name, node)
	return p.b.status("PreBindPreFlight", fwk.Skip)
}

// signPod asks f for pod's signature, the way the scheduling queue does.
func signPod(ctx context.Context, f fwk.Handle, pod *v1.Pod) fwk.PodSignature {
	return f.SignPod(ctx, pod, false)
}

// runPermit runs f's Permit plugins and says what they answered.
func runPermit(ctx context.Context, f framework.Framework, state fwk.CycleState, pod *v1.Pod, node string) string {
	return fmt.Sprint(f.RunPermitPlugins(ctx, state, pod, node))
}

func (p probe) PreBindPreFlight(context.Context, fwk.CycleState, *v1.Pod, string) *fwk.Status {
	p.calls.sample()
	return nil
}
