//go:build kube1.35 || kube1.36

package plugins

import (
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/queuesort"
)

// Less orders queued pods, the only entities before Kubernetes v1.37.
func (*QOSSort) Less(a, b fwk.QueuedPodInfo) bool {
	pa, pb := a.GetPodInfo().GetPod(), b.GetPodInfo().GetPod()
	if p1, p2 := corev1helpers.PodPriority(pa), corev1helpers.PodPriority(pb); p1 != p2 {
		return p1 > p2
	}
	if qa, qb := qosRank(pa), qosRank(pb); qa != qb {
		return qa < qb
	}
	return (&queuesort.PrioritySort{}).Less(a, b)
}
