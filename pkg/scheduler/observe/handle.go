package observe

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
)

// preemptedReason is the event reason the scheduler gives each preemption victim.
const preemptedReason = "Preempted"

// victimRecorder is the event recorder of an observed framework, which its
// plugins reach through their handle. It records every event as the
// framework's own recorder does, and also tells the Recorder which pods
// preemption evicted: the scheduler evicts victims asynchronously and
// reports each one with a Preempted event naming the preemptor.
type victimRecorder struct {
	eventRecorder
	recorder *Recorder
}

func (v victimRecorder) Eventf(regarding, related runtime.Object, eventtype, reason, action, note string, args ...interface{}) {
	v.eventRecorder.Eventf(regarding, related, eventtype, reason, action, note, args...)
	if reason != preemptedReason {
		return
	}
	// The preemptor is a pod or a pod group; only pods have records.
	victim, ok := regarding.(*v1.Pod)
	preemptor, err := meta.Accessor(related)
	if ok && err == nil {
		v.recorder.noteVictim(preemptor.GetUID(), victim)
	}
}
