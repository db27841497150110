package podcheck

import coreinformers "k8s.io/client-go/informers/core/v1"

// SchedulerName returns a lookup of a pod's spec.schedulerName; ok is
// false when the pod does not exist, or the pod informer has not synced.
func SchedulerName(pods coreinformers.PodInformer) func(namespace, name string) (schedulerName string, ok bool) {
	informer, lister := pods.Informer(), pods.Lister()
	return func(namespace, name string) (string, bool) {
		if !informer.HasSynced() {
			return "", false
		}
		pod, err := lister.Pods(namespace).Get(name)
		if err != nil {
			return "", false
		}
		return pod.Spec.SchedulerName, true
	}
}
