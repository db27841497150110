// Package podcheck checks what the sidecar's store says about a pod against
// the pod as the cluster has it now, from a client-go pod informer.
package podcheck

import (
	coreinformers "k8s.io/client-go/informers/core/v1"

	"github.com/schedscope/schedscope/pkg/apis/schedscope/v1alpha1"
)

// StillPending returns a check that a pod the store lists as pending still
// waits in the cluster: it exists with the same UID and has no node. Until
// the pod informer has synced every pod counts as still pending.
func StillPending(pods coreinformers.PodInformer) func(v1alpha1.PodStatus) bool {
	informer, lister := pods.Informer(), pods.Lister()
	return func(p v1alpha1.PodStatus) bool {
		if !informer.HasSynced() {
			return true
		}
		pod, err := lister.Pods(p.Pod.Namespace).Get(p.Pod.Name)
		if err != nil {
			return false
		}
		if p.Pod.UID != "" && string(pod.UID) != p.Pod.UID {
			return false
		}
		return pod.Spec.NodeName == ""
	}
}
