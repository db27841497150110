//go:build kube1.35

package observe

import (
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	fwk "k8s.io/kube-scheduler/framework"
)

// leftAlonePluginLists are the framework's plugin lists observePlugins
// knowingly leaves as they are; v1.35 has no pod group or placement points.
var leftAlonePluginLists = []string{
	"preEnqueuePlugins", "queueSortPlugins", "batchablePlugins", "enqueueExtensions", "extenders",
}

func (p queueSortPart) Less(x, y fwk.QueuedPodInfo) bool {
	return (corev1helpers.PodPriority(x.GetPodInfo().GetPod()) > corev1helpers.PodPriority(y.GetPodInfo().GetPod())) != p.b.varied
}
