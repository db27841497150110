//go:build !kube1.35 && !kube1.36

package plugins

import (
	v1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/queuesort"
)

// Less orders queued entities, pods and, from Kubernetes v1.37 on, pod
// groups.
func (*QOSSort) Less(a, b fwk.QueuedEntityInfo) bool {
	if a.GetPriority() != b.GetPriority() {
		return a.GetPriority() > b.GetPriority()
	}
	// Pod entities carry their pod; pod groups are ordered by priority
	// and arrival only.
	pa, aok := a.(interface{ GetPod() *v1.Pod })
	pb, bok := b.(interface{ GetPod() *v1.Pod })
	if aok && bok {
		if qa, qb := qosRank(pa.GetPod()), qosRank(pb.GetPod()); qa != qb {
			return qa < qb
		}
	}
	return (&queuesort.PrioritySort{}).Less(a, b)
}
